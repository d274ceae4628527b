"""The steps panel (``rep.steps``, :mod:`kernelscope.analysis.steps`): per-step rows with
TensorBoard's breakdown, the median step, the first steps, the spread and the slowest step, with
every label and sentence the outputs show (text, Markdown, the chart, the browser's Steps block).
"""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.steps import PART_LABELS, PARTS, step_summary
from kernelscope.jsonable import jsonable
from kernelscope.units import fmt_pct, fmt_us

# Rows the panel holds at most: a loop of more steps keeps the first, the slowest and an even
# sample of the rest (rep.steps keeps them all), and the panel says how many it left out.
MAX_ROWS = 1000
# Rows the text and Markdown list: the first, the median, the slowest and the last steps.
TEXT_ROWS = 8
# Colours of the parts (GPU parts blue-green, host parts warm, the unrecorded grey).
_COLOURS = {"kernel": "#4c78a8", "memcpy": "#72b7b2", "memset": "#54a24b", "communication": "#b279a2",
            "runtime": "#f58518", "dataloader": "#e45756", "cpu_exec": "#eeca3b", "other": "#b3b3b3"}


def steps_panel(rep) -> dict | None:
    """The steps of ``rep``, or None when it marks none.

    >>> p = steps_panel(ks.load("training/leak_steps.pt.trace.json.gz"))
    >>> len(p["rows"]), p["parts"][0], p["lines"][0]
    (8, {'key': 'kernel', 'label': 'Kernel', 'colour': '#4c78a8'}, '8 steps (ProfilerStep#1-#8): median 31.29 ms, \
steady steps from #2: median 31.23 ms, 90th percentile 32.95 ms, slowest 1.10x the median (ProfilerStep#2)')
    >>> p["lines"][1]
    'first step ProfilerStep#1: 1.23x the median (38.44 ms): CPU exec +5.15 ms, Other +1.51 ms, 1 more allocation'
    """
    t = rep.steps
    if not len(t):
        return None
    s = step_summary(t)
    keep = _kept(t, s)
    cols = ["step", "index", "start_us", "end_us", "step_us", "cpu_us", "gpu_busy_us",
            *[f"{p}_us" for p in PARTS], "kernels", "allocations", "compiles"]
    rows = jsonable(t.iloc[keep][cols].to_dict("records"))
    firsts = {f["index"] for f in s["first"]}
    for r in rows:
        r["kind"] = ("first" if r["index"] in firsts else "slowest" if r["index"] == s["slowest"]["index"]
                     else "median" if r["index"] == s["median_step"]["index"] else "")
    return {"title": "Steps", "source": "rep.steps", "parts": [{"key": p, "label": PART_LABELS[p],
                                                                "colour": _COLOURS[p]} for p in PARTS],
            "rows": rows, "dropped": int(len(t) - len(keep)), "summary": jsonable(s), "lines": _lines(t, s),
            "columns": {"step": "step", "kind": "", "step_us": "time", "gpu_busy_us": "GPU busy",
                        "kernels": "kernels", "allocations": "allocations"},
            "dropped_note": (f"{len(t) - len(keep):,} of {len(t):,} steps not shown here (the first, the slowest "
                             "and an even sample are; rep.steps has every step)") if len(t) > len(keep) else None,
            "text_rows": [r["index"] for r in rows if r["kind"]][:TEXT_ROWS],
            "note": ("Each step's span is its ProfilerStep#N host range extended to the end of the GPU work "
                     "it launched; each microsecond goes to the first part that covers it (kernel, memcpy, "
                     "memset, communication, runtime, data loading, CPU exec, other), as TensorBoard did.")}


def _kept(t, s) -> np.ndarray:
    n = len(t)
    if n <= MAX_ROWS:
        return np.arange(n)
    idx = t["index"].to_numpy()
    must = {int(np.flatnonzero(idx == f["index"])[0]) for f in s["first"]}
    must |= {int(np.argmax(t["step_us"].to_numpy()))}
    rest = np.array([i for i in range(n) if i not in must])
    even = rest[np.linspace(0, len(rest) - 1, MAX_ROWS - len(must)).round().astype(int)]
    return np.array(sorted(must | set(even.tolist())))


def _what(row: dict) -> str:
    parts = [f"{PART_LABELS[p]} +{fmt_us(row['grew_us'][p])}" for p in row["grew"][:2]]
    more = [f"{v} more {c if v != 1 else c.rstrip('s')}" for c, v in row["more"].items()
            if v > 0 and c in ("kernels", "allocations", "compiles", "copies")]
    return ", ".join(parts + more) or "no part grew"


def _lines(t, s) -> list:
    st, slow = s["steady"], s["slowest"]
    first, last = int(t["index"].iloc[0]), int(t["index"].iloc[-1])
    name = str(t["step"].iloc[0]).split("#")[0]
    out = [f"{s['steps']} steps ({name}#{first}-#{last}): median {fmt_us(s['median_us'])}, steady steps from "
           f"#{st['from_index']}: median {fmt_us(st['median_us'])}, 90th percentile {fmt_us(st['p90_us'])}, "
           f"slowest {slow['ratio']:.2f}x the median ({slow['step']})"]
    out += [f"first step {f['step']}: {f['ratio']:.2f}x the median ({fmt_us(f['step_us'])}): {_what(f)}"
            for f in s["first"]]
    if slow["grew"]:
        out.append(f"slowest steady step {slow['step']} ({fmt_us(slow['step_us'])}): {_what(slow)}")
    m = s["median_step"]
    out.append(f"median step {m['step']}: " + ", ".join(
        f"{PART_LABELS[p]} {fmt_us(v)} ({fmt_pct(v / m['step_us'], 0)})" for p, v in m["parts"].items()
        if v > 0.005 * m["step_us"]))
    return out
