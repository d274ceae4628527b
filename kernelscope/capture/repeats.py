"""Per-repeat kernel statistics for ``--repeat N``: which repeat launched each kernel."""
from __future__ import annotations

import bisect

import pandas as pd

# The record_function name of each repeat of --repeat N (kernelscope.repeat.0, .1, ...).
REPEAT_MARK = "kernelscope.repeat."


def repeat_windows(ops: pd.DataFrame) -> list:
    """``[(start_us, end_us, i)]`` of the ``kernelscope.repeat.i`` annotations, by start.

    >>> repeat_windows(rep.ops)  # doctest: +SKIP
    [(12.0, 840.5, 0), (841.0, 1650.2, 1)]
    """
    if not len(ops):
        return []
    m = ops[ops["name"].astype(str).str.startswith(REPEAT_MARK)]
    # CPU-side annotations only: their GPU mirrors ("gpu_user_annotation") are not ops rows.
    out = [(float(s), float(s + d), int(n[len(REPEAT_MARK):]))
           for n, s, d in zip(m["name"], m["start_us"], m["duration_us"])
           if n[len(REPEAT_MARK):].isdigit()]
    return sorted(out)


def per_repeat_totals(kernels: pd.DataFrame, ops: pd.DataFrame, n: int) -> dict:
    """``{kernel name: [total us in repeat 0..n-1]}``, assigning each kernel by the time of the
    host call that launched it. Without annotations (``--lean`` records no CPU ops), kernels are
    split in launch order into ``n`` equal groups when their count divides evenly, else ``{}``.

    >>> per_repeat_totals(rep.kernels, rep.ops, 3)["my_kernel"]  # doctest: +SKIP
    [101.2, 99.8, 100.4]
    """
    out = {}
    if not len(kernels) or n < 1:
        return out
    wins = repeat_windows(ops)
    names = kernels["name"].tolist()
    durs = kernels["duration_us"].astype(float).tolist()
    if wins:
        starts = [w[0] for w in wins]
        idx = []
        for t in kernels["launch_start_us"].tolist():
            r = None
            if t is not None and t == t:
                j = bisect.bisect_right(starts, t) - 1
                if j >= 0 and t <= wins[j][1]:
                    r = wins[j][2]
            idx.append(r)
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
