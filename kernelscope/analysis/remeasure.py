"""The re-measure step: did the fix work? Each item of the first run's "what to fix first" list
(:func:`kernelscope.analysis.priorities.what_to_fix`) against what the second run shows.

For each item (one row of :func:`advice`, ``Comparison.advice``):

- ``predicted_us``: the item's time at stake, per run (its ``cost_us`` over the first run's
  repeats).
- ``measure``: what the item names. An item about one kernel (its finding's evidence or link
  names one kernel): that kernel's time, found in the second run as the comparison matches
  kernels (a kernel whose template arguments changed is still itself; a kernel that is gone
  gained its whole time). Every other item (host work, syncs, copies, idle, cold start, ...):
  the wall time.
- ``realized_us``: what the measure gained per run, first run minus second (positive: saved);
  ``ratio``: realized over predicted.
- ``after_cost_us``: the second run's costliest finding of the same kind (about the same kernel,
  where the item is about one), per run; 0 where it has none.
- ``change``: the comparison's verdict on the measure's change (:mod:`.noise`): real, noise or
  inconclusive.

The verdict, in this order:

- ``fixed``: the second run has no such finding, or its cost fell by :data:`FIXED_DROP` or more,
  and the measure did not get slower beyond noise (a real increase).
- ``partly``: not fixed, not slower beyond noise, and the finding's cost fell by
  :data:`PARTLY_DROP` or more, or the measure gained at least :data:`PARTLY_DROP` of the
  predicted time.
- ``not``: otherwise (the finding's cost and the measure barely moved, or the measure got
  slower beyond noise).

An item with no time at stake (the list's one item when no finding costs time, e.g. "the GPU
was busy: these kernels") predicts no gain: it is fixed or partly only where its measure fell by
:data:`PARTLY_DROP` of its first-run value or more.

The ``note`` says what the verdict rests on: a gone kernel, how far the finding's cost fell, and,
where the measure's change is noise or inconclusive, that its realized time cannot be told from
noise (and why: no repeats), also where the measure got slower; several items measured on the
wall time share one gain, and the note says so.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.noise import NOT_SPLIT_WHY
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# The finding's cost fell by this share or more (or it is gone): the fix did what it said.
FIXED_DROP = 0.8
# A meaningful part: a fifth of the finding's cost, or of the predicted gain, is more than run-to-
# run noise usually is on a fix-sized change, and less than a real partial fix gives.
PARTLY_DROP = 0.2
# A wall-time row's reason, shorter where the item's note repeats it.
WALL_WHYS = {NOT_SPLIT_WHY: "the recording has no repeat windows to split it"}
ADVICE_COLUMNS = ["rank", "title", "kind", "measure", "predicted_us", "realized_us", "ratio",
                  "after_cost_us", "verdict", "change", "note"]
VERDICTS = {
    "fixed": (f"the second run has no such finding (or its cost fell by {FIXED_DROP:.0%} or more) "
              "and the measure did not get slower beyond noise"),
    "partly": (f"the finding's cost fell by {PARTLY_DROP:.0%} or more, or the measure gained "
               f"{PARTLY_DROP:.0%} or more of the predicted time, but not fixed"),
    "not": "the finding's cost and the measure barely moved, or the measure got slower beyond noise",
}

# Items of the first screen that name no fix to re-measure.
NOT_ADVICE = ("outside_gpu_work",)


def advice(d) -> pd.DataFrame:
    """For each item of ``d.before``'s "what to fix first" list, fixed / partly / not in
    ``d.after``, with predicted against realized time (see the module's docstring); ``d`` is a
    :class:`~kernelscope.analysis.diff.Diff`.

    >>> a = advice(c)        # a launch-bound loop, then the same loop as a CUDA graph
    >>> r = a.iloc[0]
    >>> r.measure, int(r.predicted_us), int(r.realized_us), float(r.after_cost_us), r.verdict, r.change
    ('wall time', 7943, 22992, 0.0, 'fixed', 'inconclusive')
    >>> a.loc[0, "note"]
    'No launch_bound finding in the second run. The wall time change is inconclusive (no repeats; use --repeat N).'
    """
    before, after = d.before, d.after
    nb, na = d.repeats
    base, of = before.time_base
    # The time outside the GPU's work (the profiler's start-up, the cell's own Python) is no
    # advice with a fix: it is not re-measured.
    items = [it for it in what_to_fix(before.findings, base, of=of) if it["kind"] not in NOT_ADVICE]
    after_findings = [f for f in (after.findings or []) if _get(f, "kind") != "analysis_error"]
    rows = [_assess(it, before.findings[it["finding"]], d, after_findings, nb, na) for it in items]
    walls = [r["rank"] for r in rows if r["measure"] == "wall time"]
    if len(walls) > 1:
        # One wall-time change measures every item that is not about one kernel: say so, since
        # their realized times are the same gain, not gains that add up.
        for r in rows:
            if r["measure"] == "wall time":
                others = ", ".join(str(x) for x in walls if x != r["rank"])
                r["note"] = (r["note"] + f" The wall time's gain is shared with item{'s' if len(walls) > 2 else ''} "
                             f"{others}.").strip()
    return pd.DataFrame(rows, columns=ADVICE_COLUMNS)


def _assess(item, finding, d, after_findings, nb, na) -> dict:
    """One item's row."""
    predicted = num(item.get("cost_us"))
    predicted = predicted / nb if predicted is not None else np.nan
    own_cost = (num(_get(finding, "cost_us")) or 0.0) / nb
    m = _measure(item, finding, d, after_findings, _why(nb, na))
    realized, verdict, notes = m["realized"], m["verdict"], m["notes"]
    after_cost = max([(num(_get(f, "cost_us")) or 0.0) / na for f in m["same"]], default=0.0)
    gone = not m["same"] or (own_cost > 0 and after_cost <= (1 - FIXED_DROP) * own_cost)
    slower = verdict == "real" and realized < 0
    fell = own_cost > 0 and after_cost <= (1 - PARTLY_DROP) * own_cost
    if predicted == predicted and predicted > 0:
        gained = realized >= PARTLY_DROP * predicted
    else:
        # No time at stake to compare with: the measure itself must fall by a meaningful part,
        # for fixed too (a costless finding comes and goes with what else the run shows).
        gained = realized >= PARTLY_DROP * m["before"] > 0
        gone, fell = gone and gained, False
    result = "fixed" if gone and not slower else "partly" if not slower and (fell or gained) else "not"
    if not m["same"]:
        notes.append(f"No {item['kind']} finding in the second run")
    elif gone:
        notes.append(f"Its cost fell by {1 - after_cost / own_cost:.0%}")
    what, why = m["what"], m["why"]
    if slower:
        notes.append(f"The {what} got slower beyond noise")
    elif verdict == "noise":
        notes.append(f"The {what} change is within noise")
    elif verdict != "real" and realized < 0:
        notes.append(f"The {what} got {fmt_us(-realized)} slower, but the change is inconclusive ({why})")
    elif verdict != "real":
        notes.append(f"The {what} change is inconclusive ({why})")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = realized / predicted if predicted == predicted and predicted else np.nan
    return {"rank": item["rank"], "title": item["title"], "kind": item["kind"], "measure": m["measure"],
            "predicted_us": predicted, "realized_us": float(realized), "ratio": float(ratio),
            "after_cost_us": float(after_cost), "verdict": result, "change": verdict,
            "note": ". ".join(notes) + ("." if notes else "")}


def _measure(item, finding, d, after_findings, why) -> dict:
    """What an item is measured on (its kernel's time, else the wall time): the measure's name,
    its first-run value and gain per run, the comparison's verdict on it, and the second run's
    findings of the same kind (about the same kernel)."""
    kernel = _kernel_of(finding, item)
    row = _kernel_row(d.kernels, kernel) if kernel else None
    notes = []
    if row is not None:
        names = set(row["names_after"]) | {row["short_name"]}
        if row["status"] == "gone":
            notes.append("The kernel is gone from the second run: its whole time counts")
        return {"measure": f"kernel {row['short_name']}", "what": "kernel time", "before": row["total_before_us"],
                "realized": row["total_before_us"] - row["total_after_us"], "verdict": row["verdict"], "why": why,
                "same": [f for f in after_findings if _get(f, "kind") == item["kind"] and _kernel_of(f, None) in names],
                "notes": notes}
    if kernel:
        notes.append("Its kernel is not in the comparison, so the wall time measures it")
    wall = d.metric("wall_us")
    return {"measure": "wall time", "what": "wall time", "before": float(wall.get("before", np.nan)),
            "realized": -float(wall.get("change", np.nan)), "verdict": wall.get("verdict", "inconclusive"),
            "why": WALL_WHYS.get(wall.get("why"), why),
            "same": [f for f in after_findings if _get(f, "kind") == item["kind"]], "notes": notes}


def _why(nb, na) -> str:
    """Why a change is inconclusive, in a few words (the comparison's notes say it in full)."""
    if nb < 2 and na < 2:
        return "no repeats; use --repeat N"
    if nb < 2 or na < 2:
        return "repeats on one side only"
    return "its 95% interval holds 0 but is wide"


def _kernel_row(kernels: pd.DataFrame, kernel: str):
    """The comparison's row of a first-run kernel (by full name, else readable name), or None."""
    if not len(kernels):
        return None
    hit = kernels[[kernel in names for names in kernels["names_before"]]]
    if not len(hit):
        hit = kernels[(kernels["short_name"] == kernel) & (kernels["status"] != "new")]
    return hit.iloc[0] if len(hit) else None


def _kernel_of(finding, item):
    """The one kernel a finding is about (its evidence's, or its link's only name), else None."""
    ev = _get(finding, "evidence")
    k = ev.get("kernel") if isinstance(ev, dict) else None
    if isinstance(k, str) and k:
        return k
    for link in (_get(finding, "link"), (item or {}).get("link")):
        names = link.get("names") if isinstance(link, dict) and link.get("view") == "kernels" else None
        if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
            return names[0]
    return None


def _get(f, key):
    return f.get(key) if isinstance(f, dict) else getattr(f, key, None)
