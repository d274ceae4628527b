"""Findings from measured hardware counters (PM samples time-weighted per kernel).

Each rule reads the per-kernel columns of :mod:`kernelscope.analysis.counters` and says what the
counters show that timing alone cannot: a long kernel that keeps neither DRAM nor the tensor
cores busy is latency-bound (or leaves SMs empty); a tensor-core GEMM far below the pipe's peak;
a phase where the GPU only moves data between host and device while its SMs idle. Values rest
on GPU-wide samples: a kernel must span several samples (``COUNTER_MIN_SAMPLES``) to be judged.
"""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.counters import kernel_counters, region_means
from kernelscope.analysis.findings.base import Finding, severity_for
from kernelscope.analysis.intervals import Spans, covered_length, merge_intervals
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# A kernel name must hold 5% of kernel time to be worth a finding...
COUNTER_MIN_SHARE = 0.05
# ...and span at least 4 samples per launch (median), or its values mix with its neighbours'.
COUNTER_MIN_SAMPLES = 4
# Latency-bound: neither memory nor tensor pipes near busy.
LATENCY_MAX_DRAM_PCT = 30.0
LATENCY_MAX_TENSOR_PCT = 10.0
# Below this share of SM cycles active, the grid leaves most SMs empty.
UNDERFILLED_MAX_SM_ACTIVE_PCT = 50.0
# A tensor-core GEMM below this share of the tensor pipe's peak is far from it (well-shaped bf16
# GEMMs reach 90%+ on an H200: tests/data/counters).
GEMM_LOW_TENSOR_PCT = 60.0
# A GEMM with DRAM this busy is memory-bound (skinny or small), not latency-bound.
GEMM_MEMORY_BOUND_DRAM_PCT = 60.0
# Copy-bound: host<->device copies alone keep the GPU for 10% of its window with SMs idle.
COPY_BOUND_MIN_SHARE = 0.10
COPY_BOUND_MAX_SM_ACTIVE_PCT = 10.0
MAX_FINDINGS_PER_RULE = 3
_HOST_COPY_KINDS = ("HtoD", "DtoH")


def counter_findings(report, tl) -> list:
    """All counter-based findings of a report (none without samples).

    >>> [f.kind for f in counter_findings(live, live.timeline)]
    ['counters', 'latency_bound', 'gemm_below_tensor_peak', 'copy_bound']
    """
    m = report.metrics
    if m is None or not len(m):
        return []
    window = tl.window.get("active_us")
    out = [_summary(report)]
    kc = kernel_counters(report.kernels)
    total = float(report.kernels["duration_us"].sum())
    if len(kc) and total > 0:
        judged = kc[(kc["total_us"] / total >= COUNTER_MIN_SHARE) & (kc["counter_samples"] >= COUNTER_MIN_SAMPLES)]
        out += _latency_bound(judged, total, window)
        out += _gemm_below_peak(judged, total, window)
    out += _copy_bound(report, tl, window)
    return out


def _source(report) -> str:
    c = report.meta.get("counters") or {}
    iv = c.get("interval_us")
    return (f"{c.get('source') or 'CUPTI PM sampling'}" + (f", every {iv:.0f} us" if iv else ""))


def _summary(report) -> Finding:
    r = region_means(report.metrics)
    dev, vals = next(iter(r.items()))
    parts = [f"{label} {vals[c]:.0f}{unit}" for c, label, unit in
             (("sm_active_pct", "SMs active", "%"), ("tensor_pct", "tensor pipe", "%"),
              ("dram_pct", "DRAM", "%")) if vals.get(c) is not None]
    clock = vals.get("sm_clock_mhz")
    c = report.meta.get("counters") or {}
    detail = (f"{vals['samples']:,} samples ({_source(report)}, GPU-wide, no kernel replay) over "
              f"{fmt_us(vals['covered_us'])}. Each kernel's sm_active_pct, tensor_pct, dram_pct and "
              "dram_gbps are the samples time-weighted over its interval; kernels shorter than a few "
              "samples are mixed with what ran beside them (counter_samples says how many a value rests "
              "on). Sampling may lock the GPU clocks, which shifts kernel durations"
              + (f"; the SM clock ran at {clock:.0f} MHz while sampling." if clock else "."))
    if c.get("capped"):
        detail += f" Sampling was capped at {c.get('max_samples'):,} samples (see the notes)."
    return Finding("counters", "info", "Hardware counters over the region: " + ", ".join(parts), detail,
                   {"device_index": dev, **vals, "source": c.get("source"), "interval_us": c.get("interval_us"),
                    "capped": bool(c.get("capped"))})


def _name(r) -> str:
    return str(r["short_name"]) if "short_name" in r and r["short_name"] == r["short_name"] else str(r["name"])



