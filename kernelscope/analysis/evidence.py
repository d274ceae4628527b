"""A finding's evidence in words: every figure with its unit, the way the views show it.

The rules name their figures by what they hold (``idle_us`` microseconds, ``busy_share`` a 0..1
share, ``dram_pct`` a percentage, ``host_link_gbps`` GB/s, ``bytes`` a byte count), so the key
says how a value reads; this is the one place that turns them into text, and the browser shows
the text as it is (the raw numbers travel beside it).
"""
from __future__ import annotations

import math

from kernelscope.units import fmt_bytes, fmt_us

# Items of a list shown in words before "and N more" (a finding's tables hold every row).
MAX_ITEMS = 8
# A unit suffix of a key and the word it leaves out of the label.
_UNIT_SUFFIXES = ("_us", "_pct", "_gbps", "_tflops", "_bytes")


def fmt_value(key: str, v) -> str:
    """One evidence value as text, in the unit its key names.

    >>> fmt_value("busy_share", 0.3115672412528524), fmt_value("idle_host_us", 19123.4)
    ('31.2%', '19.12 ms')
    >>> fmt_value("host_link_gbps", 64.0), fmt_value("bytes", 4194304), fmt_value("launches", 2000)
    ('64.0 GB/s', '4.0 MiB', '2,000')
    """
    k = str(key).lower()
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (dict, list, tuple)) and not v:
        return "none"
    if isinstance(v, dict):
        return ", ".join(f"{a}: {fmt_value(a, b)}" for a, b in list(v.items())[:MAX_ITEMS]) + _more(v)
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, dict) for x in v):
            return "; ".join(_item(x) for x in v[:MAX_ITEMS]) + _more(v)
        if v and all(isinstance(x, (list, tuple)) for x in v):
            return " x ".join("[" + ", ".join(str(y) for y in x) + "]" for x in v)
        return ", ".join(fmt_value(k, x) for x in v[:MAX_ITEMS]) + _more(v)
    if isinstance(v, str):
        return v
    if not isinstance(v, (int, float)):
        return str(v)
    if k.endswith("_us"):
        return fmt_us(v)
    if k == "bytes" or k.endswith("_bytes"):
        return fmt_bytes(v)
    if k.endswith("share") or k.startswith("share_") or k.endswith("_efficiency"):
        return f"{v:.1%}"
    if k.endswith("_pct"):
        return f"{v:.1f}%"
    if k.endswith("gbps"):
        return f"{v:.1f} GB/s"
    if k.endswith("tflops"):
        return f"{v:.1f} TFLOP/s"
    if k.endswith("per_ms"):
        return f"{v:.1f} per ms"
    if isinstance(v, int) or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


def label(key: str) -> str:
    """An evidence key as a label: words, without the unit the value then carries.

    >>> label("idle_host_us"), label("busy_share"), label("bytes")
    ('idle host', 'busy share', 'bytes')
    """
    k = str(key)
    for suffix in _UNIT_SUFFIXES:
        if k.endswith(suffix) and len(k) > len(suffix):
            k = k[: -len(suffix)]
            break
    return k.replace("_", " ")


def evidence_rows(evidence) -> list:
    """A finding's evidence as ``[label, text]`` rows, in its own order.

    >>> evidence_rows({"busy_share": 0.31, "longest_waits_before": [{"op": "aten::mm", "idle_us": 1500.0, "gaps": 3}]})
    [['busy share', '31.0%'], ['longest waits before', 'aten::mm (idle 1.50 ms, gaps 3)']]
    """
    if not isinstance(evidence, dict):
        return []
    return [[label(k), fmt_value(k, v)] for k, v in evidence.items()]


def _item(d: dict) -> str:
    """One row of a list of records: its names first, its figures in brackets."""
    names = [str(v) for v in d.values() if isinstance(v, str)]
    rest = [f"{label(k)} {fmt_value(k, v)}" for k, v in d.items() if not isinstance(v, str)]
    head = " ".join(names)
    return f"{head} ({', '.join(rest)})" if head and rest else head or ", ".join(rest)


def _more(v) -> str:
    n = len(v) - MAX_ITEMS
    return f" … and {n} more" if n > 0 else ""
