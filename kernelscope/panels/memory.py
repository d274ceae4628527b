"""The memory panel: the allocator's peak, what held it, growth per step and the curve the
timeline's memory lane draws (``rep.memory``, :mod:`kernelscope.analysis.memory`), every label
and figure in words, for the text, Markdown, the chart and the browser alike."""
from __future__ import annotations

from kernelscope.analysis.memory import BEFORE
from kernelscope.units import fmt_bytes, fmt_pct, fmt_us

# Holders of the peak listed (rep.memory.held has them all).
HELD_TOP = 8
# Where the numbers come from, said once beside them.
SOURCES = {
    "profile_memory": "torch's caching allocator, as torch.profiler recorded it (profile_memory=True): each "
                      "block allocated and freed, with the allocator's totals after it",
    "allocator history": "torch's caching allocator history (torch.cuda.memory._record_memory_history): each "
                         "block allocated and freed with its stack; sizes rounded up to the allocator's "
                         "512-byte blocks",
    "profile_memory + allocator history": "torch's caching allocator, as torch.profiler recorded it "
                                          "(profile_memory=True), each allocation's line from the allocator "
                                          "history's own stack (torch.cuda.memory._record_memory_history)",
}
# The timeline's memory lane (js/src/view/memory_lane.js): its words and colours.
LANE = {"label": "memory", "allocated": "allocated", "reserved": "reserved",
        "allocated_color": "#2f6fb0", "reserved_color": "#a9c8e8",
        "tooltip": "GPU memory the caching allocator held: allocated (in tensors) and reserved (from the driver)",
        "peak": "peak allocated"}


def memory_panel(m) -> dict | None:
    """The panel of a :class:`~kernelscope.analysis.memory.MemoryAnalysis` (None: no panel).

    >>> p = memory_panel(ks.load("training/lm_steps.pt.trace.json.gz").memory)
    >>> p["headline"]
    'peak 1022.2 MiB allocated on cuda:0 at 12.76 ms; 1.1 GiB reserved then (8.4% above allocated)'
    >>> p["held"][1]["text"]
    'aten::_log_softmax at record.py(47): step: 128.0 MiB in 1 block (12.5%)'
    """
    if m is None:
        return None
    fr = m.fragmentation
    headline = (f"peak {fmt_bytes(m.peak_bytes)} allocated on {m.device} at {fmt_us(m.peak_us)}; "
                f"{fmt_bytes(m.reserved_at_peak)} reserved then ({fmt_pct(fr['gap_share'])} above allocated)")
    held = []
    for r in m.held.head(HELD_TOP).to_dict("records"):
        where = f"{r['op']} at {r['source']}" if r["source"] else str(r["op"])
        if r["op"] == BEFORE:
            where += " (weights, optimizer state, tensors made earlier: no event says which op)"
        blocks = f" in {r['blocks']} block{'s' if r['blocks'] != 1 else ''}" if r["blocks"] else ""
        held.append({"op": str(r["op"]), "source": str(r["source"]), "bytes": int(r["bytes"]),
                     "blocks": int(r["blocks"]), "share": float(r["share"]),
                     "text": f"{where}: {fmt_bytes(r['bytes'])}{blocks} ({fmt_pct(r['share'])})"})
    return {"device": m.device, "source": m.source, "where_from": SOURCES.get(m.source, m.source),
            "headline": headline, "peak_bytes": m.peak_bytes, "peak_us": m.peak_us,
            "reserved_at_peak": m.reserved_at_peak, "peak_reserved": m.peak_reserved,
            "before_bytes": m.before_bytes, "held": held, "held_in_all": len(m.held),
            "steps": _steps(m), "leak": _leak(m), "fragmentation": fr["meaning"] if fr.get("flagged") else None,
            "series": {"time_us": m.series["time_us"].astype(float).tolist(),
                       "allocated": m.series["allocated"].astype(int).tolist(),
                       "reserved": m.series["reserved"].astype(int).tolist()},
            "lane": {**LANE, "label": f"memory {m.device}", "max_bytes": int(max(m.peak_reserved, m.peak_bytes)),
                     "max_text": fmt_bytes(max(m.peak_reserved, m.peak_bytes))}}


def _steps(m) -> str | None:
    """Allocated at the step ends in one line."""
    s = m.steps
    if s is None or not len(s):
        return None
    ends = s["allocated_end"].astype(int)
    if ends.nunique() == 1:
        return f"allocated at the end of each of {len(s)} steps: {fmt_bytes(int(ends.iloc[0]))} (no growth)"
    return (f"allocated at the end of {len(s)} steps: {fmt_bytes(int(ends.iloc[0]))} to {fmt_bytes(int(ends.iloc[-1]))}"
            f" (growth per step: " + ", ".join(fmt_bytes(int(g)) for g in s["growth"].iloc[1:6])
            + (", ..." if len(s) > 6 else "") + ")")


def _leak(m) -> str | None:
    leak = m.leak
    if not leak:
        return None
    top = leak["held"][0] if leak["held"] else None
    who = (f"; most by {top['op']}" + (f" at {top['source']}" if top["source"] else "")) if top else ""
    return (f"grows by {fmt_bytes(leak['growth_per_step'])} per step over {leak['steps']} steps: "
            f"{fmt_bytes(leak['stayed_bytes'])} allocated in them never freed{who}")
