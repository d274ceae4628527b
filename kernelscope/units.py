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


def fmt_pct(x, digits: int | None = 1, *, scale: float = 1.0) -> str:
    """A share as a percent, the one way every output writes one: ``digits`` decimals (None:
    one below 10%, where it matters, else none); ``scale=100`` for a value already in percent.
    Missing, infinite or not a number: "-".

    >>> fmt_pct(0.1234), fmt_pct(0.05, None), fmt_pct(0.5, None), fmt_pct(87.4, 0, scale=100), fmt_pct(None)
    ('12.3%', '5.0%', '50%', '87%', '-')
    """
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "-"      # None, pd.NA: not measured
    if x != x or abs(x) == float("inf"):
        return "-"
    if digits is None:
        digits = 1 if x < 0.1 * scale else 0
    # A percent already: printed as it is (dividing by 100 and back would move halves' rounding).
    return f"{x:.{digits}%}" if scale == 1.0 else f"{x * (100.0 / scale):.{digits}f}%"


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
