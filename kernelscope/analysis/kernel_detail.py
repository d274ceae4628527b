"""The kernel deep dive: what the browser's kernel view (``js/src/view/kernel.js``) shows of one
launch that Nsight Compute measured, and the same as text for terminals.

One entry per profiled launch, keyed by ncu's launch ID (the kernels table's ``ncu_id``): speed
of light, the roofline dot with its ceilings, achieved against theoretical occupancy, memory
(throughput, hit rates, sectors per request and the coalescing verdict), stall shares with each
reason explained, source hot spots with their SASS, and Nsight Compute's advice. Every figure
carries where it came from; the words come from :mod:`kernelscope.analysis`, computed once here.
"""
from __future__ import annotations

import pandas as pd

from kernelscope.jsonable import num, whole

# The costliest launches get a deep dive in the view (each is ~15 KB of JSON with its SASS).
DETAIL_LAUNCHES = 60
MEASURED = "measured by Nsight Compute"
COMPUTED = "computed by kernelscope from Nsight Compute's counters"


def kernel_detail(rep) -> dict | None:
    """The view's ``kernel_detail``: {"launches": {ncu id: entry}, ...} or None without ncu data.

    >>> d = kernel_detail(ks.load_ncu("ncu_rep/triton_kernels.ncu-rep.xz"))
    >>> d["launches"]["1"]["stalls"]["bars"][0]["reason"]
    'mio_throttle'
    """
    from kernelscope.analysis.ncu_kernels import (
        LEVEL_LABELS,
        PRECISION_LABELS,
        hotspot_sass,
        measured_roofline,
        memory_access,
        speed_of_light,
        stall_bars,
    )
    from kernelscope.analysis.stalls import explain
    ncu = getattr(rep, "ncu", None)
    if ncu is None or not len(ncu) or "fp32_flops_per_s" not in ncu.columns:
        return None     # a CSV export: the details panel shows its metrics table instead
    t = ncu.copy()
    t["_dur"] = pd.to_numeric(t["duration_ns"], errors="coerce")
    t = t.sort_values("_dur", ascending=False, kind="stable").head(DETAIL_LAUNCHES)
    rl = measured_roofline(t)
    mem = memory_access(t).set_index("id") if len(t) else None
    detail = getattr(rep, "ncu_detail", {}) or {}
    rules, hot, sass = detail.get("rules"), detail.get("hotspots"), detail.get("sass")
    devices = {int(r["index"]): r for r in rep.devices.to_dict("records")} if len(rep.devices) else {}
    out = {}
    for r in t.to_dict("records"):
        lid = int(r["id"])
        entry = {"id": lid, "kernel_name": _s(r.get("kernel_name")), "duration_us": _n(r.get("_dur"), 1e-3),
                 "nvtx": _s(r.get("nvtx")), "source": MEASURED}
        sol = speed_of_light(r)
        entry["sol"] = {k: v if k in ("verdict", "bound") else _n(v) for k, v in sol.items()}
        entry["sol"]["metrics"] = {k: metric_of(c) for k, c in _SOL_COLUMNS.items()}
        entry["roofline"] = _roofline(rl[rl["id"] == lid], PRECISION_LABELS, sol)
        dev = whole(r.get("device"))
        entry["occupancy"] = _occupancy(r, devices.get(dev) if dev is not None else None)
        entry["memory"] = _memory(r, mem.loc[lid] if mem is not None and lid in mem.index else None)
        entry["stalls"] = {"bars": stall_bars(rep.stalls, lid), "samples": _stall_samples(rep.stalls, lid),
                           "source": f"{MEASURED} (warp-state PC samples)"}
        entry["hotspots"] = _hotspots(hot, sass, lid, explain, hotspot_sass)
        entry["advice"] = _advice(rules, lid)
        out[str(lid)] = entry
    note = None
    if len(ncu) > len(t):
        note = f"deep dive for the {len(t)} longest of {len(ncu)} profiled launches"
    return {"launches": out, "note": note, "levels": dict(LEVEL_LABELS)}


