"""Findings from a Triton kernel's compiled variant: the tuning watch's ``variants`` table holds
ptxas's registers and spills, the PTX's global loads by width and its tensor-core use, and the
bytes of the tensors of the function's first launch in the region (:mod:`kernelscope.capture.tuning`).

``uncoalesced_access``: only scalar global loads (Triton vectorizes the loads it can prove
contiguous), no tensor cores, and far less bandwidth than the device's; ``register_spills``: a
variant that spills registers to local memory. Both price the time a fix would save and say "up to"
where the figure is a bound; :func:`.find_all` keeps one finding per kernel.
"""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.findings.base import Finding, kernel_link, severity_for
from kernelscope.analysis.findings.kernels import (
    ACHIEVABLE_BW_SHARE,
    MAX_FINDINGS,
    MIN_SHARE,
    TRITON_PRODUCERS,
    devices_of,
    memory_us,
    variant_of_row,
    window_of,
)
from kernelscope.analysis.findings.tuning import MAX_REGISTERS
from kernelscope.units import fmt_bytes, fmt_us

# Achieved bandwidth (the tensors' bytes over the launch's time) under this share of the datasheet
# peak counts as far below it: a contiguous streaming kernel reaches 80-90%.
LOW_BW_SHARE = 0.5
# A large 16-bit GEMM reaches about this share of the datasheet tensor-core peak (cuBLAS: ~700 of
# 989 TFLOP/s on H100/H200 SXM): the time a config that fits its registers can hope for.
TENSOR_ACHIEVABLE_SHARE = 0.7
# Bytes per element assumed for a tensor-core kernel's tensors: Triton's tl.dot is fed 16-bit
# values most often (fp32 inputs, TF32, make the priced time lower; fp8 higher).
DOT_ELEMENT_BYTES = 2
# Where the uncoalesced finding of these rules comes from (Nsight Compute's names its own).
VARIANT_SOURCE = "kernelscope, from the compiled kernel's PTX and its tensors' bytes"


def _same_input(k, g) -> np.ndarray:
    """The launches of ``g`` whose grid is that of the function's first launch in the region: the
    variant's ``arg_bytes`` are the tensors of that launch, so other sizes are not priced."""
    first = k[k["name"] == g["name"].iloc[0]].sort_values("start_us").iloc[0]
    return ((g["grid_x"] == first["grid_x"]) & (g["grid_y"] == first["grid_y"])
            & (g["grid_z"] == first["grid_z"])).fillna(False).to_numpy(bool)


def _triton_groups(k, names):
    """The launches of each Triton/Inductor/Helion kernel among ``names``, per launch shape."""
    t = k[k["producer"].isin(TRITON_PRODUCERS) & k["name"].isin(names)] if "producer" in k.columns else k.iloc[:0]
    keys = ["name", "block_x", "registers_per_thread", "shared_mem_bytes"]
    for _, g in t.groupby([t[c].astype(str) for c in keys], sort=False):
        yield g


def uncoalesced_findings(report, tl=None) -> list:
    """Triton kernels with only scalar global loads, no tensor cores, and achieved bandwidth (their
    tensors' bytes over their time) under half the device's: their time minus those bytes at
    achievable bandwidth ("up to": the bytes are the tensors', read and written once).

    >>> f = uncoalesced_findings(ks.load("advice/triton_strided_read.before.ksreport.json.gz"))[0]
    >>> f.kind, f.evidence["loads_scalar"], round(f.cost_us)
    ('uncoalesced_access', 8, 96)
    """
    k, var = report.kernels, getattr(report.trace, "variants", None)
    if not len(k) or var is None or not len(var) or "loads_scalar" not in var.columns:
        return []
    scalar = var[(var["loads_scalar"].fillna(0) > 0) & (var["loads_vector"].fillna(0) == 0)]
    devs, window, out = devices_of(report), window_of(report, tl), []
    for g in _triton_groups(k, set(scalar["name"])):
        v = variant_of_row(report.trace, g.iloc[0])
        if not v or not v.get("loads_scalar") or v.get("loads_vector") or v.get("tensor_core") is not False \
                or not v.get("arg_bytes"):
            continue
        peaks = devs.get(int(g["device_index"].iloc[0]), (None, None))[1]
        if peaks is None or not peaks.memory_gbps:
            continue
        d = g["duration_us"].to_numpy(float)[_same_input(k, g)]
        nbytes = float(v["arg_bytes"])
        slow = d[nbytes / np.maximum(d, 1e-9) < LOW_BW_SHARE * peaks.memory_gbps * 1e3]
        ideal = memory_us(nbytes, peaks)
        cost = float(np.maximum(slow - ideal, 0.0).sum())
        if not len(slow) or cost < MIN_SHARE * window:
            continue
        out.append(_uncoalesced_finding(g, v, slow, nbytes, ideal, cost, peaks, window))
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS]


