"""Durations and byte sizes in words, the same way in every message, table and view.

A base module like :mod:`kernelscope.errors`: every layer may import it (the reader's error
messages, the findings' text and the renderers all format with these). The browser's
``js/src/view/format.js`` formats the raw columns of the view the same way (``fmtUs``,
``fmtBytes``); ``tests/test_vocabulary.py`` checks that the two agree.
"""
from __future__ import annotations

# Binary units (1 KiB = 1024 B), as the JS view and the reader's size limits count.
BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def fmt_us(us) -> str:
    """A duration in microseconds, in the unit that reads best.

    >>> fmt_us(1.5), fmt_us(2500), fmt_us(3_200_000)
    ('1.5 us', '2.50 ms', '3.20 s')
    """
    if us is None or us != us:
        return "-"
    us = float(us)
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


def fmt_bytes(n) -> str:
    """A byte count in the binary unit that reads best.

    >>> fmt_bytes(512), fmt_bytes(67584), fmt_bytes(4_194_304), fmt_bytes(None)
    ('512 B', '66.0 KiB', '4.0 MiB', '-')
    """
    try:
        n = float(n)
    except (TypeError, ValueError):
        return "-"      # None, pd.NA: not recorded
    if n != n:
        return "-"
    for unit, k in BYTE_UNITS:
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n:.0f} B"