# The speed-of-light figures and the launch-table columns (ncu metrics) they come from.
_SOL_COLUMNS = {"compute_pct": "compute_sm_throughput_pct", "memory_pct": "memory_throughput_pct",
                "dram_pct": "dram_throughput_pct", "l2_pct": "l2_cache_throughput_pct",
                "l1_pct": "l1_per_tex_cache_throughput_pct", "achieved": "achieved_occupancy_pct",
                "theoretical_ncu": "theoretical_occupancy_pct"}


def metric_of(column: str) -> str | None:
    """The Nsight Compute metric a launch-table column holds.

    >>> metric_of("achieved_occupancy_pct")
    'sm__warps_active.avg.pct_of_peak_sustained_active'
    """
    from kernelscope.trace.ncu.report import METRICS
    return dict(METRICS).get(column)


def _roofline(rows: pd.DataFrame, labels: dict, sol: dict | None = None) -> dict | None:
    """The launch's roofline panel. Its ``bound`` is the speed of light's (one verdict per
    launch); ``dram_side`` is where the DRAM roofline alone places it, and ``verdict`` the
    sentence that reconciles the two (``ncu_kernels.roofline_verdict``)."""
    from kernelscope.analysis.ncu_kernels import roofline_verdict
    if not len(rows):
        return None
    dom = rows[rows["dominant"]]
    p = dom["precision"].iloc[0]
    points = [{"level": x["level"], "intensity": _n(x["intensity"]), "flops_per_s": _n(x["flops_per_s"]),
               "bytes_per_s": _n(x["bytes_per_s"]), "bytes": _n(x["bytes"])} for x in dom.to_dict("records")]
    ceilings = [{"level": x["level"], "bytes_per_s": _n(x["peak_bytes_per_s"])} for x in dom.to_dict("records")]
    dram = dom[dom["level"] == "dram"]
    d = dram.iloc[0] if len(dram) else dom.iloc[0]
    others = (rows[(rows["level"] == "dram") & ~rows["dominant"]]
              .sort_values("flops_per_s", ascending=False))
    sol = sol or {}
    verdict = roofline_verdict(sol, {"intensity": _n(d["intensity"]), "ridge": _n(d["ridge"]),
                                     "roof_share": _n(d["roof_share"]), "bound": d["bound"]}, labels.get(p, p))
    return {"precision": p, "label": labels.get(p, p), "peak_flops_per_s": _n(d["peak_flops_per_s"]),
            "points": points, "ceilings": ceilings, "bound": sol.get("bound") or d["bound"],
            "dram_side": d["bound"], "verdict": verdict, "roof_share": _n(d["roof_share"]),
            "other_precisions": [{"precision": x["precision"], "label": labels.get(x["precision"], x["precision"]),
                                  "flops_per_s": _n(x["flops_per_s"]), "peak_flops_per_s": _n(x["peak_flops_per_s"])}
                                 for x in others.to_dict("records")],
            "source": f"{COMPUTED}, as its roofline chart does (FLOP/s from the SASS operation counters, "
                      "ceilings the device's peaks at the clocks it measured)"}


def _occupancy(r: dict, dev) -> dict:
    """Achieved (ncu) against theoretical: ncu's figure and ours, ours computed with the
    shared-memory carveout the driver chose (ncu's "Shared Memory Configuration Size"), which
    makes every block limit ours and ncu's alike."""
    out = {"achieved": _n(r.get("achieved_occupancy_pct"), 0.01), "theoretical_ncu": _n(r.get("theoretical_occupancy_pct"), 0.01),
           "achieved_warps": _n(r.get("achieved_active_warps_per_sm_warps")),
           "theoretical_warps": _n(r.get("theoretical_active_warps_per_sm_warps")),
           "waves": _n(r.get("waves_per_sm")),
           "ncu_limits": {k: _n(r.get(f"block_limit_{c}_blocks")) for k, c in
                          (("registers", "registers"), ("shared_mem", "shared_mem"), ("warps", "warps"),
                           ("blocks", "sm"), ("barriers", "barriers"))},
           "metrics": {k: metric_of(_SOL_COLUMNS[k]) for k in ("achieved", "theoretical_ncu")},
           "source": {"achieved": MEASURED, "theoretical": "computed by kernelscope (CUDA occupancy calculator)"}}
    try:
        from kernelscope.analysis.occupancy import occupancy
        cc = tuple(int(x) for x in str(r.get("cc")).split("."))
        static, dynamic = whole(r.get("static_shared_memory_per_block_bytes")), whole(r.get("dynamic_shared_memory_per_block_bytes"))
        if static is None or dynamic is None:
            return out
        smem = static + dynamic
        o = occupancy(cc, whole(r.get("block_size")), whole(r.get("registers_per_thread")), smem,
                      shared_mem_config_bytes=whole(r.get("shared_memory_configuration_size_bytes")) or None,
                      device=dev)
    except (TypeError, ValueError, KeyError):
        return out
    out.update(theoretical=float(o.occupancy), limiter=o.limiter,
               limits={"registers": o.block_limit_registers, "shared_mem": o.block_limit_shared_mem,
                       "warps": o.block_limit_warps, "blocks": o.block_limit_blocks,
                       "barriers": o.block_limit_barriers})
    return out