def _uncoalesced_finding(g, v, slow, nbytes, ideal, cost, peaks, window) -> Finding:
    name = str(g["name"].iloc[0])
    short = str(g["short_name"].iloc[0]) if "short_name" in g.columns else name
    n, dur = len(slow), float(slow.sum())
    gbps = nbytes * n / dur / 1e3
    return Finding(
        "uncoalesced_access", severity_for(cost, window),
        f"{short}: global loads are not vectorized and reach {gbps:,.0f} GB/s of {peaks.memory_gbps:,.0f}: "
        f"up to {fmt_us(cost)} at stake",
        f"{short}'s compiled PTX has {v['loads_scalar']} scalar global load(s) and no vector ones: Triton "
        "vectorizes the loads it can prove contiguous, so its accesses are strided or gathered, and each warp "
        f"fetches far more memory sectors than it uses. {n} launch{'es' * (n != 1)} took {fmt_us(dur)} for "
        f"{fmt_bytes(nbytes)} of tensors each: {gbps:,.0f} GB/s, {gbps / peaks.memory_gbps:.0%} of the "
        f"{peaks.memory_gbps:,.0f} GB/s datasheet bandwidth. Read in memory order they would take about "
        f"{fmt_us(ideal)} each (at {ACHIEVABLE_BW_SHARE:.0%} of it): up to {fmt_us(cost)} at stake. Make the fastest-moving "
        "index (tl.arange) walk the tensor's contiguous dimension (stride 1), or make the tensor contiguous "
        "in the order the kernel reads it (.contiguous() on the transposed view) once.",
        {"source": VARIANT_SOURCE, "kernel": name, "launches": n, "time_us": dur, "arg_bytes": nbytes,
         "achieved_gbps": gbps, "peak_gbps": peaks.memory_gbps, "ideal_us": ideal,
         "loads_scalar": int(v["loads_scalar"]), "loads_vector": int(v.get("loads_vector") or 0),
         "config": v.get("config")},
        cost,
        cause=f"{short} reads memory with scalar, strided loads: {gbps:,.0f} GB/s of {peaks.memory_gbps:,.0f}.",
        fix="Walk the contiguous dimension with tl.arange (stride 1), or make the tensor contiguous in the kernel's read order.",
        link=kernel_link([name], short))


def _spill_ideal_us(v, peaks) -> tuple:
    """(time per launch a config that fits its registers can hope for, how it was priced).

    A tensor-core kernel (an MMA in its PTX) is priced as a matrix product at the achievable share
    of the 16-bit tensor peak: an M x K by K x N product over tensors of S = MK + KN + MN elements
    does at most 2 (S/3)^1.5 FLOPs (AM-GM; square matrices reach it), S from the tensors' bytes. So
    the FLOPs are an upper bound, the time a fair floor; with the bytes at achievable bandwidth as a
    second floor. Other kernels: the spill traffic's share of all traffic, each spilled register
    stored and loaded once per thread (a lower bound: spills in a loop move more)."""
    nbytes = float(v.get("arg_bytes") or 0.0)
    bf16 = peaks.peak_tflops("bf16") if peaks else None
    if v.get("tensor_core") and nbytes and bf16:
        flops = 2.0 * (nbytes / DOT_ELEMENT_BYTES / 3.0) ** 1.5
        return max(flops / (TENSOR_ACHIEVABLE_SHARE * bf16 * 1e6), memory_us(nbytes, peaks)), "tensor_core_roof"
    return None, "spill_traffic"


