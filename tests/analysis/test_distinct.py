"""The per-distinct-value helpers (kernelscope.analysis.distinct) give exactly what pandas gives
row by row, on the object columns of real recordings (long kernel names held once, thread ids
one object per row, shapes as lists) and on mixtures made to trip them (missing values of each
kind, equal values held by distinct objects, integers that equal floats and booleans, arrays
that do not start at their buffer's beginning)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.distinct import factorize, first_rows, identities, text_codes, texts_in_order
from kernelscope.trace.model import float_values
from tests.conftest import DATA

TRACES = ["launch_bound.pt.trace.json.gz", "mlp_train.pt.trace.json.gz", "ranks/rank0.pt.trace.json.gz",
          "wild/llama_train.pt.trace.json.gz"]


def _real_columns():
    for name in TRACES:
        rep = ks.load(DATA / name, progress=False)
        for table in ("kernels", "ops", "runtime", "copies"):
            df = getattr(rep, table)
            for c in df.columns:
                if df[c].dtype == object and len(df) >= 1024:
                    yield f"{name}:{table}.{c}", df[c]


def _mixtures():
    rng = np.random.default_rng(3)
    long = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>" * 2
    pool = [long, "".join(long), "aten::mm", None, np.nan, pd.NA, 7, 7.0, True, 1, "7", np.int64(7), 2**70, "",
            "x" * 60, float("nan")]
    for n in (1023, 1024, 5000):
        picks = rng.integers(0, len(pool), n)
        arr = np.empty(n, dtype=object)
        arr[:] = [pool[i] for i in picks]
        yield f"mix{n}", arr
        yield f"mix{n}-strided", arr[::2]
        fresh = np.empty(n, dtype=object)     # equal text, one object per row
        fresh[:] = ["".join(["k", str(i % 5)]) for i in range(n)]
        yield f"fresh{n}", fresh
        ints = np.empty(n, dtype=object)
        ints[:] = [int(i % 9) + 10**6 for i in range(n)]     # integers past the interned ones
        yield f"ints{n}", ints
        # Integers with one other value among them: factorized as int64 only when all are
        # integers (numpy's too) that fit; else as objects.
        for other in ("7", 2**70, None, np.int64(3), True, 7.0, np.nan):
            mixed = ints.copy()
            mixed[n // 2] = other
            yield f"ints{n}+{other!r}", mixed


CASES = list(_mixtures())


def test_identities_are_the_ids():
    for _, arr in CASES:
        assert identities(arr).tolist() == [id(v) for v in arr]
    assert identities(np.empty(0, dtype=object)).tolist() == []


@pytest.mark.parametrize("sentinel", [True, False])
def test_factorize_is_pandas(sentinel):
    for label, col in list(_real_columns()) + CASES:
        values = col.to_numpy() if isinstance(col, pd.Series) else col
        try:
            want = pd.factorize(values, use_na_sentinel=sentinel)
        except TypeError:    # unhashable cells (shape lists): pandas refuses, and so does factorize
            with pytest.raises(TypeError):
                factorize(col, use_na_sentinel=sentinel)
            continue
        codes, uniq = factorize(col, use_na_sentinel=sentinel)
        assert codes.tolist() == want[0].tolist(), label
        assert [repr(u) for u in uniq] == [repr(u) for u in want[1]], label


def test_first_rows_are_the_rows_drop_duplicates_keeps():
    for label, col in list(_real_columns()) + CASES:
        s = pd.Series(col, dtype=object) if not isinstance(col, pd.Series) else col
        try:
            want = np.flatnonzero(~s.duplicated().to_numpy())
        except TypeError:
            continue
        assert first_rows(col).tolist() == want.tolist(), label
        if isinstance(col, pd.Series):
            df = pd.DataFrame({"name": col, "i": np.arange(len(col))})
            assert df.iloc[first_rows(df["name"])].equals(df.drop_duplicates("name")), label


def test_texts_in_order_are_each_rows_text_made_unique():
    for label, col in list(_real_columns()) + CASES:
        values = col.tolist() if isinstance(col, pd.Series) else list(col)
        want = pd.unique(pd.Series([str(v) for v in values], dtype=object)).tolist()
        assert texts_in_order(col).tolist() == want, label


def _same_value_other_text(values) -> bool:
    """Two values equal as values but not as text (7 and 7.0, True and 1): text_codes takes
    such values as one (it compares values first), which the text alone would not say."""
    return any(isinstance(v, (float, bool, np.bool_)) and v == v for v in values)


def test_text_codes_tell_values_apart_by_their_text():
    for label, col in list(_real_columns()) + CASES:
        values = col.tolist() if isinstance(col, pd.Series) else list(col)
        if any(isinstance(v, list) for v in values) or _same_value_other_text(values):
            continue      # shapes (their lists do not hash); numbers that equal other numbers
        text = [None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else str(v) for v in values]
        want = pd.factorize(pd.Series(text, dtype=object))[0]
        assert text_codes(col).tolist() == want.tolist(), label
    # Integers as int64 when they all are integers (numpy ones too); past int64 by their text.
    for values in ([1, np.int64(1), 2] * 400, [2**70, 1] * 600, [5, "5", 6] * 400, [2**63, -1] * 600):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        want = pd.factorize(pd.Series([str(v) for v in values], dtype=object))[0]
        assert text_codes(arr).tolist() == want.tolist(), values[:3]


def test_float_values_are_to_numeric():
    cases = [pd.Series([1.5, np.nan, -0.0]), pd.Series([1, None, 3], dtype="Int64"), pd.Series([1, 2], dtype="int64"),
             pd.Series([1, "2", None, "x", 2.5], dtype=object), pd.Series([True, False]),
             pd.Series([True, None], dtype="boolean"), pd.Series([2**63 + 5], dtype="uint64"),
             pd.Series([1.5, None], dtype="Float64"), pd.Series([np.inf, -np.inf]), pd.Series(["1.5", None], dtype="str"),
             pd.Series([], dtype=float), pd.Series([1, 2], dtype="int8"), pd.Series([1.0, 2.0], dtype="float32")]
    for c in cases:
        got, want = float_values(c), pd.to_numeric(c, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), c
        assert (np.signbit(got) == np.signbit(want)).all(), c
