"""Training-loop steps (``rep.steps``, :mod:`kernelscope.analysis.steps`): first steps far slower
than the steady state, and steady steps that vary. Each is priced in the time the steps took
beyond the median step, and says which part of TensorBoard's breakdown grew."""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.findings.base import Finding, range_link, severity_for
from kernelscope.analysis.steps import PART_LABELS, step_summary
from kernelscope.units import fmt_pct, fmt_us

# Steady steps whose 90th percentile is this far above their median, or whose slowest is this
# many times the median, vary enough to be worth a line (the recorded LM's steady steps: p90 4%
# above, slowest 1.07x: no finding).
SPREAD_P90 = 0.10
SPREAD_MAX_RATIO = 1.5
SPREAD_MIN_STEPS = 3
# What to look at when a part grew, by part.
_FIX = {"kernel": "the slow step ran other or longer kernels: look for shapes that change between steps "
                  "(dynamic shapes, recompiles) in its kernels",
        "memcpy": "the slow step copied more: keep the batch's host copy pinned and copy it with non_blocking=True",
        "memset": "the slow step cleared more memory",
        "communication": "a collective waited: see which rank was slow (ks.load_ranks)",
        "runtime": "the host spent the time in CUDA calls (launches, allocations, synchronizations): "
                   "fewer launches (torch.compile, CUDA graphs) or no syncs inside the step",
        "dataloader": "the step waited for its batch: more DataLoader workers, pin_memory=True, prefetch_factor",
        "cpu_exec": "the host ran more or slower ops: see the CPU ops of that step",
        "other": "no op or CUDA call was recorded then: Python between ops, the garbage collector, or the "
                 "profiler itself (profile with --stack to see the Python)"}


def step_findings(report, tl) -> list:
    """``slow_first_steps`` and ``step_spread`` from the report's steps (none without steps).

    >>> [(f.kind, f.severity, f.title) for f in step_findings(ks.load("training/leak_steps.pt.trace.json.gz"), None)]
    [('slow_first_steps', 'low', 'ProfilerStep#1 took 1.23x the median step (38.44 ms against 31.29 ms): \
CPU exec +5.15 ms, Other +1.51 ms, 1 more allocation')]
    """
    steps = report.steps
    s = step_summary(steps)
    if not s:
        return []
    # Priced over the steps the report's timeline holds (a long live loop keeps only its last
    # cycle's; the earlier steps' rows have no times on this clock), so that shares of the wall
    # time stay true.
    held = steps["start_us"].notna().to_numpy(bool)
    total = float(steps["step_us"][held].sum())
    return [f for f in (_first(s, steps, total, held), _spread(s, steps, total, held)) if f is not None]


def _what_grew(row: dict, n: int = 2) -> str:
    parts = [f"{PART_LABELS[p]} +{fmt_us(row['grew_us'][p])}" for p in row["grew"][:n]]
    more = [f"{v} more {c if v != 1 else c.rstrip('s')}" for c, v in row["more"].items()
            if v > 0 and c in ("kernels", "allocations", "compiles", "copies")]
    return ", ".join(parts + more) or "no part grew"


def _link(steps, index, label) -> dict | None:
    r = steps[steps["index"] == index]
    if not len(r):
        return None
    link = range_link(None, r["start_us"].iloc[0], r["end_us"].iloc[0], label)
    if link is not None:
        link["label"] = f"timeline: {label}"
    return link


def _first(s: dict, steps, total: float, held) -> Finding | None:
    first = s["first"]
    if not first:
        return None
    med = s["median_us"]
    f0 = first[0]
    on = set(steps["index"][held].tolist())
    extra = sum(f["step_us"] - med for f in first)
    cost = sum(f["step_us"] - med for f in first if f["index"] in on)
    which = f0["step"] if len(first) == 1 else f"The first {len(first)} steps ({f0['step']}...)"
    title = (f"{which} took {f0['ratio']:.2f}x the median step ({fmt_us(f0['step_us'])} against {fmt_us(med)}): "
             f"{_what_grew(f0)}")
    compiles = sum(f["compiles"] for f in first)
    cause = ("compiling (" + str(compiles) + " compile ranges)" if compiles else
             "what the first steps pay once (the caching allocator growing, first calls, lazy module loads)")
    detail = (f"{len(first)} leading step(s) took {fmt_us(extra)} beyond the median step; the steady state starts "
              f"at step {s['steady']['from_index']} ({s['steady']['steps']} steps, median "
              f"{fmt_us(s['steady']['median_us'])}). Against the median step ({s['median_step']['step']}), "
              f"{f0['step']} grew in {_what_grew(f0, 3)}. This is paid once per run, not per step: leave these "
              "steps out of timings (torch.profiler.schedule(wait=..., warmup=...) or %%kernelprofile --steps N "
              "with a warm-up), and judge the loop by its steady steps.")
    return Finding("slow_first_steps", severity_for(cost, total), title, detail,
                   {"steps": [f["index"] for f in first], "ratio": f0["ratio"], "median_us": med,
                    "grew_us": f0["grew_us"], "more": f0["more"], "steady_from": s["steady"]["from_index"]},
                   cost, cause=f"{which}: {cause}.",
                   fix="Warm up before measuring (a schedule's wait/warmup steps); the steady steps are the loop's cost.",
                   link=_link(steps, f0["index"], f0["step"]))


def _spread(s: dict, steps, total: float, held) -> Finding | None:
    st = s["steady"]
    med = st["median_us"]
    if st["steps"] < SPREAD_MIN_STEPS or not med:
        return None
    over = st["p90_us"] / med - 1
    slow = s["slowest"]
    if over < SPREAD_P90 and (slow["ratio"] or 0) < SPREAD_MAX_RATIO:
        return None
    steady = (steps["index"] >= st["from_index"]).to_numpy(bool)
    beyond = np.clip(steps["step_us"].to_numpy(float) - med, 0, None)
    cost, whole = float(beyond[steady & held].sum()), float(beyond[steady].sum())
    part = slow["grew"][0] if slow["grew"] else "other"
    title = (f"Steady steps vary by {fmt_pct(over, 0)} (90th percentile {fmt_us(st['p90_us'])} against a median of "
             f"{fmt_us(med)}); {slow['step']} took {slow['ratio']:.2f}x: {_what_grew(slow)}")
    detail = (f"Of {st['steps']} steady steps, the 90th percentile is {fmt_pct(over, 0)} above the median and the "
              f"slowest, {slow['step']}, took {fmt_us(slow['step_us'])} ({slow['ratio']:.2f}x). Against the median "
              f"step ({s['median_step']['step']}) its {PART_LABELS[part]} part grew most "
              f"(+{fmt_us(slow['grew_us'].get(part, 0.0))}). Were every step as fast as the median, the steps would "
              f"take {fmt_us(whole)} less" + (f" ({fmt_us(cost)} of it in the steps this report's timeline holds)."
                                               if whole > cost else "."))
    return Finding("step_spread", severity_for(cost, total), title, detail,
                   {"p90_us": st["p90_us"], "median_us": med, "cv": st["cv"], "slowest": slow["index"],
                    "part": part, "grew_us": slow["grew_us"]}, cost,
                   cause=f"{slow['step']}'s {PART_LABELS[part]} time grew against the median step.",
                   fix=_FIX[part][0].upper() + _FIX[part][1:] + ".",
                   link=_link(steps, slow["index"], slow["step"]))
