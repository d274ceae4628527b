"""Work per distinct value, not per row: a million launches hold a few hundred kernel names.

The reader holds each distinct text once (``trace.builder.interned``), so equal names are
mostly the same object: :func:`factorize` codes rows by the objects' identity first (integers,
cheap to hash, read straight from the array: :func:`identities`) and only then compares the few
distinct objects by value, which gives exactly ``pd.factorize``'s codes at a fraction of its cost.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np
import pandas as pd


def identities(arr: np.ndarray) -> np.ndarray:
    """``id()`` of each object of a 1-d object array, as int64: on CPython an object's id is its
    address, which is what the array holds, so the pointers are copied out at once (a million
    rows in ~1 ms, against ~50 ms calling ``id`` on each); elsewhere one ``id`` call per row.

    >>> a = "kernel"
    >>> identities(np.array([a, None, a], dtype=object)).tolist() == [id(a), id(None), id(a)]
    True
    """
    if sys.implementation.name != "cpython" or arr.dtype != object or arr.ndim != 1 \
            or arr.itemsize != ctypes.sizeof(ctypes.c_void_p) or not len(arr):
        return np.fromiter(map(id, arr), np.int64, len(arr))
    arr = np.ascontiguousarray(arr)
    pointers = (ctypes.c_int64 * len(arr)).from_address(arr.__array_interface__["data"][0])
    return np.ctypeslib.as_array(pointers).copy()     # copied while ``arr`` holds the objects


def factorize(values, use_na_sentinel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, use_na_sentinel=...)`` (codes in order of first appearance, missing
    values -1 or one code of their own), computed by identity first; the uniques of object
    values come as an object array (not an Index).

    >>> a = "k" * 40
    >>> codes, uniq = factorize(np.array([a, None, "x", a, "k" * 40] * 300, dtype=object))
    >>> codes[:5].tolist(), uniq.tolist()
    ([0, -1, 1, 0, 0], ['kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk', 'x'])
    """
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) and values.dtype == object else values
    if not isinstance(arr, np.ndarray) or arr.dtype != object or len(arr) < 1024:
        return pd.factorize(arr, use_na_sentinel=use_na_sentinel)
    if type(arr[0]) is int:
        got = _as_integers(arr)
        if got is not None:
            return got
    id_codes, first = _by_identity(arr)
    if 2 * len(first) > len(arr):      # mostly an object per row (text made per row): by value
        return pd.factorize(arr, use_na_sentinel=use_na_sentinel)
    codes, uniq = pd.factorize(arr[first], use_na_sentinel=use_na_sentinel)
    return codes[id_codes], uniq


def _as_integers(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``pd.factorize`` of an object array of integers only (thread and process ids: the reader
    makes one object per row, so identity does not help), factorized as int64 (~4x faster);
    None when it holds anything else. Equal integers are equal values, so the codes are the
    same, and the uniques are the rows' own objects.

    >>> codes, uniq = _as_integers(np.array([7, 3, 7, 2**40], dtype=object))
    >>> codes.tolist(), uniq.tolist()
    ([0, 1, 0, 2], [7, 3, 1099511627776])
    >>> _as_integers(np.array([7, "7"], dtype=object)) is None
    True
    """
    if pd.api.types.infer_dtype(arr, skipna=False) != "integer":
        return None
    try:
        codes = pd.factorize(arr.astype(np.int64))[0]
    except OverflowError:
        return None
    top = np.maximum.accumulate(codes)
    return codes, arr[np.flatnonzero(np.r_[True, top[1:] > top[:-1]])]


def _by_identity(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row's object, in order of first appearance; the first row of each object)."""
    id_codes = pd.factorize(identities(arr))[0]
    # Codes count up in order of first appearance, so a row holds the first of its code where
    # the running maximum rises.
    top = np.maximum.accumulate(id_codes)
    return id_codes, np.flatnonzero(np.r_[True, top[1:] > top[:-1]])


def first_rows(values) -> np.ndarray:
    """Positions of the rows that hold a value first (the rows ``drop_duplicates`` keeps: those
    ``Series.duplicated()`` leaves unmarked), looked for by identity first: a row holding the
    same object as an earlier row repeats its value, so only each object's first row is compared.

    >>> first_rows(pd.Series(["b", "a", "b", None, "a", None])).tolist()
    [0, 1, 3]
    """
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) and values.dtype == object else values
    if not isinstance(arr, np.ndarray) or arr.dtype != object or len(arr) < 1024:
        return np.flatnonzero(~pd.Series(values).duplicated().to_numpy())
    first = _by_identity(arr)[1]
    return first[~pd.Series(arr[first], dtype=object).duplicated().to_numpy()]


def texts_in_order(values) -> np.ndarray:
    """The distinct texts of the rows (``str(value)``), in order of first appearance, each made
    once per distinct object (``pd.unique`` of every row's text otherwise).

    >>> texts_in_order(pd.Series([7, "7", None, "b", 7], dtype=object)).tolist()
    ['7', 'None', 'b']
    """
    arr = values.to_numpy(object) if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    if len(arr) >= 1024:
        arr = arr[_by_identity(arr)[1]]
    return pd.unique(pd.Series([str(v) for v in arr.tolist()], dtype=object))


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
    if len(arr) and type(arr[0]) is int:
        # Integers (most traces' thread ids, one object per row): factorized as int64, much
        # faster than as objects (two integers have the same text exactly when they are equal).
        got = _as_integers(arr)
        if got is not None:
            return got[0]
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
    if len(codes) and codes.dtype.kind in "iu" and codes.min() >= -(1 << 15) and codes.max() < (1 << 15):
        return np.argsort(codes.astype(np.int16), kind="stable")
    return np.argsort(codes, kind="stable")
