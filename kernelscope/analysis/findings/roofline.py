"""Kernels far from the roof: the costliest (op, kernel) pairs whose achieved FLOP/s or bytes/s are
a small share of what the device allows at their arithmetic intensity."""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.findings.base import Finding, kernel_link, severity_for
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# Roofline: flag a kernel that holds at least 5% of kernel time, runs long enough (5 us) for a
# fixed launch latency of a few us not to dominate, and reaches under 30% of its attainable roof.
ROOF_MIN_SHARE = 0.05
ROOF_MIN_KERNEL_US = 5.0
ROOF_LOW_SHARE = 0.3
ROOF_MAX_FINDINGS = 3


def roofline_findings(report, tl) -> list:
    """Long-running kernels far below the roof their arithmetic intensity allows.

    >>> roofline_findings(rep, rep.timeline)
    []
    """
    rl = report.roofline if hasattr(report, "roofline") else None
    if rl is None:
        from kernelscope.analysis.roofline import roofline
        rl = roofline(report)
    rl = rl[rl["roof_share"].notna()] if len(rl) else rl
    total = float(report.kernels["duration_us"].sum())
    if not len(rl) or total <= 0:
        return []
    out = []
    window = tl.window.get("active_us")
    # One group per (op, kernel) in order of first row, as groupby(sort=False) makes them, but
    # over plain arrays: a large trace has tens of thousands of rows in a few dozen groups.
    rl = rl[(rl["op"].notna() & rl["kernel"].notna()).to_numpy()]
    from kernelscope.analysis.backends import distinct_rows
    codes, first = distinct_rows([rl["op"].to_numpy(object), rl["kernel"].to_numpy(object)])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(first) + 1))
    d_all, n_all, s_all = (rl[c].to_numpy(dtype=float) for c in ("duration_us", "kernels", "roof_share"))
    for j in range(len(first)):
        rows = order[bounds[j]:bounds[j + 1]]
        dur = float(d_all[rows].sum())
        n = int(n_all[rows].sum())
        if dur / total < ROOF_MIN_SHARE or dur / n < ROOF_MIN_KERNEL_US:
            continue
        # Time-weighted: the share the group would need to take its ideal time.
        ideal = float((d_all[rows] * s_all[rows]).sum())
        share = ideal / dur
        if share >= ROOF_LOW_SHARE:
            continue
        r = rl.iloc[rows[0]]
        op, kernel = r["op"], r["kernel"]
        cost = dur - ideal
        if r["flops"] == r["flops"] and r["peak_tflops"] == r["peak_tflops"] and r["peak_tflops"]:
            roof = (f"{r['attainable_tflops']:.1f} TFLOP/s attainable ({r['precision']}, "
                    f"{r['bound']}-bound at {r['intensity']:.1f} FLOP/byte)")
        else:
            roof = f"{r['peak_gbps']:.0f} GB/s memory bandwidth"
        out.append(Finding(
            "roofline", severity_for(cost, window),
            f"{r['short_name']} ({op}) reaches {share:.0%} of its roof",
            f"{n} launch{'es' * (n != 1)} took {fmt_us(dur)}; at the roof ({roof}, {r['peaks_source']} "
            f"value) they would take {fmt_us(ideal)}. Counts come from the op's recorded shapes "
            f"({r['flops_source']}): small grids, poor memory access or a slow algorithm choice keep "
            "it low; check its occupancy and waves.",
            {"op": op, "kernel": kernel, "launches": n, "time_us": dur, "roof_share": share,
             "ideal_us": ideal, "precision": r["precision"], "bound": r["bound"],
             "achieved_tflops": num(r["achieved_tflops"]), "achieved_gbps": num(r["achieved_gbps"]),
             "peak_tflops": num(r["peak_tflops"]), "peak_gbps": num(r["peak_gbps"])},
            cost,
            cause=f"{r['short_name']} reaches {share:.0%} of its roof: {roof}.",
            fix="Check its occupancy and waves (small grids) and its shapes; try torch.compile's max-autotune.",
            link=kernel_link([kernel], str(r["short_name"]))))
    out.sort(key=lambda f: -f.cost_us)
    return out[:ROOF_MAX_FINDINGS]
