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


def text_codes(values, use_na_sentinel: bool = True) -> np.ndarray:
    """One integer per row, values told apart by their text (``str(value)``), so that 7 and "7"
    are one value (a thread id, a name); the text is made once per distinct value, not per row.
    A missing value is -1 with ``use_na_sentinel``, else one code of its own.

    >>> text_codes(pd.Series([7, "7", None, 8, 7], dtype=object)).tolist()
    [0, 0, -1, 1, 0]
    >>> text_codes(pd.Series([None, 7, "7"], dtype=object), use_na_sentinel=False).tolist()
    [0, 1, 1]
    """
    arr = values.to_numpy(object) if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    if len(arr) and type(arr[0]) is int and set(map(type, arr.tolist())) == {int}:
        # Plain integers (most traces' thread ids): factorized as int64, much faster than as
        # objects (two integers have the same text exactly when they are equal).
        try:
            return pd.factorize(arr.astype(np.int64))[0]
        except OverflowError:
            pass
    codes, uniq = factorize(arr, use_na_sentinel=False)
    if not len(uniq):
        return np.zeros(0, np.int64)
    text = [None if u is None or (isinstance(u, float) and u != u) else str(u) for u in uniq]
    return pd.factorize(pd.Series(text, dtype=object), use_na_sentinel=use_na_sentinel)[0][codes]


def stable_order(codes: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of integer codes, sorted as int16 where they fit:
    numpy sorts 16-bit integers by radix (a few ms a million rows), int64 by timsort (~5x that).

    >>> stable_order(np.array([2, -1, 2, 0])).tolist()
    [1, 3, 0, 2]
    """
    if len(codes) and codes.dtype.kind in "iu" and -(1 << 15) <= codes.min() and codes.max() < (1 << 15):
        return np.argsort(codes.astype(np.int16), kind="stable")
    return np.argsort(codes, kind="stable")
