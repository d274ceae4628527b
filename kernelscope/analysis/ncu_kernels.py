"""What Nsight Compute measured about each launch, in the terms of one question: why is this
kernel slow?

Pure functions over the tables of an Nsight Compute report (:mod:`kernelscope.trace.ncu_rep`,
one row per launch): where the launch sits on the roofline, how well its memory accesses use
what they fetch (coalescing), which stall reasons dominate, which source lines the warps sat on,
and Nsight Compute's own rule results as findings. Every figure here is Nsight Compute's
measurement or a ratio of its measurements; the thresholds that turn them into words are named
below.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kernelscope.analysis.peaks import attainable
from kernelscope.analysis.stalls import NOT_STALLS, empty_stalls, explain, normalize_reason, stall_shares
from kernelscope.jsonable import num

# The source every figure read from an Nsight Compute report names (stall rows, roofline FLOPs).
NCU_SOURCE = "Nsight Compute"
# A warp load uses what it fetches when its 32-byte sectors are full: below half the bytes
# used (16 of 32) the access is strided or scattered.
COALESCED_MIN_EFFICIENCY = 0.5
# ... or when the L2 sees more sectors than the accessed bytes need (ncu's "excessive sectors").
EXCESS_SECTORS_MAX = 1.5
# Speed of light: a unit above 60% of its peak is what bounds the kernel; both below 30% means
# the kernel waits (latency, too little parallelism) rather than works.
SOL_BOUND_PCT = 60.0
SOL_LATENCY_PCT = 30.0
ADVICE_TYPES = ("optimization", "warning", "error")
HOTSPOTS_PER_LAUNCH = 5

LEVELS = ("dram", "l2", "l1")
LEVEL_LABELS = {"dram": "DRAM", "l2": "L2", "l1": "L1"}
PRECISION_LABELS = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16 (CUDA cores)",
                    "tensor_fp64": "FP64 tensor", "tensor_tf32": "TF32 tensor", "tensor_bf16": "BF16 tensor",
                    "tensor_fp16": "FP16 tensor", "tensor_fp8": "FP8 tensor", "tensor_int8": "INT8 tensor"}


def stalls_table(stall_counts: pd.DataFrame) -> pd.DataFrame:
    """``report.stalls`` rows (one per launch, shares per reason) from the reader's counts.

    >>> c = pd.DataFrame({"id": [0], "kernel_name": ["k"], "long_scoreboard": [3.0], "selected": [1.0]})
    >>> row = stalls_table(c).iloc[0]
    >>> row["name"], int(row["launch"]), row["top_stall"], float(row["long_scoreboard"])
    ('k', 0, 'long_scoreboard', 1.0)
    """
    if stall_counts is None or not len(stall_counts):
        return empty_stalls()
    counts = stall_counts.rename(columns={"id": "launch", "kernel_name": "name"})
    return stall_shares(counts, keys=["name", "launch"], source=NCU_SOURCE)


def stall_bars(stalls: pd.DataFrame, launch, n: int = 8) -> list[dict]:
    """The largest stall shares of one launch, each with what it means and what usually fixes it.

    >>> s = stalls_table(pd.DataFrame({"id": [0], "kernel_name": ["k"], "barrier": [1.0]}))
    >>> stall_bars(s, 0)[0]["reason"], stall_bars(s, 0)[0]["share"]
    ('barrier', 1.0)
    """
    if stalls is None or not len(stalls) or "launch" not in stalls.columns:
        return []
    rows = stalls[stalls["launch"] == launch]
    if not len(rows):
        return []
    r = rows.iloc[0]
    skip = {"name", "launch", "source", "samples", "top_stall", "correlation", "device", "kernel_id", "launches"}
    shares = [(c, float(r[c])) for c in stalls.columns if c not in skip
              and isinstance(r[c], (int, float, np.floating)) and r[c] == r[c] and r[c] > 0]
    shares.sort(key=lambda x: -x[1])
    out = []
    for reason, share in shares[:n]:
        e = explain(reason)
        out.append({"reason": reason, "title": e.title, "meaning": e.meaning, "fix": e.fix, "share": share})
    return out


# -- roofline --------------------------------------------------------------------------------------
def measured_roofline(launches: pd.DataFrame) -> pd.DataFrame:
    """One row per launch, precision with work, and memory level: achieved FLOP/s against the
    peak, bytes/s against the level's bandwidth, intensity, the attainable roof and which roof
    binds. ``dominant`` marks the precision doing the most work (the kernel's dot).

    >>> rl = measured_roofline(ncu.ncu)
    >>> rl[rl.dominant & (rl.level == "dram")][["kernel_name", "precision", "roof_share"]]
          kernel_name    precision  roof_share
    0      add_kernel         fp32      0.8509
    3  strided_kernel         fp32      0.6915
    6   matmul_kernel  tensor_fp16      0.6207
    """
    from kernelscope.trace.ncu.report import PRECISIONS
    cols = ["id", "kernel_name", "precision", "level", "flops_per_s", "peak_flops_per_s", "bytes_per_s",
            "peak_bytes_per_s", "bytes", "intensity", "ridge", "attainable_flops_per_s", "roof_share", "bound",
            "dominant"]
    if launches is None or not len(launches) or "fp32_flops_per_s" not in launches.columns:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    peaks = report_peaks(launches)
    rows = []
    for r in launches.to_dict("records"):
        dev_peaks = peaks.get(_device_of(r), {})
        work = {p: _f(r.get(f"{p}_flops_per_s")) for p in PRECISIONS}
        work = {p: v for p, v in work.items() if v == v and v > 0}
        if not work:
            continue
        top = max(work, key=lambda p: work[p])
        for p, flops in work.items():
            peak = dev_peaks.get(f"{p}_peak_flops_per_s", np.nan)
            for level in LEVELS:
                bps, bw = _f(r.get(f"{level}_bytes_per_s")), dev_peaks.get(f"{level}_peak_bytes_per_s", np.nan)
                inten = flops / bps if bps > 0 else np.nan
                ridge = peak / bw if peak > 0 and bw > 0 else np.nan
                attain, bound = np.nan, None      # no bytes at this level, or no peaks: no point on its roof
                if ridge == ridge and inten == inten:
                    a, b = attainable(inten, peak, bw)
                    attain, bound = float(a), str(b)
                rows.append({"id": r["id"], "kernel_name": r["kernel_name"], "precision": p, "level": level,
                             "flops_per_s": flops, "peak_flops_per_s": peak, "bytes_per_s": bps,
                             "peak_bytes_per_s": bw, "bytes": _f(r.get(f"{level}_bytes")), "intensity": inten,
                             "ridge": ridge, "attainable_flops_per_s": attain,
                             "roof_share": flops / attain if attain == attain and attain > 0 else np.nan,
                             "bound": bound, "dominant": p == top})
    return pd.DataFrame(rows, columns=cols)


def report_peaks(launches: pd.DataFrame) -> dict:
    """One ceiling per device and precision (and per memory level) for a whole report: the
    median over its launches of Nsight Compute's peak at the clocks it measured for each (for a
    precision, over the launches that did work in it).

    ncu prices each launch's peak at that launch's own clock, so two launches of one report
    read 965.5 and 1,012 TFLOP/s FP16 tensor; a chart with one roof per precision, and a deep
    dive beside it, must use one number. Keys are ``{precision}_peak_flops_per_s`` and
    ``{level}_peak_bytes_per_s``.

    >>> t = pd.DataFrame({"device": [0, 0, 0], "tensor_fp16_peak_flops_per_s": [965.5e12, 1012e12, 1067e12],
    ...                   "tensor_fp16_flops_per_s": [214e12, 30e12, 0.0]})
    >>> report_peaks(t)[0]["tensor_fp16_peak_flops_per_s"] / 1e12
    988.75
    """
    from kernelscope.trace.ncu.report import PRECISIONS
    cols = [f"{p}_peak_flops_per_s" for p in PRECISIONS] + [f"{lv}_peak_bytes_per_s" for lv in LEVELS]
    cols = [c for c in cols if c in launches.columns]
    if launches is None or not len(launches) or not cols:
        return {}
    dev = [_device_of(r) for r in launches[["device"]].to_dict("records")] if "device" in launches.columns \
        else [None] * len(launches)
    t = launches[cols].apply(pd.to_numeric, errors="coerce").assign(_dev=dev)
    # A precision's roof: the median over the launches that did work in it (the dots under it),
    # else over every launch; a memory level's over every launch.
    work = {}
    for p in PRECISIONS:
        c = f"{p}_flops_per_s"
        if f"{p}_peak_flops_per_s" in cols and c in launches.columns:
            work[f"{p}_peak_flops_per_s"] = pd.to_numeric(launches[c], errors="coerce").fillna(0).to_numpy() > 0
    out = {}
    for d, g in t.groupby("_dev", dropna=False, sort=False):
        peaks = {}
        for c in cols:
            v = g[c]
            did = work.get(c)
            if did is not None and did[g.index.map(t.index.get_loc)].any():
                v = v[did[g.index.map(t.index.get_loc)]]
            m = v.median(skipna=True)
            if m == m and m > 0:
                peaks[c] = float(m)
        out[d] = peaks
    return out


def _device_of(r: dict):
    d = _f(r.get("device"))
    return int(d) if d == d else None


def roofline_rows(report) -> list[dict]:
    """Measured rows for ``report.roofline`` (analysis.roofline's columns): one per launch that
    Nsight Compute measured, its dominant precision at DRAM. Kineto launches merged with an ncu
    launch take the ncu launch's figures."""
    ncu = getattr(report, "ncu", None)
    if ncu is None or not len(ncu) or "fp32_flops_per_s" not in ncu.columns:
        return []
    rl = measured_roofline(ncu)
    rl = rl[rl["dominant"] & (rl["level"] == "dram")]
    if not len(rl):
        return []
    k = report.kernels
    by_id = {}
    if "ncu_id" in k.columns:
        hit = k[k["ncu_id"].notna()]
        for row in hit.to_dict("records"):
            by_id.setdefault(int(row["ncu_id"]), row)
    dur = dict(zip(ncu["id"].astype(int), pd.to_numeric(ncu["duration_ns"], errors="coerce") / 1e3))
    out = []
    for r in rl.to_dict("records"):
        kr = by_id.get(int(r["id"]))
        if kr is None:
            continue   # merged onto a Kineto report that did not record this launch
        d = float(dur.get(int(r["id"]), np.nan))
        op_index = kr.get("op_index")
        out.append({
            "op": kr.get("op"), "op_index": None if op_index is None or op_index is pd.NA else op_index,
            "kernel": kr.get("name"), "short_name": kr.get("short_name"), "device": kr.get("device"),
            "precision": r["precision"], "kernels": 1, "duration_us": d,
            "flops": r["flops_per_s"] * d * 1e-6, "bytes": r["bytes"], "flops_source": NCU_SOURCE,
            "intensity": r["intensity"], "achieved_tflops": r["flops_per_s"] / 1e12,
            "achieved_gbps": r["bytes_per_s"] / 1e9, "peak_tflops": r["peak_flops_per_s"] / 1e12,
            "peak_gbps": r["peak_bytes_per_s"] / 1e9,
            "attainable_tflops": r["attainable_flops_per_s"] / 1e12, "roof_share": r["roof_share"],
            "bound": r["bound"],
            "peaks_source": "Nsight Compute (the device's peaks at the measured clocks, median over the report's launches)"})
    return out


# -- memory ----------------------------------------------------------------------------------------
def memory_access(launches: pd.DataFrame) -> pd.DataFrame:
    """Per launch: DRAM throughput, L1 and L2 hit rates, sectors per request and the share of
    fetched bytes used, for global loads and stores, and a plain verdict when access is poor.

    >>> m = memory_access(ncu.ncu)
    >>> m.set_index("kernel_name").loc["strided_kernel", "verdict"][:4]
    'poor'
    """
    cols = ["id", "kernel_name", "dram_throughput_pct", "l1_hit_rate_pct", "l2_hit_rate_pct",
            "load_sectors_per_request", "store_sectors_per_request", "load_efficiency", "store_efficiency",
            "excess_sectors", "verdict"]
    if launches is None or not len(launches) or "global_load_sectors" not in launches.columns:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    rows = []
    for r in launches.to_dict("records"):
        ld = _ratio(r.get("global_load_sectors"), r.get("global_load_requests"))
        st = _ratio(r.get("global_store_sectors"), r.get("global_store_requests"))
        eff_ld = _efficiency(r.get("global_load_bytes_per_sector"), r.get("global_load_sectors"))
        eff_st = _efficiency(r.get("global_store_bytes_per_sector"), r.get("global_store_sectors"))
        excess = _ratio(r.get("l2_global_sectors"), r.get("l2_global_sectors_ideal"))
        rows.append({"id": r["id"], "kernel_name": r["kernel_name"],
                     "dram_throughput_pct": _f(r.get("dram_throughput_pct")),
                     "l1_hit_rate_pct": _f(r.get("l1_per_tex_hit_rate_pct")),
                     "l2_hit_rate_pct": _f(r.get("l2_hit_rate_pct")),
                     "load_sectors_per_request": ld, "store_sectors_per_request": st,
                     "load_efficiency": eff_ld, "store_efficiency": eff_st, "excess_sectors": excess,
                     "verdict": access_verdict(eff_ld, eff_st, excess, ld, st)})
    verdicts = [r.pop("verdict") for r in rows]
    out = pd.DataFrame(rows, columns=cols[:-1])
    out["verdict"] = pd.Series(verdicts, index=out.index, dtype=object)   # None where fine, not NaN
    return out


def access_verdict(load_eff, store_eff, excess, load_spr=np.nan, store_spr=np.nan) -> str | None:
    """A plain sentence when global memory access wastes what it fetches, else None.

    >>> access_verdict(0.125, 1.0, 4.5, 32.0, 16.0)[:40]
    'poor: global loads use 12% of the bytes '
    >>> access_verdict(1.0, 1.0, 1.0) is None
    True
    """
    parts = []
    for what, eff, spr in (("loads", load_eff, load_spr), ("stores", store_eff, store_spr)):
        if eff == eff and eff < COALESCED_MIN_EFFICIENCY:
            per = f", {spr:.1f} sectors per request" if spr == spr else ""
            parts.append(f"global {what} use {eff:.0%} of the bytes they fetch ({eff * 32:.0f} of every 32-byte "
                         f"sector{per})")
    if not parts and excess == excess and excess > EXCESS_SECTORS_MAX:
        parts.append(f"the L2 moves {excess:.1f}x the sectors the accessed bytes need")
    if not parts:
        return None
    return ("poor: " + "; ".join(parts) + ". Neighbouring threads should touch neighbouring addresses "
            "(coalesced access): change the indexing or layout, or stage the data through shared memory.")


def speed_of_light(row) -> dict:
    """Compute and memory throughput (% of peak) of one launch and what they say.

    >>> speed_of_light({"compute_sm_throughput_pct": 5.8, "memory_throughput_pct": 85.1})["verdict"]
    'memory-bound: memory throughput is at 85% of peak, compute at 6%'
    """
    c, m = _f(row.get("compute_sm_throughput_pct")), _f(row.get("memory_throughput_pct"))
    if c != c or m != m:
        verdict = None
    elif max(c, m) >= SOL_BOUND_PCT:
        kind = "compute" if c >= m else "memory"
        verdict = (f"{kind}-bound: {kind} throughput is at {max(c, m):.0f}% of peak, "
                   f"{'memory' if kind == 'compute' else 'compute'} at {min(c, m):.0f}%")
    elif max(c, m) < SOL_LATENCY_PCT:
        verdict = (f"latency-bound: compute ({c:.0f}%) and memory ({m:.0f}%) are both far from peak; the "
                   "warps are waiting (see the stall reasons) or there are too few of them")
    else:
        verdict = f"no unit is saturated: compute at {c:.0f}%, memory at {m:.0f}% of peak"
    if c != c or m != m:
        bound = None
    elif max(c, m) >= SOL_BOUND_PCT:
        bound = "compute" if c >= m else "memory"
    else:
        bound = "latency" if max(c, m) < SOL_LATENCY_PCT else "balanced"
    return {"compute_pct": c, "memory_pct": m,
            "dram_pct": _f(row.get("dram_throughput_pct")), "l2_pct": _f(row.get("l2_cache_throughput_pct")),
            "l1_pct": _f(row.get("l1_per_tex_cache_throughput_pct")), "verdict": verdict, "bound": bound}


def roofline_verdict(sol: dict, dot: dict | None, label: str = "") -> str | None:
    """The roofline panel's sentence for one launch, which agrees with the speed of light.

    The speed of light decides what bounds a launch (it measures every unit's throughput); the
    roofline places the launch by its DRAM bytes only. Where the two disagree (a cuDNN conv
    whose DRAM intensity is past the ridge while L1 runs at 85% of peak), the sentence says why
    instead of giving a second verdict.

    >>> sol = {"bound": "memory", "compute_pct": 44.3, "memory_pct": 69.2, "dram_pct": 12.7, "l2_pct": 24.7,
    ...        "l1_pct": 84.6}
    >>> dot = {"intensity": 349.7, "ridge": 200.8, "roof_share": 0.222, "bound": "compute"}
    >>> v = roofline_verdict(sol, dot, "FP16 tensor")
    >>> v[:81]
    'memory-bound (speed of light: memory at 69% of peak, L1/TEX the busiest at 85%). '
    >>> v[81:].startswith("At DRAM: 349.7 FLOP/byte, right of the ridge (200.8), 22.2% of the attainable")
    True
    >>> v.endswith("the DRAM roofline counts DRAM bytes only, so it puts the launch on the compute side.")
    True
    """
    if not dot or dot.get("intensity") is None or dot["intensity"] != dot["intensity"]:
        return None
    sol = sol or {}
    inten, ridge, share = dot["intensity"], dot.get("ridge"), dot.get("roof_share")
    side = "right" if ridge is not None and ridge == ridge and inten >= ridge else "left"
    bound, model = sol.get("bound"), dot.get("bound")
    units = {"DRAM": sol.get("dram_pct"), "L2": sol.get("l2_pct"), "L1/TEX": sol.get("l1_pct")}
    units = {k: v for k, v in units.items() if v is not None and v == v}
    busiest = max(units, key=lambda u: units[u]) if units else None
    if bound == "memory" and busiest:
        head = (f"memory-bound (speed of light: memory at {sol.get('memory_pct', float('nan')):.0f}% of peak, "
                f"{busiest} the busiest at {units[busiest]:.0f}%)")
    elif bound == "compute":
        head = f"compute-bound (speed of light: compute at {sol.get('compute_pct', float('nan')):.0f}% of peak)"
    elif bound == "latency":
        head = "latency-bound (speed of light: no unit near its peak)"
    elif bound == "balanced":
        head = "no unit saturated (speed of light)"
    else:
        head = f"{model}-bound at DRAM (no speed-of-light figures)" if model else "-"
    def fpb(x):     # FLOP/byte: small intensities keep their digits (0.0208, not 0.0)
        return f"{x:,.1f}" if abs(x) >= 10 else f"{x:.3g}"
    text = (f"{head}. At DRAM: {fpb(inten)} FLOP/byte, {side} of the ridge"
            + (f" ({fpb(ridge)})" if ridge is not None and ridge == ridge else "")
            + (f", {share:.1%} of the attainable {label} roof" if share is not None and share == share else ""))
    if bound in ("compute", "memory") and model and model != bound:
        text += (": the DRAM roofline counts DRAM bytes only, so it puts the launch on the compute side"
                 if model == "compute" else
                 ": its DRAM traffic alone would bound it, but the SM's pipes are the busiest unit")
    return text + "."


# -- source hot spots -----------------------------------------------------------------------------
def source_hotspots(samples: pd.DataFrame, sources: pd.DataFrame | None = None,
                    n: int = HOTSPOTS_PER_LAUNCH) -> pd.DataFrame:
    """The lines (CUDA or Triton ``file:line``) the warps of each launch were sampled on most;
    for kernels without line info, the hottest instructions. ``share`` is of the launch's samples.

    >>> from kernelscope.trace.ncu.report import read_ncu_report
    >>> r = read_ncu_report("ncu_rep/triton_kernels.ncu-rep.xz")
    >>> hs = source_hotspots(r.samples, r.sources)
    >>> hs[["location", "share", "top_stall"]].head(3)
               location   share         top_stall
    0  record_ncu.py:48  0.8912   long_scoreboard
    1  record_ncu.py:44  0.0646  short_scoreboard
    2  record_ncu.py:46  0.0215      mio_throttle
    """
    cols = ["id", "rank", "location", "file", "line", "pc", "samples", "share", "top_stall", "top_stall_share",
            "text"]
    if samples is None or not len(samples):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    text: dict[tuple, str] = {}      # (launch, file, line): a key of no file or line finds nothing
    if sources is not None and len(sources):
        text = {(int(i), f, int(ln)): t for i, f, ln, t in sources[["id", "file", "line", "text"]].itertuples(index=False)}
    out = []
    for lid, g in samples.groupby("id", sort=True):
        total = float(g["samples"].sum())
        if total <= 0:
            continue
        by_line = g["file"].notna().any()
        keys = list(zip(g["file"], g["line"])) if by_line else list(zip([None] * len(g), g["pc"]))
        agg: dict = {}
        for key, samp, reasons, pc in zip(keys, g["samples"], g["reasons"], g["pc"]):
            a = agg.setdefault(key, {"samples": 0.0, "reasons": {}, "pc": pc, "pc_samples": -1.0})
            a["samples"] += float(samp)
            if float(samp) > a["pc_samples"]:
                a["pc"], a["pc_samples"] = pc, float(samp)
            for r, c in (reasons or {}).items():
                r = normalize_reason(r)
                a["reasons"][r] = a["reasons"].get(r, 0.0) + c
        ranked = sorted(agg.items(), key=lambda kv: -kv[1]["samples"])[:n]
        for rank, (key, a) in enumerate(ranked, 1):
            stall = {r: c for r, c in a["reasons"].items() if r not in NOT_STALLS}
            top = max(stall, key=lambda r: stall[r]) if stall else None
            f, ln = (key if by_line else (None, None))
            loc = f"{Path(str(f)).name}:{ln}" if by_line else f"PC 0x{int(a['pc']):x}"
            out.append({"id": int(lid), "rank": rank, "location": loc, "file": f, "line": ln,
                        "pc": int(a["pc"]), "samples": a["samples"], "share": a["samples"] / total,
                        "top_stall": top, "top_stall_share": stall[top] / a["samples"] if top and a["samples"] else np.nan,
                        "text": text.get((int(lid), f, ln)) if by_line else None})
    return pd.DataFrame(out, columns=cols)


def hotspot_sass(sass: pd.DataFrame, hotspot: dict, context: int = 4) -> list[dict]:
    """The SASS shown for one hot spot: the instructions of its line (around its hottest one),
    or the instructions around the hot PC, from the listing the reader kept.

    >>> [x["sass"] for x in hotspot_sass(ncu.ncu_detail["sass"], ncu.ncu_detail["hotspots"].iloc[0].to_dict())][:2]
    ['@!P0  LDG.E.128 R16, desc[UR4][R2.64]', '@!P0  LDG.E.128 R12, desc[UR4][R20.64]']
    """
    if sass is None or not len(sass):
        return []
    s = sass[sass["id"] == hotspot["id"]].sort_values("pc")
    pcs = s["pc"].tolist()
    if hotspot["pc"] not in pcs:
        return []
    k = pcs.index(hotspot["pc"])
    win = s.iloc[max(0, k - context): k + context + 1]
    return [{"pc": int(r["pc"]), "sass": str(r["sass"]), "samples": float(r["samples"]),
             "line": None if r["line"] is None or r["line"] != r["line"] else int(r["line"]),
             "hot": int(r["pc"]) == int(hotspot["pc"])} for r in win.to_dict("records")]


def _f(v) -> float:
    # jsonable.num with the table's missing value (NaN) for None
    f = num(v)
    return np.nan if f is None else f


def _ratio(a, b) -> float:
    a, b = _f(a), _f(b)
    return a / b if a == a and b == b and b > 0 else np.nan


def _efficiency(bytes_per_sector, sectors) -> float:
    """Share of each fetched 32-byte sector that the instructions use; unknown (NaN) when ncu
    counted no plain loads/stores (e.g. only cp.async/TMA traffic) though sectors moved."""
    b, s = _f(bytes_per_sector), _f(sectors)
    if b != b or s != s or s <= 0 or b <= 0:
        return np.nan
    return min(b / 32.0, 1.0)