def _memory(r: dict, m) -> dict:
    out = {"dram_pct": _n(r.get("dram_throughput_pct")), "l1_hit_pct": _n(r.get("l1_per_tex_hit_rate_pct")),
           "l2_hit_pct": _n(r.get("l2_hit_rate_pct")),
           "levels": [{"level": lv, "bytes": _n(r.get(f"{lv}_bytes")), "bytes_per_s": _n(r.get(f"{lv}_bytes_per_s")),
                       "peak_bytes_per_s": _n(r.get(f"{lv}_peak_bytes_per_s"))} for lv in ("dram", "l2", "l1")],
           "source": MEASURED}
    if m is not None:
        out.update(load_sectors_per_request=_n(m["load_sectors_per_request"]),
                   store_sectors_per_request=_n(m["store_sectors_per_request"]),
                   load_efficiency=_n(m["load_efficiency"]), store_efficiency=_n(m["store_efficiency"]),
                   excess_sectors=_n(m["excess_sectors"]), verdict=m["verdict"] if isinstance(m["verdict"], str) else None,
                   verdict_source=COMPUTED)
    return out


def _stall_samples(stalls, lid):
    if stalls is None or not len(stalls) or "launch" not in stalls.columns:
        return None
    s = stalls.loc[stalls["launch"] == lid, "samples"]
    return _n(s.iloc[0]) if len(s) else None


def _hotspots(hot, sass, lid, explain, hotspot_sass) -> list:
    if hot is None or not len(hot):
        return []
    rows = hot[hot["id"] == lid].sort_values("rank")
    out = []
    for h in rows.to_dict("records"):
        top = _s(h.get("top_stall"))
        out.append({"rank": whole(h["rank"]), "location": _s(h["location"]), "file": _s(h.get("file")),
                    "line": whole(h.get("line")), "samples": _n(h["samples"]), "share": _n(h["share"]),
                    "top_stall": top, "top_stall_title": explain(top).title if top else None,
                    "top_stall_share": _n(h.get("top_stall_share")), "text": _s(h.get("text")),
                    "sass": hotspot_sass(sass, h)})
    return out


def _advice(rules, lid) -> list:
    from kernelscope.analysis.ncu_kernels import ADVICE_TYPES
    if rules is None or not len(rules):
        return []
    r = rules[(rules["id"] == lid) & rules["type"].isin(ADVICE_TYPES) & (rules["message"].astype(str) != "")]
    # Global estimates (of the kernel's run time) first, then local ones (of one unit), largest first.
    r = r.assign(_g=(r["speedup_type"] == "global").astype(int),
                 _sp=pd.to_numeric(r["speedup_pct"], errors="coerce").fillna(-1))
    r = r.sort_values(["_g", "_sp"], ascending=False, kind="stable")
    return [{"title": _s(x["title"]) or _s(x["rule_name"]), "rule": _s(x["rule"]), "section": _s(x["section"]),
             "type": _s(x["type"]), "message": _s(x["message"]), "speedup_pct": _n(x["speedup_pct"]),
             "speedup_type": _s(x["speedup_type"])} for x in r.to_dict("records")]


def _n(v, scale=1.0):
    f = num(v)
    return None if f is None else f * scale


def _s(v):
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return str(v)


