"""Per-repeat statistics for ``--repeat N``: which repeat launched each kernel, and each repeat's
totals (kernel time, copies, GPU busy, active window, wall time, launches).

A recording made with ``%%kernelprofile --repeat N`` (or ``prof.repeat(i)``) marks each repeat
with a ``kernelscope.repeat.i`` annotation and a pair of CUDA events; ``report.meta["repeats"]``
keeps ``n``, ``per_kernel_total_us`` (``{kernel name: [us in repeat 0..n-1]}``) and
``cuda_event_us`` (each repeat's wall time on the GPU's clock). The other totals are derived
here from the annotations' windows: GPU work belongs to the repeat whose window holds the host
call that launched it. The comparison's confidence intervals (:mod:`kernelscope.analysis.noise`)
read these per-repeat values.
"""
from __future__ import annotations

import bisect

import numpy as np
import pandas as pd

# The record_function name of each repeat of --repeat N (kernelscope.repeat.0, .1, ...).
REPEAT_MARK = "kernelscope.repeat."


def repeat_windows(ops: pd.DataFrame) -> list:
    """``[(start_us, end_us, i)]`` of the ``kernelscope.repeat.i`` annotations, by start.

    >>> repeat_windows(rep.ops)             # a recording without --repeat has none
    []
    """
    if not len(ops):
        return []
    m = ops[ops["name"].astype(str).str.startswith(REPEAT_MARK)]
    # CPU-side annotations only: their GPU mirrors ("gpu_user_annotation") are not ops rows.
    out = [(float(s), float(s + d), int(n[len(REPEAT_MARK):]))
           for n, s, d in zip(m["name"], m["start_us"], m["duration_us"])
           if n[len(REPEAT_MARK):].isdigit()]
    return sorted(out)


def _repeat_of(launch_starts, wins) -> list:
    """The repeat (or None) whose window holds each launch time."""
    starts = [w[0] for w in wins]
    idx = []
    for t in launch_starts:
        r = None
        if t is not None and t == t:
            j = bisect.bisect_right(starts, t) - 1
            if j >= 0 and t <= wins[j][1]:
                r = wins[j][2]
        idx.append(r)
    return idx


def per_repeat_totals(kernels: pd.DataFrame, ops: pd.DataFrame, n: int) -> dict:
    """``{kernel name: [total us in repeat 0..n-1]}``, assigning each kernel by the time of the
    host call that launched it. Without annotations (``--lean`` records no CPU ops), kernels are
    split in launch order into ``n`` equal groups when their count divides evenly, else ``{}``.

    >>> tot = per_repeat_totals(before.kernels, before.ops.iloc[0:0], 2)   # two steps of 1000
    >>> [round(x, 1) for x in tot[before.kernels["name"].iloc[0]]]
    [458.1, 456.7]
    """
    out = {}
    if not len(kernels) or n < 1:
        return out
    wins = repeat_windows(ops)
    names = kernels["name"].tolist()
    durs = kernels["duration_us"].astype(float).tolist()
    if wins:
        idx = _repeat_of(kernels["launch_start_us"].tolist(), wins)
    else:
        if len(kernels) % n:
            return out
        order = kernels["start_us"].astype(float).rank(method="first").astype(int).tolist()
        per = len(kernels) // n
        idx = [(o - 1) // per for o in order]
    for name, d, r in zip(names, durs, idx):
        if r is None or not 0 <= r < n:
            continue
        out.setdefault(name, [0.0] * n)[r] += d
    return out


def n_repeats(meta) -> int:
    """How many repeats a report holds (``meta["repeats"]["n"]``), 1 without repeats.

    >>> n_repeats({"repeats": {"n": 5}}), n_repeats({})
    (5, 1)
    """
    r = meta.get("repeats")
    n = r.get("n") if isinstance(r, dict) else None
    return int(n) if isinstance(n, (int, float)) and n >= 1 else 1


def kernel_lists(meta):
    """``{kernel name: np.array(per-repeat totals)}`` when the run has 2+ repeats, else None.

    >>> kernel_lists({"repeats": {"n": 2, "per_kernel_total_us": {"k": [1.0, 2.0]}}})
    {'k': array([1., 2.])}
    """
    r = meta.get("repeats")
    if not isinstance(r, dict) or n_repeats(meta) < 2:
        return None
    per = r.get("per_kernel_total_us")
    if not isinstance(per, dict) or not per:
        return None
    return {str(k): np.asarray(v, dtype=float) for k, v in per.items() if isinstance(v, (list, tuple))}


def repeat_series(rep) -> dict:
    """Each total's value in each repeat, ``{metric: np.array of n}``, for the metrics that have
    them: ``gpu_time_us`` (the per-kernel totals summed), ``wall_us`` (the repeats' CUDA events;
    else their windows on the host's clock), and, from the windows, ``copy_time_us``,
    ``busy_us`` (union of kernels and copies per device, summed over devices), ``active_us``
    (first to last GPU work of the repeat) and ``launches``. Empty without 2+ repeats; a metric
    it cannot split by repeat is left out.

    >>> repeat_series(rep)                  # one run: nothing to split
    {}
    """
    n = n_repeats(rep.meta)
    if n < 2:
        return {}
    out = {}
    lists = kernel_lists(rep.meta)
    if lists and len({len(x) for x in lists.values()}) == 1 and len(next(iter(lists.values()))) == n:
        out["gpu_time_us"] = np.sum(list(lists.values()), axis=0)
    ev = (rep.meta.get("repeats") or {}).get("cuda_event_us")
    if isinstance(ev, list) and len(ev) == n and all(isinstance(x, (int, float)) and x == x for x in ev):
        out["wall_us"] = np.asarray(ev, dtype=float)
    wins = [w for w in repeat_windows(rep.ops) if 0 <= w[2] < n]
    if len({w[2] for w in wins}) == n == len(wins):
        if "wall_us" not in out:
            out["wall_us"] = np.asarray([e - s for s, e, _ in sorted(wins, key=lambda w: w[2])])
        out.update(_window_totals(rep.kernels, rep.copies, wins, n))
    return out


def _window_totals(kernels, copies, wins, n) -> dict:
    """copy time, busy, active window and launches of each repeat, by the launching call's time."""
    from kernelscope.analysis.timeline import activities, busy_table
    rk = np.asarray(_repeat_of(kernels["launch_start_us"].tolist(), wins), dtype=object)
    rc = np.asarray(_repeat_of(copies["launch_start_us"].tolist(), wins), dtype=object)
    vals = {"copy_time_us": [], "busy_us": [], "active_us": [], "launches": []}
    for i in range(n):
        k, c = kernels[rk == i], copies[rc == i]
        vals["copy_time_us"].append(float(c["duration_us"].sum()))
        vals["launches"].append(float(len(k)))
        if len(k) or len(c):
            b = busy_table(activities(k, c))
            d = b[b["stream"].isna()]
            vals["busy_us"].append(float(d["busy_us"].sum()))
            vals["active_us"].append(float(d["window_us"].sum()))
        else:
            vals["busy_us"].append(0.0)
            vals["active_us"].append(0.0)
    return {m: np.asarray(v, dtype=float) for m, v in vals.items()}
