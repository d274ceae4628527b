"""The roofline panel: a dot per CPU op instance (or per launch Nsight Compute measured) and
the device's ceilings, each with its source and why a dot sits above its roof."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import by_distinct, first_rows
from kernelscope.analysis.ncu_kernels import NCU_SOURCE, PRECISION_LABELS
from kernelscope.analysis.roofline import above_roof_note, same_dots_once
from kernelscope.jsonable import jsonable, num
from kernelscope.panels.base import text as _str

# Roofline points are per CPU op instance; the chart shows the costliest ones.
ROOFLINE_POINTS = 300


def roofline_panel(rl: pd.DataFrame | None, k: pd.DataFrame, names: np.ndarray | None = None) -> dict | None:
    """Roofline points (per CPU op instance with counted FLOPs and bytes, or per launch Nsight
    Compute measured) and the device ceilings, from ``rl`` (``rep.roofline``) and ``k`` (the
    report's kernels; ``names``: a row of each kernel name, when at hand); None without points.

    >>> r = roofline_panel(rep.roofline, rep.kernels)
    >>> len(r["points"]), r["ceilings"][0]["label"]
    (10, 'cuda:0 bf16 peak')
    """
    if rl is None or not len(rl):
        return None
    # Once per distinct source (a 5M-event report has a million rows of a few).
    measured = by_distinct(rl["flops_source"].to_numpy(dtype=object), lambda v: isinstance(v, str) and v == NCU_SOURCE,
                           bool, False)
    if measured.any():
        rl = rl[measured]    # what Nsight Compute measured replaces our estimate from op shapes
    pts = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]
    if not measured.any():
        pts = same_dots_once(pts)
    pts = pts.sort_values("duration_us", ascending=False).head(ROOFLINE_POINTS)
    # k.drop_duplicates("name")
    first = k[["name", "backend"]].iloc[first_rows(k["name"]) if names is None else names] if len(k) else k
    backend = dict(zip(first["name"].astype(str), first["backend"].astype(str))) if len(k) else {}
    points = [{"name": _str(r["short_name"]), "op": _str(r["op"]),
               "backend": backend.get(str(r["kernel"]), "other"), "precision": _str(r["precision"]),
               "intensity": num(r["intensity"]), "flops_per_s": num(r["achieved_tflops"] * 1e12),
               "duration_us": num(r["duration_us"]), "roof_share": num(r["roof_share"]),
               "bound": _str(r["bound"]), "count": int(r.get("count", 1)),
               # Why a dot is above its roof (analysis/roofline.py), said where it is drawn.
               "note": above_roof_note(r["bound"], r["roof_share"])}
              for _, r in pts.iterrows()]
    ceilings = []
    for (dev, prec), g in pts.groupby(["device", "precision"], dropna=True):
        r = g.iloc[0] if not measured.any() else g.median(numeric_only=True).combine_first(g.iloc[0])
        if num(r["peak_tflops"]) and num(r["peak_gbps"]):
            src = _str(r["peaks_source"]) or "datasheet"
            # The deep dive's names for Nsight Compute's precisions ("FP16 tensor"), one name each.
            prec = PRECISION_LABELS.get(prec, prec) if measured.any() else prec
            # The chart prints these as they are: the numbers and their source are said here, once.
            ceilings.append({"label": f"{dev} {prec} peak", "peak_flops_per_s": r["peak_tflops"] * 1e12,
                             "bandwidth_bytes_per_s": r["peak_gbps"] * 1e9, "source": _str(r["peaks_source"]),
                             "peak_label": f"{dev} {prec} peak {r['peak_tflops']:,.0f} TFLOP/s ({src})",
                             "memory_label": f"{dev} memory {r['peak_gbps'] / 1000:.2f} TB/s ({src})"})
    memory_only = int(len(rl) - len(pts))
    note = ("Ceilings are datasheet peaks; FLOPs and bytes are counted per CPU op from its shapes "
            "(bytes: inputs read once, output written once).")
    if measured.any():
        note = ("One dot per launch, measured by Nsight Compute: FLOP/s of its dominant precision from the "
                "SASS operation counters, DRAM bytes from the DRAM counters; ceilings are the device's peaks "
                "at the clocks ncu measured.")
    if memory_only:
        note += f" {memory_only} more ops have byte counts but no FLOP count, so they are not plotted."
    above = sum(1 for p in points if p["note"])
    if above:
        note += (f" {above} dot(s) sit above their roof, each marked with why (data kept in L2 or cache, "
                 "or a faster precision than the inputs').")
    # The axis says what the note says: measured bytes, or bytes counted from the op's shapes.
    x_label = ("arithmetic intensity (FLOP/byte at DRAM, measured by Nsight Compute)" if measured.any()
               else "arithmetic intensity (FLOP/byte, counted from op shapes)")
    return {"points": points, "ceilings": jsonable(ceilings), "note": note, "x_label": x_label}
