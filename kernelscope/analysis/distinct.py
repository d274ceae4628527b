"""Work per distinct value, not per row: a million launches hold a few hundred kernel names.

The reader holds each distinct text once (``trace.builder.interned``), so equal names are
mostly the same object: :func:`factorize` codes rows by the objects' identity first (integers,
cheap to hash) and only then compares the few distinct objects by value, which gives exactly
``pd.factorize``'s codes at a fraction of its cost on long strings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# Mean length (characters) above which identity is the cheaper first step (measured: 198k rows
# of 2 kernel names of ~150 characters, 56 ms by value, 10 ms by identity; of ~15-character op
# names, 4 ms by value).
LONG_TEXT = 48


def factorize(values, use_na_sentinel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, use_na_sentinel=...)`` (codes in order of first appearance, missing
    values -1 or one code of their own), computed by identity first for long text; the uniques
    of object values come as an object array (not an Index).

    >>> a = "k" * 40
    >>> codes, uniq = factorize(np.array([a, None, "x", a, "k" * 40], dtype=object))
    >>> codes.tolist(), uniq.tolist()
    ([0, -1, 1, 0, 0], ['kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk', 'x'])
    """
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) and values.dtype == object else values
    if not isinstance(arr, np.ndarray) or arr.dtype != object or len(arr) < 1024 or not _long_text(arr):
        return pd.factorize(arr, use_na_sentinel=use_na_sentinel)
    id_codes = pd.factorize(np.fromiter(map(id, arr), np.int64, len(arr)))[0]
    # The first row of each object: codes count up in order of first appearance, so a row holds
    # the first of its code where the running maximum rises.
    top = np.maximum.accumulate(id_codes)
    first = np.flatnonzero(np.r_[True, top[1:] > top[:-1]])
    codes, uniq = pd.factorize(arr[first], use_na_sentinel=use_na_sentinel)
    return codes[id_codes], uniq


def _long_text(arr: np.ndarray) -> bool:
    """Do the values look like long strings? pandas hashes a string's bytes on every row (its
    cost grows with the text), while identity costs the same whatever the text: kernel names are
    hundreds of bytes, op and API names a few dozen."""
    sample = arr[:: max(1, len(arr) // 32)]
    return sum(len(v) if isinstance(v, str) else 0 for v in sample) > LONG_TEXT * len(sample)


def by_distinct(values, fn, dtype=object, missing=None) -> np.ndarray:
    """``fn(value)`` of each row, called once per distinct value; ``missing`` where the value is
    missing (None or NaN).

    >>> by_distinct(pd.Series(["cudaMalloc", None, "cudaMalloc"]), lambda n: n.startswith("cuda"), bool, False).tolist()
    [True, False, True]
    """
    codes, uniq = factorize(values, use_na_sentinel=True)
    out = np.empty(len(uniq) + 1, dtype=dtype)
    out[:-1] = [fn(u) for u in uniq]
    out[-1] = missing
    return out[codes]          # code -1 (missing) takes the value at the end
