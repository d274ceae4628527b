"""The reader's column conversions (trace/model.py, trace/builder.py) on the values it meets.

The reader's integer columns hold what msgspec validated as ``int | None``: each must come out as
the integer, or missing where it is None or does not fit in int64, whatever the order (the fast
path stops at the first None or oversized value and hands over to the exact ones).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from kernelscope.trace.builder import field_reader
from kernelscope.trace.decode import Event
from kernelscope.trace.model import int_column

_VALUES = [0, 1, -1, 486, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**70, None]


def _expected(values):
    fits = [v is not None and -(2**63) <= v < 2**63 for v in values]
    return [v if ok else 0 for v, ok in zip(values, fits)], [not ok for ok in fits]


def test_int_column_keeps_every_integer_and_marks_the_rest_missing():
    rng = random.Random(33)
    cases = [[], [None], [None] * 5, [7] * 5, [7, None], [None, 7], [2**53 + 1, None], [2**63, 1], [1, 2**70]]
    cases += [[rng.choice(_VALUES) for _ in range(rng.randint(1, 12))] for _ in range(3000)]
    for values in cases:
        data, missing = int_column(list(values))
        assert data.dtype == np.int64 and missing.dtype == bool
        assert (data.tolist(), missing.tolist()) == _expected(values), values


def test_int_column_of_a_hostile_column_drops_what_is_not_an_integer():
    # Values a foreign file could put in a header field: kept where they are integers.
    data, missing = int_column(["x", 3, float("nan"), 2**64])
    assert data.tolist() == [0, 3, 0, 0] and missing.tolist() == [True, False, True, True]


def test_field_reader_reads_one_field_and_takes_only_names():
    evs = [Event(name="a", pid=1), Event(name="b")]
    assert field_reader("name")(evs) == ["a", "b"]
    assert field_reader("pid")(evs) == [1, None]
    for bad in ("name)(", "x.y", "lambda", ""):
        with pytest.raises(ValueError):
            field_reader(bad)
