"""The timeline's rules: a host-bound or launch-bound GPU, syncs, copies, streams that do not
overlap, CUDA graphs, a GPU-bound run.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from kernelscope.analysis.backends import distinct_rows
from kernelscope.analysis.distinct import by_distinct, factorize, text_codes
from kernelscope.analysis.findings.base import (
    MAX_EVIDENCE_ROWS,
    Finding,
    gap_link,
    kernel_link,
    range_link,
    safe_ratio,
    severity_for,
    span_link,
)
from kernelscope.analysis.intervals import covered_length, merge_intervals, union_length
from kernelscope.analysis.peaks import device_peaks
from kernelscope.analysis.summary import kernel_summary
from kernelscope.jsonable import num
from kernelscope.units import fmt_bytes, fmt_us

# A GPU busy less than half of its active window is waiting more than it works.
HOST_BOUND_MAX_BUSY = 0.5
# ... and we blame the host when its late launches and syncs explain at least half of the idle.
HOST_IDLE_MIN_SHARE = 0.5
# Idle time the host explains is worth a finding of its own from a fifth of the active window on,
# even where the GPU is busy more than half of it: a GPT-2 inference waited 46% of its window on
# the host while busy 54%, and no rule said so.
HOST_IDLE_WORTH_SHARE = 0.2
# Launch-bound means many short kernels: below ~100 launches the per-launch host cost adds up to
# about a millisecond at most (9.9 us per bare launch on an H200, benchmarks/README.md)...
LAUNCH_BOUND_MIN_LAUNCHES = 100
# ...and a kernel shorter than one launch's host cost finishes before the next launch arrives.
SHORT_KERNEL_US = 10.0
# CUDA graphs "already apply" when most kernels come from graph replays.
GRAPH_APPLIES_SHARE = 0.5
# Busy this much of its window, the GPU's time is in the kernels (the opposite of host-bound).
GPU_BOUND_MIN_BUSY = 0.8
# Host link rate assumed for a device not in the datasheet table (PCIe Gen4 x16, one direction).
FALLBACK_HOST_LINK_GBPS = 32.0
# Host<->device copy kinds (device-to-device copies never touch host memory).
_HOST_COPY_KINDS = ("HtoD", "DtoH")


# -- rules ---------------------------------------------------------------------------------------

def _devices(tl):
    rows = tl.busy[tl.busy["stream"].isna()]
    return [r._asdict() for r in rows.itertuples(index=False)]


def _where(dev, tl):
    return f" on {dev['device']}" if len(_devices(tl)) > 1 else ""


def wall_base(dev, tl) -> float:
    """What a device's busy share and a finding's share are taken of: the region's wall time
    (CUDA events when recorded, else the profiler's span), or the active window where that is
    longer (a wall time that misses part of the GPU work) or unknown.

    >>> wall_base({"window_us": 900.0}, SimpleNamespace(window={"wall_us": 5000.0}))   # doctest: +SKIP
    5000.0
    """
    wall = num((tl.window or {}).get("wall_us"))
    win = float(dev["window_us"])
    return max(wall, win) if wall else win


_LINK_COLUMNS = ["device", "start_us", "end_us", "duration_us"]    # what gap_link reads


def host_findings(report, tl) -> list:
    """The GPU idle most of the wall time, launch-bound or host-bound: the GPU idles because the
    host feeds it too slowly (or a first run pays for compiles and loading: ``cold_start``);
    and, where the GPU is busy enough not to be called either, large idle time spent waiting on
    the host (``host_idle``: a fifth of the wall time or more).

    Busy and idle are taken over the wall time (:func:`wall_base`), not the first to last GPU
    activity: a cell of 5 ms with 34 us of kernels idles 99%, however close together its kernels run.

    >>> [f.kind for f in host_findings(rep, rep.timeline)]
    ['host_bound']
    """
    from kernelscope.analysis.cold_start import COLD_EXPLAINS_SHARE, cold_start
    from kernelscope.analysis.timeline import host_in_gaps
    out = []
    cold = cold_start(report, tl.activities["start_us"], tl.activities["end_us"]) if len(tl.activities) else None
    cold_said = False
    for dev in _devices(tl):
        ls = tl.launch_stats.set_index("device").loc[dev["device"]]
        g = tl.gaps[tl.gaps["device"] == dev["device"]]
        base = wall_base(dev, tl)
        busy_wall = dev["busy_us"] / base if base else dev["busy_share"]
        idle_wall = max(base - dev["busy_us"], 0.0)
        # Before the first and after the last GPU work, nothing was queued: the host's time.
        outside = max(base - float(dev["window_us"]), 0.0)
        idle = float(g["duration_us"].sum())
        host_idle = float(ls["idle_host_us"]) + float(ls["idle_sync_us"])
        unexplained = float(ls["idle_unknown_us"]) + outside
        bound = (busy_wall < HOST_BOUND_MAX_BUSY and idle_wall > 0
                 and host_idle + unexplained >= HOST_IDLE_MIN_SHARE * idle_wall)
        cold_host = max(cold["cold_us"] - cold["first_launch_extra_us"], 0.0) if cold and cold["cold"] else 0.0
        if cold_host and not cold_said and (cold_host >= COLD_EXPLAINS_SHARE * idle_wall or not bound):
            # A first run: its compiles and loading are no steady-state host overhead.
            out.append(_cold_finding(report, cold, base, idle_wall, dev, tl))
            cold_said = True
            if cold_host >= COLD_EXPLAINS_SHARE * idle_wall:
                continue
        if not bound and not (host_idle > 0 and host_idle >= HOST_IDLE_WORTH_SHARE * base):
            continue
        a = tl.activities
        k = a.loc[(a["device"] == dev["device"]) & (a["kind"] == "kernel"), ["name"]]   # (only the column read)
        # Kernel launches only; the timeline's launch statistics count copies and memsets too.
        launches = len(k)
        items = int(ls["launches"])
        graph_share = ls["graph_kernels"] / len(k) if len(k) else 0.0
        launch_bound = (bound and launches >= LAUNCH_BOUND_MIN_LAUNCHES
                        and ls["median_kernel_us"] <= SHORT_KERNEL_US
                        and host_idle >= HOST_IDLE_MIN_SHARE * idle_wall)
        # Only the columns read of each kind of gap (every column of ~200k gaps was copied thrice).
        cause = g["cause"]
        hg = g.loc[cause == "host", _LINK_COLUMNS + ["after", "after_op"]]
        by_op = (hg.assign(op=hg["after_op"].fillna(hg["after"]))
                 .groupby("op")["duration_us"].agg(["sum", "size"]).sort_values("sum", ascending=False))
        top_ops = [{"op": op, "idle_us": float(r["sum"]), "gaps": int(r["size"])}
                   for op, r in by_op.head(3).iterrows()]
        sg = g.loc[cause == "sync", _LINK_COLUMNS + ["blocking_call", "blocking_op"]]
        sync_calls = Counter(f"{c} in {o}" if o else str(c)
                             for c, o in zip(sg["blocking_call"], sg["blocking_op"]))
        host = host_in_gaps(report.ops, g.loc[cause != "queued", ["start_us", "end_us"]])
        # The time at stake: idle the host explains; a GPU idle most of the wall time also counts
        # the idle no launch explains (nothing was queued) and what lies outside its active window.
        cost = host_idle + (unexplained if bound else 0.0)
        if cold_said and cold_host:
            cost = max(cost - cold_host, 0.0)   # the first-run item holds that time
        evidence = {
            "device": dev["device"], "busy_share": busy_wall, "busy_us": dev["busy_us"],
            "wall_us": base, "window_us": dev["window_us"], "window_busy_share": dev["busy_share"],
            "idle_us": idle_wall, "idle_in_window_us": idle, "idle_outside_window_us": outside,
            "idle_host_us": float(ls["idle_host_us"]), "idle_sync_us": float(ls["idle_sync_us"]),
            "idle_unknown_us": float(ls["idle_unknown_us"]),
            "host_gaps": len(hg), "sync_gaps": len(sg),
            "launches": launches, "copies_and_memsets": items - launches, "kernels": len(k),
            "distinct_kernels": len(factorize(k["name"])[1]),
            "launches_per_ms": launches / (dev["window_us"] / 1e3) if dev["window_us"] else float("nan"),
            "median_kernel_us": float(ls["median_kernel_us"]),
            "median_gap_us": float(ls["median_gap_us"]),
            "median_launch_call_us": num(ls["median_launch_call_us"]),
            "median_launch_interval_us": num(ls["median_launch_interval_us"]),
            "graph_kernels": int(ls["graph_kernels"]), "graph_launches": int(ls["graph_launches"]),
            "longest_waits_before": top_ops, "sync_calls": dict(sync_calls),
            "host_ops_in_idle_us": host["covered_us"], "host_unrecorded_in_idle_us": host["uncovered_us"],
            "host_ops_in_idle": host["top_ops"],
        }
        waited = host_idle / base
        head = (f"The GPU{_where(dev, tl)} was busy {busy_wall:.1%} of the wall time "
                f"({fmt_us(dev['busy_us'])} of {fmt_us(base)}); it waited on the host for {fmt_us(host_idle)} "
                f"({waited:.0%}) between launches"
                + (f", and {fmt_us(outside)} before its first or after its last work" if outside >= 1 else "")
                + ".")
        span_clock = report.meta.get("cuda_event_us") is None
        did = _host_did(host, outside, span_clock)
        call, interval = evidence["median_launch_call_us"], evidence["median_launch_interval_us"]
        framework = bool(call and interval and interval > 3 * call)
        pace = (f" The host issued a launch every {fmt_us(interval)} (median) while one launch call "
                f"costs {fmt_us(call)}"
                + (", so the time goes to Python and framework work between launches, not to the "
                   "launch calls themselves." if framework else "."))
        waits = (" Longest waits came before " + ", ".join(
            f"{w['op']} ({fmt_us(w['idle_us'])} in {w['gaps']} gap{'s' * (w['gaps'] != 1)})"
            for w in top_ops) + ".") if top_ops else ""
        syncs = (f" Synchronizations idled it for {fmt_us(ls['idle_sync_us'])} more ("
                 + ", ".join(f"{n}x {c}" for c, n in sync_calls.most_common(3))
                 + "): the host blocked until the GPU drained, so nothing was queued ahead."
                 if len(sg) else "")
        by_sync = ls["idle_sync_us"] > ls["idle_host_us"]
        link = gap_link(pd.concat([hg[_LINK_COLUMNS], sg[_LINK_COLUMNS]]) if len(sg) else hg, "wait on the host")
        if launch_bound:
            kind = "launch_bound"
            title = (f"Launch-bound: {launches} kernel launches of ~{fmt_us(ls['median_kernel_us'])} "
                     f"keep the GPU busy only {busy_wall:.0%} of the wall time")
            others = (f" (and {items - launches} copies and memsets: {items} GPU work items, "
                      f"{ls['launches_per_ms']:.1f} per ms)" if items > launches else "")
            body = (f"{launches} kernel launches ({evidence['distinct_kernels']} distinct kernels) at "
                    f"{evidence['launches_per_ms']:.1f} per ms{others}; the median kernel runs "
                    f"{fmt_us(ls['median_kernel_us'])} but the GPU then idles a median "
                    f"{fmt_us(ls['median_gap_us'])} until the next one arrives.")
            cause = (f"{launches} kernels of ~{fmt_us(ls['median_kernel_us'])} each, one launched every "
                     f"{fmt_us(interval)}: the GPU finishes each long before the next arrives.")
            if graph_share >= GRAPH_APPLIES_SHARE:
                fix = (f" CUDA graphs already apply ({int(ls['graph_kernels'])} of {len(k)} kernels "
                       f"come from {int(ls['graph_launches'])} graph replays): the idle time lies "
                       "between replays, so capture more of the step in one graph or cut the host "
                       "work between replays.")
                fix_line = "Capture more of the step in one CUDA graph, or cut the host work between replays."
            else:
                fix = (" Fix: replay the loop as a CUDA graph (torch.compile(mode=\"reduce-overhead\") "
                       "or torch.cuda.CUDAGraph) so one launch issues all kernels; fuse the small "
                       "element-wise ops (torch.compile) so fewer kernels do the same work; or give "
                       "each kernel more work (larger batches).")
                fix_line = ("Replay the loop as a CUDA graph (torch.compile(mode=\"reduce-overhead\")), "
                            "fuse the small ops, or give each kernel more work.")
            detail = head + " " + body + did + pace + waits + syncs + fix
        else:
            what = "synchronizations" if by_sync else "host work between launches"
            if bound and host_idle >= HOST_IDLE_MIN_SHARE * idle_wall:
                kind = "host_bound"
                title = (f"Host-bound: the GPU idles {1 - busy_wall:.0%} of the wall time, mostly "
                         f"waiting on {what}")
            elif bound:
                # Most of the idle has no launch to blame (another framework's launches, host
                # work before the first kernel or after the last): say what the GPU did, first.
                kind = "gpu_idle"
                title = (f"The GPU{_where(dev, tl)} was idle {1 - busy_wall:.1%} of the {fmt_us(base)} wall "
                         f"time: {fmt_us(dev['busy_us'])} of GPU work")
            else:
                kind = "host_idle"
                title = (f"The GPU{_where(dev, tl)} waited on the host {fmt_us(host_idle)}, {waited:.0%} "
                         f"of the wall time")
            fix = (" Fix: take syncs out of the step (.item(), .cpu(), printing CUDA tensors, "
                   "blocking .cuda() of pageable tensors); replay the step as a CUDA graph "
                   "(torch.compile(mode=\"reduce-overhead\")) so the host stops pacing the GPU; or "
                   "give each launch more work (larger batches).")
            if kind == "gpu_idle":
                cause = _host_did(host, outside, span_clock).strip() or "The host did not keep the GPU fed."
                fix_line = ("Find what the host does in the region (profile with --stack / with_stack=True "
                            "for the Python); move that work out, or give the GPU more work per call "
                            "(jit or capture the whole step, larger batches).")
                fix = (" Fix: find what the host does in the region (--stack shows the Python), move it "
                       "out of the measured step, or give the GPU more work per call (jit or capture "
                       "the whole step in one graph, larger batches).")
            elif by_sync:
                cause = (f"{len(sg)} synchronization{'s' * (len(sg) != 1)} made the host wait for the GPU "
                         f"to drain ({fmt_us(ls['idle_sync_us'])} idle), so nothing was queued ahead.")
                fix_line = ("Take syncs out of the step (.item(), .cpu(), print of CUDA tensors); "
                            "copy with non_blocking=True from pinned memory.")
            else:
                cause = (f"The next launch came after the GPU went idle {len(hg)} time{'s' * (len(hg) != 1)}"
                         + (f": the host spends {fmt_us(interval)} between launches (median)"
                            + (", in Python and framework work" if framework else "") if interval else "")
                         + ".")
                fix_line = ("Replay the step as a CUDA graph (torch.compile(mode=\"reduce-overhead\")), "
                            "move host work out of the step, or give each launch more work.")
            detail = head + did + pace + waits + syncs + fix
        if cold_said and cold_host:
            detail += (f" The first-run item holds {fmt_us(min(cold_host, host_idle + unexplained))} of this "
                       "idle time (compiles, module loading); it is not counted here again.")
        evidence["cause"] = "host" if ls["idle_host_us"] >= ls["idle_sync_us"] else "sync"
        out.append(Finding(kind, severity_for(cost, base), title, detail, evidence,
                           cost, cause=cause, fix=fix_line, link=link))
    return out


def _host_did(host, outside, span_clock=False) -> str:
    """What the host did while the GPU idled, in one sentence: the CPU ops that fill the idle
    time, and how much of it the profiler recorded nothing for."""
    if not host["idle_us"] and not outside:
        return ""
    parts = []
    if host["top_ops"]:
        parts.append("CPU ops fill " + fmt_us(host["covered_us"]) + " of it ("
                     + ", ".join(f"{o['op']} {fmt_us(o['us'])}" for o in host["top_ops"]) + ")")
    if host["uncovered_us"] >= 1:
        parts.append(f"{fmt_us(host['uncovered_us'])} is not recorded by the profiler (Python, or host "
                     "code it does not trace: numpy, another framework's dispatch)")
    if outside >= 1:
        parts.append(f"{fmt_us(outside)} lies before the first or after the last GPU work"
                     + (" (the profiler's span, taken as the wall time here, also holds the profiler's own "
                        "start-up)" if span_clock else ""))
    return (" While the GPU idled between launches, " if host["idle_us"] else " ") + "; ".join(parts) + "."


def _cold_finding(report, cold, base, idle_wall, dev, tl) -> Finding:
    """``cold_start``: the run pays what a process pays once; profile it again."""
    cost = float(min(cold["cold_us"], base))
    share = cost / base if base else float("nan")
    what = ("compiling, loading and first-call setup" if cold["compile_us"] else
            "module loading and first-call setup")
    title = f"This looks like a first run: {fmt_us(cost)} ({share:.0%} of the wall time) went to {what}"
    detail = ("What a process pays once: " + "; ".join(cold["parts"]) + ". The second run does not pay "
              "it, so steady-state advice (CUDA graphs, fewer launches) does not apply to this recording. "
              "Profile it again, or use --warmup 1 (%%kernelprofile --warmup 1; with ks.profile(), call "
              "the code once before the recorded call).")
    rest = idle_wall - cold["cold_us"] + cold["first_launch_extra_us"]
    if rest > 0.05 * base:
        detail += (f" The GPU idled {fmt_us(rest)} more that these do not explain; on a first run that is "
                   "often setup the profiler does not name (a Triton JIT compiles in Python).")
    ev = {k: v for k, v in cold.items() if k not in ("intervals", "cold")}
    ev.update({"device": dev["device"], "wall_us": base, "idle_us": idle_wall})
    ms, me = cold["intervals"]
    link = (range_link(dev["device"], float(ms[0]), float(me[-1]), "first-run setup") if len(ms) else None)
    return Finding("cold_start", severity_for(cost, base), title, detail, ev, cost,
                   cause=(cold["parts"][0][0].upper() + cold["parts"][0][1:] + ("; " + "; ".join(cold["parts"][1:3]) if len(cold["parts"]) > 1 else "")
                          + ".") if cold["parts"] else "First-call setup.",
                   fix="This looks like a first run: profile it again or use --warmup 1.", link=link)


def sync_findings(report, tl) -> list:
    """Host-blocking synchronizations and blocking copies, with the idle time they caused.

    >>> [x["call"] for x in sync_findings(rep, rep.timeline)[0].evidence["calls"]][1:3]
    ['cudaStreamSynchronize in aten::copy_ (under aten::to)', 'cudaDeviceSynchronize']
    """
    b = tl.blocking
    if not len(b):
        return []
    g = tl.gaps
    sg = g[g["cause"] == "sync"] if len(g) else g
    cost = float(sg["duration_us"].sum()) if len(sg) else 0.0
    end = tl.window.get("end_us")
    # The region's closing synchronize returns after the GPU's last work: it waits for work that
    # had to finish anyway and costs nothing.
    closing = ((b["kind"] == "sync") & (b["end_us"] >= end)) if end is not None else b["kind"] != b["kind"]
    if closing.all():
        return []
    after_end = int(closing.sum())
    by = (b.assign(where=_call_sites(b))
          .groupby("where")["duration_us"].agg(["size", "sum"]).sort_values("sum", ascending=False))
    calls = [{"call": w, "count": int(r["size"]), "host_us": float(r["sum"])} for w, r in by.iterrows()]
    n_sync = int((b["kind"] == "sync").sum())
    n_copy = int((b["kind"] == "copy").sum())
    host_us = float(b["duration_us"].sum())
    window = tl.window.get("active_us")
    title = (f"{len(b)} host-blocking call{'s' * (len(b) != 1)} ({n_sync} sync, {n_copy} blocking "
             f"cop{'ies' if n_copy != 1 else 'y'}) held the host {fmt_us(host_us)}"
             + (f" and idled the GPU {fmt_us(cost)}" if cost > 0 else ""))
    detail = ("Each one makes the host wait until the GPU has finished, so no work is queued ahead "
              "and the GPU idles while the host catches up. By call: "
              + "; ".join(f"{c['count']}x {c['call']} ({fmt_us(c['host_us'])})" for c in calls[:5]) + ".")
    if after_end:
        detail += (f" {after_end} of them returned after the GPU's last work (the region's closing "
                   "synchronize), which costs nothing.")
    detail += (" Fix: keep values on the GPU instead of .item()/.cpu()/print inside the loop; copy "
               "to pinned memory with non_blocking=True and synchronize once; find hidden syncs "
               "with torch.cuda.set_sync_debug_mode(\"warn\").")
    evidence = {"calls": calls, "syncs": n_sync, "blocking_copies": n_copy, "host_blocked_us": host_us,
                "idle_caused_us": cost, "after_last_gpu_work": after_end}
    top = calls[0]["call"] if calls else "a synchronization"
    cause = (f"The host waited for the GPU to finish {len(b) - after_end} time{'s' * (len(b) - after_end != 1)} "
             f"inside the region (most in {top}), so nothing was queued ahead.")
    fix = ("Keep values on the GPU instead of .item()/.cpu()/print in the loop; copy to pinned memory "
           "with non_blocking=True and synchronize once.")
    link = (gap_link(sg, "idle after a synchronization") if len(sg)
            else span_link(b[~closing], "host-blocking call", "end_us"))
    return [Finding("syncs", severity_for(cost, window), title, detail, evidence, cost,
                    cause=cause, fix=fix, link=link)]


def copy_findings(report, tl) -> list:
    """Pageable host memory, achieved bandwidth against the host link, copies serialized with
    compute on the same stream.

    >>> [f.kind for f in copy_findings(rep, rep.timeline)]
    ['pageable_copies', 'serialized_copies']
    """
    c = report.copies
    if not len(c):
        return []
    c = c[c["kind"] == "memcpy"]
    host = c[c["copy_kind"].isin(_HOST_COPY_KINDS) & c["start_us"].notna() & c["duration_us"].notna()]
    if not len(host):
        return []
    out = []
    window = tl.window.get("active_us")
    names = dict(zip(report.devices["index"].tolist(), report.devices["name"].tolist()))
    peaks = {i: device_peaks(n) for i, n in names.items()}

    def link(i):
        p = peaks.get(i)
        return p.host_link_gbps if p else FALLBACK_HOST_LINK_GBPS

    pageable = host[(host["src_memory"] == "Pageable") | (host["dst_memory"] == "Pageable")]
    pinned = host[(host["src_memory"] == "Pinned") | (host["dst_memory"] == "Pinned")]
    if len(pageable):
        b = pageable["bytes"].astype(float).fillna(0).to_numpy()
        d = np.nan_to_num(pageable["duration_us"].to_numpy(float))
        lk = by_distinct(pageable["device_index"], link, float, FALLBACK_HOST_LINK_GBPS)  # once per device
        ideal = b / (lk * 1e3)  # us at the link's datasheet rate (GB/s = 1e3 bytes/us)
        cost = float(np.maximum(0.0, d - ideal).sum())
        gbps = safe_ratio(b.sum(), np.nansum(d) * 1e3)
        pin_gbps = (safe_ratio(pinned["bytes"].astype(float).sum(), pinned["duration_us"].sum() * 1e3)
                    if len(pinned) else None)
        pin_gbps = pin_gbps if pin_gbps == pin_gbps else None
        host_blocked = float(pageable["launch_duration_us"].fillna(0).sum())
        dev_i = pageable["device_index"].iloc[0]
        p = peaks.get(dev_i)
        by_kind = [{"copy": k, "count": int(len(g)), "bytes": int(g["bytes"].fillna(0).sum()),
                    "time_us": float(g["duration_us"].sum()),
                    "gbps": safe_ratio(g["bytes"].fillna(0).sum(), g["duration_us"].sum() * 1e3)}
                   for k, g in pageable.groupby("name")]
        title = (f"{len(pageable)} cop{'ies' if len(pageable) != 1 else 'y'} used pageable host memory: "
                 f"{fmt_bytes(b.sum())} at {gbps:.1f} GB/s "
                 f"({gbps / link(dev_i):.0%} of the {link(dev_i):.0f} GB/s host link)")
        kinds = ", ".join(f"{x['count']}x {x['copy']}" for x in by_kind)
        detail = (f"Pageable copies ({kinds}) "
                  f"took {fmt_us(d.sum())} and held the host {fmt_us(host_blocked)}: the driver "
                  "stages them through a pinned buffer and the call returns only when it is done. "
                  + (f"Pinned copies in this run reached {pin_gbps:.1f} GB/s. " if pin_gbps else "")
                  + f"At the link's rate ({link(dev_i):.0f} GB/s, "
                  + (f"{p.source} value for {p.model}" if p else "assumed PCIe Gen4 x16") + ") they "
                  f"would take {fmt_us(ideal.sum())}. Fix: allocate host tensors in pinned memory "
                  "(tensor.pin_memory(), DataLoader(pin_memory=True)) and copy with "
                  ".to(\"cuda\", non_blocking=True), on a side stream where it can overlap compute.")
        evidence = {"copies": by_kind, "bytes": int(b.sum()), "time_us": float(d.sum()),
                    "gbps": float(gbps), "pinned_gbps": pin_gbps, "host_link_gbps": float(link(dev_i)),
                    "host_link_source": p.source if p else "assumed", "host_blocked_us": host_blocked,
                    "time_at_link_rate_us": float(ideal.sum())}
        cause = (f"Copies from or to pageable host memory ran at {gbps:.1f} GB/s, staged by the driver "
                 "through a pinned buffer, and held the host until each was done.")
        fix = ("Allocate host tensors in pinned memory (pin_memory(), DataLoader(pin_memory=True)) and copy "
               "with .to(\"cuda\", non_blocking=True).")
        out.append(Finding("pageable_copies", severity_for(cost, window), title, detail, evidence, cost,
                           cause=cause, fix=fix, link=span_link(pageable, "pageable copy")))

    # Copies that share a stream with kernels and overlap no kernel at all: they serialize with
    # compute (the stream runs one thing at a time, and no other stream hid them).
    acts = tl.activities
    kern = acts[acts["kind"] == "kernel"]
    if len(kern):
        with_kernels = set(zip(kern["device_index"].tolist(), kern["stream"].tolist()))
        rows = []
        for dev_i, hc in host.groupby("device_index", sort=False):
            dk = kern[kern["device_index"] == dev_i]
            ms, me = merge_intervals(dk["start_us"], dk["end_us"])
            s = hc["start_us"].to_numpy(float)
            ov = covered_length(ms, me, s, s + hc["duration_us"].to_numpy(float))
            # Over the rows that overlap nothing, as plain values (itertuples cost ~4 us a row).
            at = np.flatnonzero(ov <= 0)
            for name, stream, dur, op, start, device in zip(*(hc[c].to_numpy(object)[at].tolist() for c in (
                    "name", "stream", "duration_us", "op", "start_us", "device"))):
                if stream is not pd.NA and (dev_i, stream) in with_kernels:
                    rows.append({"copy": name, "stream": int(stream), "time_us": float(dur),
                                 "op": op, "_start": float(start), "_device": device})
        if rows:
            longest = max(rows, key=lambda x: x["time_us"])
            copy_link = range_link(longest["_device"], longest["_start"], longest["_start"] + longest["time_us"],
                                   "copy on the compute stream")
            rows = [{a: b for a, b in x.items() if not a.startswith("_")} for x in rows]
            cost = sum(x["time_us"] for x in rows)
            streams = sorted({x["stream"] for x in rows})
            title = (f"{len(rows)} host copies ran on the compute stream{'s' * (len(streams) > 1)} "
                     f"({', '.join(map(str, streams))}) with no kernel beside them: {fmt_us(cost)} "
                     "the GPU could have been computing")
            detail = ("A stream runs its work in order, so a copy on the stream the kernels use waits "
                      "for them and they wait for it. Fix: prefetch the next batch with "
                      ".to(\"cuda\", non_blocking=True) from pinned memory on a side stream "
                      "(torch.cuda.Stream) and make the compute stream wait on it only when needed.")
            evidence = {"copies": rows[:MAX_EVIDENCE_ROWS], "count": len(rows), "time_us": cost}
            cause = ("Host copies ran on the stream the kernels use, so they and the kernels waited "
                     "for each other.")
            fix = ("Prefetch from pinned memory with non_blocking=True on a side stream "
                   "(torch.cuda.Stream) and wait on it only where the data is needed.")
            out.append(Finding("serialized_copies", severity_for(cost, window), title, detail,
                               evidence, cost, cause=cause, fix=fix, link=copy_link))
    return out


def stream_findings(report, tl) -> list:
    """Which streams ran work, which are side streams, and how long they overlapped.

    >>> stream_findings(cs, cs.timeline)[0].evidence["side_streams"]
    [38, 42]
    """
    out = []
    for dev in _devices(tl):
        b = tl.busy[(tl.busy["device"] == dev["device"]) & tl.busy["stream"].notna()]
        if len(b) < 2:
            continue
        # The main stream runs the most work items; the rest are side streams.
        main = int(b.sort_values(["activities", "busy_us"], ascending=False).iloc[0]["stream"])
        side = [int(s) for s in b["stream"] if int(s) != main]
        ov = tl.overlap[tl.overlap["device"] == dev["device"]]
        pairs: list[dict] = [{"streams": [int(r.stream_a), int(r.stream_b)], "overlap_us": float(r.overlap_us),
                  "share_of_a": num(r.share_of_a), "share_of_b": num(r.share_of_b)}
                 for r in ov.itertuples()]
        any_ov = [p for p in pairs if p["overlap_us"] > 0]
        none_ov = [p for p in pairs if p["overlap_us"] <= 0]
        per = {int(r.stream): {"busy_us": float(r.busy_us), "kernels": int(r.kernels),
                               "copies": int(r.copies)} for r in b.itertuples()}
        title = (f"Work ran on {len(b)} streams{_where(dev, tl)} (main {main}, side "
                 f"{', '.join(map(str, side))}); "
                 + (f"they overlapped for {fmt_us(max(p['overlap_us'] for p in any_ov))} at most"
                    if any_ov else "they never ran at the same time"))
        detail = "; ".join(
            f"streams {p['streams'][0]} and {p['streams'][1]} overlapped {fmt_us(p['overlap_us'])} "
            f"({p['share_of_b']:.0%} of stream {p['streams'][1]}'s busy time)" for p in any_ov)
        if none_ov:
            detail += ("; " if detail else "") + "no overlap between " + ", ".join(
                f"{p['streams'][0]} and {p['streams'][1]}" for p in none_ov)
        detail += (". Side streams only help where their work can run beside other work; a "
                   "synchronize between them (or a blocking copy) puts them back in line.")
        out.append(Finding("streams", "info", title, detail,
                           {"device": dev["device"], "main_stream": main, "side_streams": side,
                            "streams": per, "overlap": pairs}))
    return out


def graph_findings(report, tl) -> list:
    """CUDA-graph replays: how many kernels came from them.

    >>> graph_findings(after, after.timeline)[0].evidence["graph_launches"]
    2
    """
    ls = tl.launch_stats
    if not len(ls) or int(ls["graph_kernels"].sum()) == 0:
        return []
    n_k, n_g = int(ls["graph_kernels"].sum()), int(ls["graph_launches"].sum())
    total = int(ls["kernels"].sum())
    return [Finding("cuda_graphs", "info",
                    f"CUDA graphs apply: {n_k} of {total} kernels came from {n_g} graph replay"
                    f"{'s' * (n_g != 1)}",
                    "Graph replays launch all their kernels with one host call, so per-kernel "
                    "launch cost is gone for these; the GPU-side gap between them is "
                    f"{fmt_us(float(ls['median_gap_us'].median()))} (median).",
                    {"graph_kernels": n_k, "graph_launches": n_g, "kernels": total})]


def gpu_bound_findings(report, tl) -> list:
    """The GPU was kept busy: the time is in the kernels (or the copies) themselves.

    Busy is taken over the wall time: two graph replays busy 93% of their first-to-last window
    but 40% of the wall time are no GPU-bound run.

    >>> gpu_bound_findings(after, after.timeline)
    []
    """
    from kernelscope.analysis.timeline import gpu_busy_share
    out = []
    for dev in _devices(tl):
        share = gpu_busy_share(dev)   # of the wall time: kernels close together in a mostly idle cell are no GPU-bound run
        if share < GPU_BOUND_MIN_BUSY:
            continue
        k = report.kernels
        if "device" in k.columns:
            k = k[k["device"] == dev["device"]]
        top = []
        if len(k):
            s = kernel_summary(k).head(3)
            top = [{"kernel": r.short_name if "short_name" in s.columns else r.name,
                    "total_us": float(r.total_us), "share": float(r.share)} for r in s.itertuples()]
        detail = ("Little is lost between kernels; speed comes from faster kernels. Largest: "
                  + ", ".join(f"{t['kernel']} ({t['share']:.0%}, {fmt_us(t['total_us'])})" for t in top)
                  + ".") if top else "Little is lost between kernels."
        acts = tl.activities[tl.activities["device"] == dev["device"]]
        is_k = acts["kind"] == "kernel"
        kernel_busy = union_length(acts.loc[is_k, "start_us"], acts.loc[is_k, "end_us"])
        copy_busy = union_length(acts.loc[~is_k, "start_us"], acts.loc[~is_k, "end_us"])
        if copy_busy > kernel_busy:
            what = "copies"
            detail = (f"Copies and memsets kept it busy {fmt_us(copy_busy)}, kernels {fmt_us(kernel_busy)}: "
                      "the copies are the time to cut (see the copy findings).")
        else:
            what = "kernels"
        names = [r.name for r in kernel_summary(k).head(3).itertuples()] if len(k) and what == "kernels" else []
        out.append(Finding("gpu_bound", "info",
                           f"The GPU{_where(dev, tl)} was busy {share:.0%} of the wall time: the time is "
                           f"in the {what}", detail,
                           {"device": dev["device"], "busy_share": share, "top": top,
                            "kernel_busy_us": kernel_busy, "copy_busy_us": copy_busy, "busy_in": what},
                           cause=f"Little is lost between kernels: the {what} themselves take the time.",
                           fix=("Make the largest kernels faster (their occupancy, roofline and shapes "
                                "say how)." if what == "kernels" else "Cut the copies (see the copy findings)."),
                           link=kernel_link(names, "the largest kernels") if names else None))
    return out


# -- helpers -------------------------------------------------------------------------------------


def _call_sites(b: pd.DataFrame) -> list:
    """:func:`_call_site` of each blocking call, worded once per distinct (call, op, outer op): a
    copy-heavy trace blocks ~100k times from a few places."""
    name, op, outer = (b[c].to_numpy(object) for c in ("name", "op", "outer_op"))
    if len(b) < 1024 or b["name"].isna().any():
        return [_call_site(n, o, t) for n, o, t in zip(name, op, outer)]
    # Rows of one code hold the same call text and equal ops (a missing op, however written,
    # and any op that is not text are left out of the words alike).
    codes, first = distinct_rows([text_codes(b["name"]), op, outer])
    return np.array([_call_site(name[i], op[i], outer[i]) for i in first.tolist()], dtype=object)[codes].tolist()


def _call_site(name, op, outer) -> str:
    """``cudaStreamSynchronize in aten::copy_ (under aten::to)``: the call and who made it."""
    site = f"{name} in {op}" if isinstance(op, str) and op else str(name)
    if isinstance(outer, str) and outer and outer != op:
        site += f" (under {outer})"
    return site


