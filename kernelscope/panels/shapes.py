"""The occupancy entry of a launch shape as the views draw it: the calculator's breakdown, its
limiters and advice, and the occupancy curves (block size, registers, shared memory) as steps.

The widget's details panel (``js/src/view/kernel.js``, through the payload's ``shapes``) and
``rep.chart("occupancy")`` both read these entries, so the two cannot disagree.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.shapes import shape_curves
from kernelscope.jsonable import jsonable, num, whole

# Curves are computed up front for the launch shapes that take the most time only: a curve set is
# ~740 occupancy-calculator calls (~0.1 s), paid on every display; the live widget asks for others on selection.
CURVE_KERNELS = 3


def occupancy_entries(rep, k: pd.DataFrame) -> list:
    """Per launch shape (a row of ``rep.shapes``, the analysis's launch-shapes table): the
    calculator's breakdown and advice; for the costliest shapes also the curves (the live widget
    asks for the others when one is selected: :func:`shape_details`)."""
    shapes = _shapes(rep, k)
    if not len(k) or shapes is None or not len(shapes):
        return []
    with_curves = set(shapes.sort_values("total_us", ascending=False, kind="stable")["shape"][:CURVE_KERNELS].tolist())
    return [shape_entry(r, rep.devices, r["shape"] in with_curves) for r in shapes.to_dict("records")]


def shape_details(rep, shape: int) -> dict:
    """Occupancy breakdown, advice and curves of one launch shape (a ``shape`` code of the
    view: the ``shape`` column of ``rep.kernels``), curves included.

    >>> shape_details(rep, 0)["curves"]["block"][:2]
    [[32, 0.5], [64, 1.0]]
    """
    shapes = _shapes(rep, rep.kernels)
    rows = shapes[shapes["shape"] == int(shape)] if shapes is not None else pd.DataFrame()
    if not len(rows):
        return {"shape": int(shape)}
    return shape_entry(rows.iloc[0].to_dict(), rep.devices, True)


def _shapes(rep, k):
    shapes = getattr(rep, "shapes", None)
    if shapes is None or "shape" not in k.columns:
        return None
    return shapes



_SHAPE_FIELDS = ("active_blocks_per_sm", "block_limit_registers", "block_limit_shared_mem",
                 "block_limit_warps", "block_limit_blocks", "block_limit_barriers", "reason")


def shape_entry(shape: dict, devices: pd.DataFrame, with_curves: bool) -> dict:
    entry: dict = {"shape": int(shape["shape"])}
    occ = num(shape.get("theoretical_occupancy"))
    if occ is None:
        return entry   # a damaged header (no compute capability) leaves occupancy unknown
    entry.update(threads=whole(shape["threads_per_block"]), registers=whole(shape["registers_per_thread"]),
                 smem=whole(shape["shared_mem_bytes"]),
                 cc=[whole(shape["compute_major"]), whole(shape["compute_minor"])], occupancy=occ)
    entry.update({f: jsonable(shape.get(f)) for f in _SHAPE_FIELDS})
    entry["limiters"] = [str(x) for x in (shape.get("limiters") or ())]
    entry["hints"] = [str(x) for x in (shape.get("advice") or ())]
    if with_curves:
        try:
            curves = shape_curves(shape, devices)
        except Exception:  # noqa: BLE001 - a shape the calculator cannot vary keeps its breakdown
            curves = None
        if curves is not None:
            entry["curves"] = {key: _steps(curves[curves["vary"] == vary])
                               for key, vary in (("block", "threads_per_block"),
                                                 ("registers", "registers_per_thread"),
                                                 ("smem", "shared_mem_per_block"))}
    return entry


def _steps(c: pd.DataFrame) -> list:
    """A curve as [value, occupancy] points where occupancy changes (a step function), plus
    its ends and the launch's own value: a few dozen points instead of hundreds."""
    v = c["value"].to_numpy()
    o = c["occupancy"].to_numpy(dtype=float)
    cur = c["current"].to_numpy(dtype=bool)
    keep = np.zeros(len(v), bool)
    if len(v):
        keep[0] = keep[-1] = True
        keep[1:] |= o[1:] != o[:-1]
        keep |= cur
    return [[int(a), num(b)] for a, b in zip(v[keep], o[keep])]
