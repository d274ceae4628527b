"""What the hardware measured while the run went: PM-sampled counters (the utilization strip
and their labels, from ``trace/counters.py: DERIVED``) and warp-stall shares per kernel."""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.counters import PER_KERNEL
from kernelscope.analysis.devices import device_label, device_types
from kernelscope.jsonable import num
from kernelscope.panels.base import text as _str

__all__ = ["PER_KERNEL", "counter_panel", "counter_samples", "stalls_panel"]

# Stall rows listed in the view (by samples); the rest stay in rep.stalls.
TOP_STALL_ROWS = 200


def counter_samples(rep):
    """(samples table, column spec) for the utilization strip, or None without samples.

    >>> table, spec = counter_samples(live)
    >>> len(table), [c for c, _ in spec][:4]
    (1221, ['device', 'start_us', 'duration_us', 'sm_active_pct'])
    """
    m = getattr(rep, "metrics", None)
    if m is None or not len(m):
        return None
    from kernelscope.trace.counters import DERIVED
    m = m.sort_values("start_us", kind="stable").reset_index(drop=True)
    types = device_types(rep.devices)
    m = m.assign(device=[device_label(i, types.get(i)) for i in m["device_index"].tolist()])
    cols = [d.column for d in DERIVED if d.column in m.columns and np.isfinite(m[d.column].to_numpy(float)).any()]
    spec = [("device", "str"), ("start_us", "f64"), ("duration_us", "f32")] + [(c, "f32") for c in cols]
    return m, spec


def counter_panel(rep, counters) -> dict | None:
    """What measured the counters of ``counters`` (a :func:`counter_samples` result, or the
    part of it a window holds), how often, their tracks (label, unit, meaning, colour), or None.

    >>> [t["label"] for t in counter_panel(live, counter_samples(live))["tracks"]]
    ['SM active', 'tensor pipe', 'DRAM throughput', 'DRAM bandwidth']
    """
    if counters is None:
        return None
    from kernelscope.trace.counters import DERIVED
    meta = rep.meta.get("counters") if isinstance(rep.meta.get("counters"), dict) else {}
    have = {c for c, _ in counters[1]}
    tracks = [{"column": d.column, "label": d.label, "short": d.short, "unit": d.unit, "meaning": d.meaning,
               "color": d.color,
               # percentages share one 0-100 scale; bandwidth scales to its own maximum
               "max": 100.0 if d.unit == "%" else None}
              for d in DERIVED if d.column in have]
    iv = num(meta.get("interval_us"))
    src = _str(meta.get("source")) or "CUPTI PM sampling"
    return {"source": src, "interval_us": iv, "samples": int(len(counters[0])), "capped": bool(meta.get("capped")),
            "tracks": tracks,
            "note": (f"Measured by {src}" + (f" every {iv:.0f} us" if iv else "") + ", GPU-wide (all SMs, "
                     "all streams), no kernel replay. A kernel's values are the samples time-weighted over "
                     "its interval; sampling may lock GPU clocks.")}


def stalls_panel(rep) -> dict | None:
    """Warp-stall shares per kernel (the costliest :data:`TOP_STALL_ROWS`), the overall top
    stalls, and each reason's title, meaning and usual fix; None without stall samples.

    >>> stalls_panel(live)["overall"][0][0]
    'long_scoreboard'
    """
    s = getattr(rep, "stalls", None)
    if s is None or not len(s):
        return None
    from kernelscope.analysis.stalls import REASONS, explain, reason_columns, top_stalls
    reasons = reason_columns(s)
    rows: list[dict] = []
    for r in s.sort_values("samples", ascending=False).head(TOP_STALL_ROWS).to_dict("records"):
        shares = {c: num(r[c]) for c in reasons if num(r.get(c))}
        rows.append({"name": _str(r.get("name")), "source": _str(r.get("source")), "samples": num(r.get("samples")),
                     "top_stall": _str(r.get("top_stall")), "shares": shares})
    used = sorted({c for row in rows for c in row["shares"]}, key=lambda c: list(REASONS).index(c) if c in REASONS else 99)
    return {"sources": sorted({str(x) for x in s["source"].dropna()}), "rows": rows,
            "overall": [[a, num(b)] for a, b in top_stalls(s, 5)],
            "reasons": {c: {"title": explain(c).title, "meaning": explain(c).meaning, "fix": explain(c).fix}
                        for c in used}}
