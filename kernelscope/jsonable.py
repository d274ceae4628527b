"""One JSON sanitizer for every output: saved reports, the view's payload, findings, diffs.

A base module like :mod:`kernelscope.errors`: every layer may import it. What comes out
always goes through ``json.dumps(..., allow_nan=False)`` and ``msgspec.json.encode``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd


def jsonable(v):
    """``v`` as plain JSON data: None, bool, int, finite float, str, list, dict (str keys).

    Missing values (None, NaN, infinities, ``pd.NA``, ``NaT``) become None; numpy scalars
    become Python ones; tuples, arrays and Series become lists; anything else becomes its text.

    >>> jsonable({"a": np.int64(3), 2: (np.float32(0.5), float("inf"), pd.NA, np.True_)})
    {'a': 3, '2': [0.5, None, None, True]}
    """
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray, pd.Series)):
        return [jsonable(x) for x in v]
    if v is pd.NA or v is pd.NaT:
        return None
    return str(v)


def num(v) -> float | None:
    """``v`` as a finite float, or None: the one reading of a number from a table or a file.

    Missing values, infinities, text that is not a number and anything else that does not convert
    all give None; nothing raises.

    >>> num(3), num("2.5"), num(np.float32(0.5)), num(float("inf")), num(pd.NA), num("x"), num([1])
    (3.0, 2.5, 0.5, None, None, None, None)
    """
    if v is None or isinstance(v, (bool, np.bool_)):
        return None if v is None else float(v)
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def whole(v) -> int | None:
    """``v`` as an int (a finite number, its fraction dropped), or None.

    >>> whole(3.0), whole("7"), whole(2.5), whole(float("inf")), whole(pd.NA), whole(2**70)
    (3, 7, 2, None, None, 1180591620717411303424)
    """
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    f = num(v)
    return None if f is None else int(f)