def _latency_bound(kc, total, window) -> list:
    out = []
    for _, r in kc.iterrows():
        dram, tensor, active = num(r.get("dram_pct")), num(r.get("tensor_pct")), num(r.get("sm_active_pct"))
        if dram is None or tensor is None or dram >= LATENCY_MAX_DRAM_PCT or tensor >= LATENCY_MAX_TENSOR_PCT:
            continue
        if r.get("tensor_cores") is True and tensor < GEMM_LOW_TENSOR_PCT:
            continue   # a tensor-core GEMM: the GEMM rule says it better
        busiest = max(dram, tensor) / 100.0
        cost = float(r["total_us"]) * (1.0 - busiest)
        name = _name(r)
        nums = (f"DRAM {dram:.0f}% and tensor pipe {tensor:.0f}% of peak"
                + (f", SMs active {active:.0f}%" if active is not None else ""))
        if active is not None and active < UNDERFILLED_MAX_SM_ACTIVE_PCT:
            title = f"{name} leaves most SMs idle: {nums}"
            why = (f"Only {active:.0f}% of SM cycles had a warp resident while it ran: its grid has too "
                   "few blocks for the GPU (or it waits on a single block). Give it more parallel work "
                   "(more blocks, a larger batch, split-K), or run other work beside it on another stream.")
        else:
            title = f"{name} is latency-bound: {nums}"
            why = ("The SMs hold warps, but neither memory bandwidth nor the tensor cores are busy: warps "
                   "wait on dependencies, synchronization or the scheduler. Unless it is FP32/integer "
                   "arithmetic-bound (not sampled here), more independent work per thread (ILP), fewer "
                   "barriers or higher occupancy help; --stalls says what the warps wait on.")
        out.append(Finding(
            "latency_bound", severity_for(cost, window), title,
            f"{int(r['launches'])} launch{'es' * (int(r['launches']) != 1)} took {fmt_us(r['total_us'])} "
            f"({r['total_us'] / total:.0%} of kernel time); measured by PM sampling over "
            f"{r['counter_samples']:.0f} samples per launch. " + why,
            {"kernel": r["name"], "launches": int(r["launches"]), "time_us": float(r["total_us"]),
             "dram_pct": dram, "tensor_pct": tensor, "sm_active_pct": active,
             "counter_samples": float(r["counter_samples"]),
             "cost_note": "upper bound: the kernel's time less what its busiest unit accounts for"},
            cost, cause=f"{name} runs with {nums}: neither memory nor the tensor cores are busy.",
            fix=("Give it more parallel work (more blocks, a larger batch, split-K)."
                 if active is not None and active < UNDERFILLED_MAX_SM_ACTIVE_PCT
                 else "More independent work per thread, fewer barriers or higher occupancy; --stalls says what warps wait on."),
            link={"view": "kernels", "names": [str(r["name"])], "label": f"kernel table: {name}"}))
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS_PER_RULE]


def _gemm_below_peak(kc, total, window) -> list:
    if "tensor_cores" not in kc.columns:
        return []
    out = []
    for _, r in kc[kc["tensor_cores"] == True].iterrows():  # noqa: E712 - a nullable column
        tensor, dram, active = num(r.get("tensor_pct")), num(r.get("dram_pct")), num(r.get("sm_active_pct"))
        if tensor is None or tensor >= GEMM_LOW_TENSOR_PCT:
            continue
        cost = float(r["total_us"]) * (1.0 - tensor / 100.0)
        name = _name(r)
        if dram is not None and dram >= GEMM_MEMORY_BOUND_DRAM_PCT:
            why = (f"DRAM ran at {dram:.0f}% of peak meanwhile: the GEMM is memory-bound (a skinny or "
                   "small matrix, e.g. a batch of a few rows), so the tensor cores wait on data. Batch "
                   "more rows per call, fuse it with its neighbours, or keep the operands in a lower "
                   "precision.")
            fix = "Batch more rows per call, fuse it with its neighbours, or use a lower precision."
        elif active is not None and active < UNDERFILLED_MAX_SM_ACTIVE_PCT:
            why = (f"Only {active:.0f}% of SM cycles were active: the grid has too few tiles for the GPU "
                   "(a small problem or a large tile); see its waves. Larger batches or split-K help.")
            fix = "Larger batches or split-K, so the grid fills the GPU."
        else:
            why = ("The SMs were busy but the tensor pipe was not: tile quantization, a poor shape "
                   "(dimensions not multiples of 64/128), or a slow algorithm choice; try padding the "
                   "shapes or torch.compile's max-autotune.")
            fix = "Pad the shapes to multiples of 64/128, or try torch.compile's max-autotune."
        out.append(Finding(
            "gemm_below_tensor_peak", severity_for(cost, window),
            f"{name} keeps the tensor cores busy {tensor:.0f}% of their peak",
            f"{int(r['launches'])} launch{'es' * (int(r['launches']) != 1)} took {fmt_us(r['total_us'])} "
            f"({r['total_us'] / total:.0%} of kernel time); measured by PM sampling "
            "(sm__pipe_tensor_cycles_active), where a well-shaped GEMM reaches 90%+. " + why,
            {"kernel": r["name"], "launches": int(r["launches"]), "time_us": float(r["total_us"]),
             "tensor_pct": tensor, "dram_pct": dram, "sm_active_pct": active,
             "counter_samples": float(r["counter_samples"])},
            cost, cause=f"{name} keeps the tensor pipe {tensor:.0f}% busy, where a well-shaped GEMM reaches 90%+.",
            fix=fix,
            link={"view": "kernels", "names": [str(r["name"])], "label": f"kernel table: {name}"}))
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS_PER_RULE]