def register_spills_findings(report, tl=None) -> list:
    """Triton kernels whose compiled variant spills registers to local memory, priced "up to":
    see :func:`_spill_ideal_us`.

    >>> f = register_spills_findings(ks.load("advice/triton_gemm_spilling.before.ksreport.json.gz"))[0]
    >>> f.kind, f.evidence["spills"], f.evidence["registers"], round(f.cost_us)
    ('register_spills', 790, 255, 2523)
    """
    k, var = report.kernels, getattr(report.trace, "variants", None)
    if not len(k) or var is None or not len(var) or "spills" not in var.columns:
        return []
    devs, window, out = devices_of(report), window_of(report, tl), []
    for g in _triton_groups(k, set(var.loc[var["spills"].fillna(0) > 0, "name"])):
        v = variant_of_row(report.trace, g.iloc[0])
        if not v or not v.get("spills"):
            continue
        peaks = devs.get(int(g["device_index"].iloc[0]), (None, None))[1]
        d = g["duration_us"].to_numpy(float)[_same_input(k, g)]
        ideal, basis = _spill_ideal_us(v, peaks)
        if ideal is None:
            if not v.get("arg_bytes"):
                continue
            blocks = float(g["grid_x"].fillna(1).iloc[0] * g["grid_y"].fillna(1).iloc[0] * g["grid_z"].fillna(1).iloc[0])
            spill = 2.0 * int(v["spills"]) * 4 * blocks * int(v.get("num_warps") or 4) * 32
            cost = float(d.sum()) * spill / (spill + float(v["arg_bytes"]))
        else:
            cost = float(np.maximum(d - ideal, 0.0).sum())
        if cost < MIN_SHARE * window:
            continue
        out.append(_spills_finding(report, g, v, d, ideal, basis, cost, window))
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS]


def _spills_finding(report, g, v, d, ideal, basis, cost, window) -> Finding:
    name = str(g["name"].iloc[0])
    short = str(g["short_name"].iloc[0]) if "short_name" in g.columns else name
    sp, regs = int(v["spills"]), int(v.get("registers") or g["registers_per_thread"].iloc[0])
    n, dur = len(d), float(d.sum())
    occ = g["theoretical_occupancy"].iloc[0] if "theoretical_occupancy" in g.columns else None
    at = getattr(report, "autotune", None)
    tuned = at is not None and "kernel" in at.columns and bool((at["kernel"].astype(str) == name).any())
    cap = (f"at the {MAX_REGISTERS}-register cap: its tile needs more values per thread than a thread holds"
           if regs >= MAX_REGISTERS else f"at {regs} registers per thread")
    roof = basis == "tensor_core_roof"
    price = (f"As a matrix product on tensor cores (its PTX has MMA instructions) over {fmt_bytes(float(v['arg_bytes']))} "
             f"of tensors it needs at most {fmt_us(ideal)} per launch at {TENSOR_ACHIEVABLE_SHARE:.0%} of the 16-bit "
             "tensor peak (the most FLOPs those tensors can hold)" if roof else
             "Priced as the spill traffic's share of its memory traffic, each spilled value stored and loaded once")
    bound = "up to" if roof else "about"
    occ_txt = f", theoretical occupancy {occ:.0%}" if occ is not None and occ == occ else ""
    return Finding(
        "register_spills", severity_for(cost, window),
        f"{short} spills {sp} registers per thread to local memory ({v.get('config') or 'its config'}): "
        f"{bound} {fmt_us(cost)} at stake",
        f"{short} ({v.get('config') or 'its config'}, num_warps={v.get('num_warps')}) uses {regs} registers per "
        f"thread and spills {sp} ({sp * 4:,} bytes per thread) {cap}{occ_txt}: every spilled value is a round "
        f"trip to local memory (L1/L2). {n} launch{'es' * (n != 1)} took {fmt_us(dur)}. {price}: {bound} "
        f"{fmt_us(cost)} at stake. Give each thread fewer values: more warps for the same tile, or a smaller "
        "tile (BLOCK sizes)" + (", among the autotuner's configs." if tuned else "."),
        {"kernel": name, "launches": n, "time_us": dur, "spills": sp, "spill_bytes_per_thread": sp * 4,
         "registers": regs, "config": v.get("config"), "num_warps": v.get("num_warps"),
         "theoretical_occupancy": None if occ is None or occ != occ else float(occ),
         "tensor_core": v.get("tensor_core"), "arg_bytes": v.get("arg_bytes"), "ideal_us": ideal, "priced_by": basis,
         "autotuned": bool(tuned)},
        cost,
        cause=f"{short} spills {sp} registers per thread to local memory ({regs} registers in use).",
        fix=("Add configs with more warps or a smaller tile to its autotune space." if tuned else
             "Use more warps for the same tile (e.g. num_warps=8) or a smaller tile."),
        link=kernel_link([name], short))
