"""Autotuning candidates: one row per config a tuner tried (``trace.autotune``, recorded by
:mod:`kernelscope.capture.tuning`), with its theoretical occupancy and limiter (the calculator of
:mod:`kernelscope.analysis.occupancy`, exact against Nsight Compute), how it ranked in its tuning,
and the launches that ran it: ``rep.autotune``.

A launch ran a candidate where :mod:`kernelscope.analysis.producers` identified the launch's
config as the candidate's; the tuner's own benchmark launches are told apart by the profiler
ranges the tuning watch puts around each timed config.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.trace.model import float_values

# The profiler range the tuning watch (kernelscope.capture.tuning) puts around each config Triton's
# autotuner times: "triton.autotune benchmark: <kernel> [<config>]". Launches inside one are the
# tuner's own; the others used the config it chose.
BENCH_RANGE = "triton.autotune benchmark"
# The range around each choice Inductor's max-autotune times in the process:
# "inductor max-autotune benchmark #<n>: <choice>" (the candidate's ``benchmark_range``).
INDUCTOR_BENCH_RANGE = "inductor max-autotune benchmark"
# Kernels a benchmark harness launches around the timed call: the L2 flush (``cache.zero_()``)
# and the zeroed output. Inside a choice's range, but not the choice's own work.
HARNESS_OPS = ("aten::zero_", "aten::fill_")
NOT_BENCHMARKED = ("not timed in this region's process (Inductor's autotune cache, or a benchmark subprocess): "
                   "no benchmark launches to link")
UNMARKED_INDUCTOR = ("not linked to launches: this recording does not mark max-autotune's benchmarks "
                     "(made before the watch put a range around each choice)")

AUTOTUNE_VIEW_COLUMNS = (
    "kernel", "producer", "tuner", "tuning", "op", "shape_key", "choice", "config", "num_warps", "num_stages",
    "num_ctas", "p50_ms", "p20_ms", "p80_ms", "vs_best", "spread_pct", "registers", "spills",
    "shared_mem_bytes", "resources_source", "threads_per_block", "theoretical_occupancy", "occupancy_limiter", "winner",
    "cached", "rank", "launches", "benchmark_launches", "kernel_rows", "compiled_kernel", "benchmark_range", "note")
# Where a Triton candidate's registers, spills and shared memory came from (kernelscope.capture.tuning).
FROM_VARIANT = "Triton's compiled variant (ptxas, as Triton reports it)"


def autotune_table(trace, kernels=None) -> pd.DataFrame:
    """One row per autotuning candidate (``trace.autotune``) with ``threads_per_block``,
    ``theoretical_occupancy`` and ``occupancy_limiter`` (our calculator, on the recording's
    device), ``vs_best`` (p50 over the winner's), ``spread_pct`` ((p80 - p20) / p50) and
    ``rank`` (1 = fastest of its tuning); each tuning's candidates fastest first, tunings in
    the order they ran. With ``kernels`` (``rep.kernels``, its producer columns), the launches
    that ran each candidate (see :func:`candidate_launches`).

    >>> autotune_table(ks.load("tuned.ksreport.json.gz").trace).head()    # doctest: +SKIP
    """
    from kernelscope.analysis.occupancy import occupancy
    from kernelscope.analysis.shapes import modelled_devices
    a = getattr(trace, "autotune", None)
    if a is None or not len(a):
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in AUTOTUNE_VIEW_COLUMNS})
    a = a.copy()
    # Tuners run on the device they compile for; the recording's first modelled device.
    devs = modelled_devices(trace.devices)
    cc, dev, _ = devs[min(devs)] if devs else (None, None, None)
    warps = a["num_warps"].astype("Int64")
    a["threads_per_block"] = warps * 32
    occ, lim = [], []
    memo: dict = {}
    for t, r, s in zip(a["threads_per_block"].tolist(), a["registers"].tolist(), a["shared_mem_bytes"].tolist()):
        key = (t, r, s)
        if key not in memo:
            memo[key] = (None, None)
            if cc is not None and t is not pd.NA and r is not pd.NA and t is not None and r is not None:
                try:
                    o = occupancy(cc, int(t), int(r), 0 if s is pd.NA or s is None else int(s), device=dev)
                    memo[key] = (o.occupancy, o.limiter)
                except (ValueError, TypeError):
                    pass
        occ.append(memo[key][0])
        lim.append(memo[key][1])
    a["theoretical_occupancy"] = pd.array([np.nan if x is None else x for x in occ], dtype="float64")
    a["occupancy_limiter"] = pd.Series(lim, dtype=object, index=a.index)
    p50 = a["p50_ms"].astype("float64")
    best = p50.groupby(a["tuning"]).transform("min")
    a["vs_best"] = p50 / best
    a["spread_pct"] = (a["p80_ms"].astype("float64") - a["p20_ms"].astype("float64")) / p50 * 100.0
    a["rank"] = p50.groupby(a["tuning"]).rank(method="min").astype("Int64")
    if "resources_source" not in a.columns:
        a["resources_source"] = pd.Series([None] * len(a), dtype=object, index=a.index)
    # Recordings from before the column: a Triton candidate's registers were only ever read from
    # its compiled variant.
    a.loc[a["resources_source"].isna() & a["registers"].notna() & (a["tuner"] == "triton.autotune"),
          "resources_source"] = FROM_VARIANT
    launches, bench, rows = candidate_launches(a, kernels, getattr(trace, "ops", None))
    a["launches"], a["benchmark_launches"] = launches, bench
    a["kernel_rows"] = pd.Series(rows, dtype=object, index=a.index)
    # A recording made before the watch's ranges: its Inductor choices cannot be linked (said so).
    unmarked = a["tuner"] == "inductor max-autotune"
    marked = "benchmark_range" in a.columns and bool(
        (a["benchmark_range"].notna() | a["compiled_kernel"].notna()
         | a["note"].astype(str).str.contains(NOT_BENCHMARKED, regex=False)).any())
    if not marked and unmarked.any() and kernels is not None:
        note = a["note"].astype(object)
        a["note"] = note.where(~unmarked, [UNMARKED_INDUCTOR if not isinstance(x, str) or not x else
                                           f"{x}; {UNMARKED_INDUCTOR}" for x in note])
    a = a.sort_values(["tuning", "rank"], kind="stable", na_position="last").reset_index(drop=True)
    return a[[c for c in AUTOTUNE_VIEW_COLUMNS if c in a.columns]]


def candidate_launches(a: pd.DataFrame, kernels, ops=None) -> tuple:
    """For each candidate of ``a`` (``trace.autotune``), the launches of ``kernels`` that ran it:
    (count, how many of them were the tuner's own benchmark, their row positions in ``kernels``).

    A Triton or Helion candidate ran where a launch of its kernel was identified as its config
    (``config``, from the compiled variant its registers and shared memory match) with its warps.
    The tuner's own launches are those inside the watch's :data:`BENCH_RANGE` ranges (their op,
    or their launch call within one of ``ops`` on its thread); a recording without them (made
    before the watch set them), and Helion's search, cannot tell those apart (None).
    An Inductor choice's benchmark is the launches inside its ``benchmark_range`` (its template
    runs there under a placeholder name, an extern as a cuBLAS kernel), less the harness's
    (:data:`HARNESS_OPS`); a winning template also ran where its ``compiled_kernel`` ran. Older
    recordings without the ranges: empty.

    >>> candidate_launches(pd.DataFrame({"kernel": [], "tuner": [], "config": [], "num_warps": []}), None)[0].tolist()
    []
    """
    n = len(a)
    count = pd.array([pd.NA] * n, dtype="Int64")
    bench = pd.array([pd.NA] * n, dtype="Int64")
    rows: list = [None] * n
    if kernels is None or not len(kernels) or not n:
        return count, bench, rows
    _tuner_launches(a, kernels, ops, count, bench, rows)
    if "benchmark_range" in a.columns and (a["tuner"] == "inductor max-autotune").any():
        _inductor_launches(a, kernels, ops, count, bench, rows)
    return count, bench, rows


def _range_of_launch(k, pos, ranges) -> np.ndarray:
    """For the launches ``pos`` of ``k``, the row (in ``ranges``, a frame of non-overlapping
    ops) of the range their launch call falls in on its thread; -1 outside every one."""
    out = np.full(len(pos), -1, dtype=np.int64)
    if ranges is None or not len(ranges) or not {"launch_start_us", "launch_tid"} <= set(k.columns):
        return out
    at = float_values(k["launch_start_us"])[pos]
    tid = k["launch_tid"].astype(str).to_numpy()[pos]
    ranges = ranges.reset_index(drop=True)
    for t, r in ranges.groupby(ranges["tid"].astype(str)):
        lo = r["start_us"].to_numpy(dtype=float)
        hi = lo + r["duration_us"].to_numpy(dtype=float)
        order = np.argsort(lo, kind="stable")
        lo, hi, idx = lo[order], hi[order], r.index.to_numpy()[order]
        mine = np.flatnonzero(tid == t)
        j = np.searchsorted(lo, at[mine], side="right") - 1
        inside = (j >= 0) & (at[mine] <= hi[np.maximum(j, 0)])
        out[mine[inside]] = idx[j[inside]]
    return out


def _tuner_launches(a, k, ops, count, bench, rows) -> None:
    """Triton's and Helion's candidates (see :func:`candidate_launches`), filled in place."""
    if "config" not in k.columns:
        return
    ok = k["config"].notna().to_numpy()
    if not ok.any():
        return
    pos = np.flatnonzero(ok)
    op = k["op"].to_numpy(dtype=object)[pos] if "op" in k.columns else np.full(len(pos), None, dtype=object)
    in_bench = np.array([isinstance(o, str) and o.startswith(BENCH_RANGE) for o in op], dtype=bool)
    marked = bool(in_bench.any())
    ranges = ops[ops["name"].astype(str).str.startswith(BENCH_RANGE)] if ops is not None and len(ops) else None
    if ranges is not None and len(ranges):
        marked = True
        in_bench |= _range_of_launch(k, pos, ranges) >= 0
    warps = k["num_warps"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)[pos]
    groups: dict = {}
    for i, (nm, cfg, w) in enumerate(zip(k["name"].to_numpy(dtype=object)[pos], k["config"].to_numpy(dtype=object)[pos], warps)):
        groups.setdefault((str(nm), str(cfg), int(w)), []).append(i)
    cw = a["num_warps"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
    for j, (kern, tuner, cfg) in enumerate(zip(a["kernel"].tolist(), a["tuner"].tolist(), a["config"].tolist())):
        if tuner not in ("triton.autotune", "helion autotune") or not isinstance(cfg, str) or not cfg:
            continue
        hit = groups.get((str(kern), cfg, int(cw[j])), [])
        count[j] = len(hit)
        if hit:
            rows[j] = [int(x) for x in pos[hit]]
        # Only Triton's autotuner times its configs inside the watch's ranges (Helion's search: not).
        bench[j] = int(in_bench[hit].sum()) if marked and tuner == "triton.autotune" else pd.NA


def _inductor_launches(a, k, ops, count, bench, rows) -> None:
    """Inductor's choices (see :func:`candidate_launches`), filled in place."""
    by_range: dict = {}
    if ops is not None and len(ops):
        ranges = ops[ops["name"].astype(str).str.startswith(INDUCTOR_BENCH_RANGE)]
        if len(ranges):
            pos = np.arange(len(k))
            if "op" in k.columns:     # the harness's own kernels inside the range are not the choice's
                pos = pos[~k["op"].isin(HARNESS_OPS).to_numpy()]
            where = _range_of_launch(k, pos, ranges)
            names = ranges["name"].astype(str).to_numpy()
            inside = where >= 0
            for r, p in zip(where[inside].tolist(), pos[inside].tolist()):     # in row order
                by_range.setdefault(names[r], []).append(p)
    kernel_names = k["name"].astype(object).to_numpy()
    compiled = {}
    for j, (tuner, rng, ck) in enumerate(zip(a["tuner"].tolist(), a["benchmark_range"].tolist(),
                                             a["compiled_kernel"].tolist())):
        if tuner != "inductor max-autotune" or not (isinstance(rng, str) or isinstance(ck, str)):
            continue
        mine = by_range.get(rng, []) if isinstance(rng, str) else []
        ran = []
        for name in (ck.split(", ") if isinstance(ck, str) and ck else []):
            if name not in compiled:
                compiled[name] = np.flatnonzero(kernel_names == name).tolist()
            ran.extend(compiled[name])
        count[j] = len(mine) + len(ran)
        bench[j] = len(mine) if isinstance(rng, str) else pd.NA
        if mine or ran:
            rows[j] = sorted(set(mine) | set(ran))