def _copy_bound(report, tl, window) -> list:
    c = report.copies
    if not len(c) or not window:
        return []
    host = c[(c["kind"] == "memcpy") & c["copy_kind"].isin(_HOST_COPY_KINDS)]
    if not len(host):
        return []
    acts = tl.activities
    kern = acts[acts["kind"] == "kernel"]
    m = report.metrics
    out = []
    for dev, hc in host.groupby("device_index", sort=False):
        hs = hc["start_us"].to_numpy(float)
        he = hs + hc["duration_us"].to_numpy(float)
        cs, ce = merge_intervals(hs, he)
        dk = kern[kern["device_index"] == dev]
        ks_, ke = merge_intervals(dk["start_us"], dk["end_us"])
        # copy-only time: the host-copy union less what overlaps any kernel
        ov = covered_length(ks_, ke, cs, ce) if len(ks_) else np.zeros(len(cs))
        only = np.asarray(ce - cs) - np.asarray(ov)
        copy_only = float(only.sum())
        if copy_only < COPY_BOUND_MIN_SHARE * window:
            continue
        from kernelscope.analysis.counters import interval_means
        md = interval_means(m, [dev] * len(cs), cs, ce, ["sm_active_pct", "dram_pct"])
        w = np.asarray(ce - cs)
        act = md["sm_active_pct"].to_numpy()
        ok = np.isfinite(act)
        if not ok.any():
            continue
        active = float((act[ok] * w[ok]).sum() / w[ok].sum())
        if active >= COPY_BOUND_MAX_SM_ACTIVE_PCT:
            continue
        d = md["dram_pct"].to_numpy()
        dram = float((np.nan_to_num(d) * w).sum() / w.sum())
        nbytes = float(hc["bytes"].astype(float).fillna(0).sum())
        t = float(hc["duration_us"].sum())
        gbps = nbytes / (t * 1e3) if t > 0 else float("nan")
        kinds = ", ".join(f"{k} {_gb(g['bytes'].astype(float).fillna(0).sum())}"
                          for k, g in hc.groupby("copy_kind"))
        phases = [{"start_us": float(a), "end_us": float(b), "copy_only_us": float(o)}
                  for a, b, o in sorted(zip(cs, ce, only), key=lambda x: -x[2])[:5]]
        # Its time: the copies' union less the kernels' (the copy findings hold the same copies).
        name = str(hc["device"].iloc[0]) if "device" in hc.columns else dev
        spans = Spans.of(name, cs, ce) - Spans.of(name, ks_, ke)
        out.append(Finding(
            "copy_bound", severity_for(copy_only, window),
            f"Copy-bound phase: for {fmt_us(copy_only)} ({copy_only / window:.0%} of the active window) the "
            f"GPU only moved data to or from the host while its SMs were {active:.0f}% active",
            f"Host-device copies ({kinds}) ran at {gbps:.1f} GB/s with no kernel beside them; PM sampling "
            f"measured SMs {active:.0f}% active and DRAM {dram:.0f}% busy meanwhile, so the GPU waited on "
            "the host link. Overlap the copies with compute (pinned memory, non_blocking=True, a side "
            "stream; see the copy findings), move less data, or keep it on the GPU.",
            {"device_index": int(dev), "copy_only_us": copy_only, "sm_active_pct": active, "dram_pct": dram,
             "bytes": nbytes, "gbps": gbps, "phases": phases},
            copy_only,
            cause=f"Host-device copies at {gbps:.1f} GB/s ran with no kernel beside them; the SMs waited on the host link.",
            fix="Overlap the copies with compute (pinned memory, non_blocking=True, a side stream), or move less data.",
            link={"view": "timeline", "device": str(hc["device"].iloc[0]) if "device" in hc.columns else None,
                  "start_us": phases[0]["start_us"], "end_us": phases[0]["end_us"],
                  "label": f"timeline: the longest copy-only phase ({fmt_us(phases[0]['copy_only_us'])})"},
            spans=spans))
    return out


def _gb(n) -> str:
    n = float(n)
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
