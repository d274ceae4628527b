"""What every panel builder shares: a failure kept as a note, records of a table, text or None."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pandas as pd

from kernelscope.jsonable import jsonable

T = TypeVar("T")


def safe(fn: Callable[[], T], default: T, problems: list | None = None, what: str | None = None) -> T:
    """``fn()``, or ``default`` when it raises, the failure added to ``problems`` as a note.

    A view renders what is present: an analysis that fails leaves its panel empty and says so
    in the report's notes, instead of hiding the rest of the report.

    >>> notes = []
    >>> safe(lambda: 1 / 0, None, notes, "roofline"), notes
    (None, ['roofline unavailable: ZeroDivisionError: division by zero'])
    """
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - any analysis may fail on odd data; the panel says so
        if problems is not None and what:
            problems.append(f"{what} unavailable: {type(e).__name__}: {e}")
        return default


def records(df: pd.DataFrame | None) -> list:
    """The rows of ``df`` as JSON-ready dicts (column names as text).

    >>> records(pd.DataFrame({"a": [1], "b": [float("nan")]}))
    [{'a': 1, 'b': None}]
    """
    if df is None or not len(df):
        return []
    return [{str(c): jsonable(v) for c, v in r.items()} for r in df.to_dict("records")]


def text(v) -> str | None:
    """``v`` as text, None kept.

    >>> text(3), text(None)
    ('3', None)
    """
    return None if v is None else str(v)
