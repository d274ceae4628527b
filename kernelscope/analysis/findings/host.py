"""The host's rules: a GPU idle most of the wall time because the host feeds it too slowly
(launch-bound, host-bound, GPU idle), large idle time spent waiting on the host (host idle), and
a first run that pays for compiles and loading (cold start).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import NamedTuple

import pandas as pd

from kernelscope.analysis.distinct import factorize
from kernelscope.analysis.findings.base import (
    Finding,
    device_rows,
    gap_link,
    on_device,
    outside_parts,
    range_link,
    severity_for,
)
from kernelscope.analysis.intervals import Spans
from kernelscope.analysis.recording_cost import PROFILER_US_PER_LAUNCH, PROFILER_US_PER_OP, recording_added_us
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# A GPU busy less than half of its active window is waiting more than it works.
HOST_BOUND_MAX_BUSY = 0.5
# ... and we blame the host when its late launches and syncs explain at least half of the idle.
HOST_IDLE_MIN_SHARE = 0.5
# Idle time the host explains is worth a finding of its own from a fifth of the active window on,
# even where the GPU is busy more than half of it: a GPT-2 inference waited 46% of its window on
# the host while busy 54%, and no rule said so.
HOST_IDLE_WORTH_SHARE = 0.2
# Launch-bound means many short kernels: below ~100 launches the per-launch host cost adds up to
# about a millisecond at most (9.9 us per bare launch on an H200, benchmarks/README.md): fewer
# launches paced by the host read host-bound, whose fix line also names a CUDA graph...
LAUNCH_BOUND_MIN_LAUNCHES = 100
# ...and a kernel shorter than one launch's host cost finishes before the next launch arrives.
SHORT_KERNEL_US = 10.0
# CUDA graphs "already apply" when most kernels come from graph replays.
GRAPH_APPLIES_SHARE = 0.5


def _graphs_apply(ls) -> bool:
    """Whether most of a device's kernels already come from CUDA graph replays."""
    n = int(ls.get("kernels", 0) or 0)
    return bool(n) and int(ls.get("graph_kernels", 0) or 0) / n >= GRAPH_APPLIES_SHARE


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


class _Waits(NamedTuple):
    """One device's busy and idle time over the wall time (:func:`wall_base`)."""

    base: float           # the wall time the shares are of
    busy_wall: float      # busy share of it
    idle_wall: float      # idle time in it
    outside: float        # idle before the first and after the last GPU work
    host_idle: float      # idle the host's late launches and syncs explain
    unexplained: float    # idle no launch explains, and ``outside``
    bound: bool           # idle most of the wall time, mostly for the host


def _waits(dev, tl, ls) -> _Waits:
    """The busy and idle figures of one device (``ls``: its launch statistics)."""
    base = wall_base(dev, tl)
    busy_wall = dev["busy_us"] / base if base else dev["busy_share"]
    idle_wall = max(base - dev["busy_us"], 0.0)
    # Before the first and after the last GPU work, nothing was queued: the host's time.
    outside = max(base - float(dev["window_us"]), 0.0)
    host_idle = float(ls["idle_host_us"]) + float(ls["idle_sync_us"])
    unexplained = float(ls["idle_unknown_us"]) + outside
    bound = (busy_wall < HOST_BOUND_MAX_BUSY and idle_wall > 0
             and host_idle + unexplained >= HOST_IDLE_MIN_SHARE * idle_wall)
    return _Waits(base, busy_wall, idle_wall, outside, host_idle, unexplained, bound)


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
    from kernelscope.analysis.cold_start import COLD_EXPLAINS_SHARE, cold_of
    out = []
    cold = cold_of(report, tl)
    cold_said = False
    for dev in device_rows(tl):
        ls = tl.launch_stats.set_index("device").loc[dev["device"]]
        w = _waits(dev, tl, ls)
        cold_host = max(cold["cold_us"] - cold["first_launch_extra_us"], 0.0) if cold else 0.0
        if cold_host and not cold_said:
            # A first run: its compiles and loading are no steady-state host overhead, even where
            # they explain only part of the idle time (the host item keeps the rest).
            out.append(_with_cold_spans(_cold_finding(cold, w.base, w.idle_wall, dev), cold, tl))
            cold_said = True
            if cold_host >= COLD_EXPLAINS_SHARE * w.idle_wall:
                continue
        if not w.bound and not (w.host_idle > 0 and w.host_idle >= HOST_IDLE_WORTH_SHARE * w.base):
            continue
        f = _host_finding(report, tl, dev, ls, w, cold_host if cold_said else 0.0)
        cold_f = next((c for c in out if c.kind == "cold_start"), None) if cold_said else None
        # The first-run item holds its time (``held`` above): its spans are not this one's either.
        if cold_f is not None and cold_f.spans and f.spans is not None:
            f = dataclasses.replace(f, spans=f.spans - cold_f.spans)
        out.append(f)
    return out


def _with_cold_spans(f: Finding, cold, tl) -> Finding:
    """The first-run finding with the time it holds: its host intervals while the device was idle."""
    ms, me = cold["intervals"]
    a = tl.activities
    busy = Spans.of_rows(a.loc[a["device"] == f.evidence["device"], ["device", "start_us", "end_us"]])
    return dataclasses.replace(f, spans=Spans.of(f.evidence["device"], ms, me) - busy)


def _host_spans(g, dev, tl, w: _Waits) -> Spans:
    """The time a host finding's cost is made of: the gaps the host explains and, where the GPU
    idles most of the wall time, the gaps nothing explains and the time outside its work."""
    causes = ("host", "sync", "unknown") if w.bound else ("host", "sync")
    spans = Spans.of_rows(g.loc[g["cause"].isin(causes), ["device", "start_us", "end_us"]])
    return spans | outside_parts(dev, tl, w.base)[2] if w.bound else spans


def _host_paced(w: _Waits, dev) -> bool:
    """Whether the host's late launches and syncs explain most of the idle time. Where the GPU
    idles most of its own first-to-last window too, judged on the idle inside it: the time outside
    (the profiler's start-up, the cell's own Python) is its own item and says nothing of the
    launches; a GPU busy most of its window keeps the wall-time judgement (a short burst of work
    in a long cell is an idle GPU, not a host-bound one)."""
    inside = w.idle_wall - w.outside
    if dev["busy_share"] < HOST_BOUND_MAX_BUSY and inside > 0:
        return w.host_idle >= HOST_IDLE_MIN_SHARE * inside
    return w.host_idle >= HOST_IDLE_MIN_SHARE * w.idle_wall


def _host_finding(report, tl, dev, ls, w: _Waits, held: float) -> Finding:
    """One device's host finding (see :func:`host_findings`); ``held``: the idle time the
    first-run finding already holds (not counted again)."""
    from kernelscope.analysis.timeline import host_in_gaps
    g = tl.gaps[tl.gaps["device"] == dev["device"]]
    a = tl.activities
    k = a.loc[(a["device"] == dev["device"]) & (a["kind"] == "kernel"), ["name"]]   # (only the column read)
    # Kernel launches only; the timeline's launch statistics count copies and memsets too.
    launches = len(k)
    # Only the columns read of each kind of gap (every column of ~200k gaps was copied thrice).
    cause = g["cause"]
    hg = g.loc[cause == "host", _LINK_COLUMNS + ["after", "after_op"]]
    sg = g.loc[cause == "sync", _LINK_COLUMNS + ["blocking_call", "blocking_op"]]
    host = host_in_gaps(report.ops, g.loc[cause != "queued", ["start_us", "end_us"]])
    # Launch-bound: the host's time between launches goes to the launches (their ops and calls);
    # host work the profiler did not record (numpy, Python) filling most of it is host-bound.
    launch_bound = (w.bound and launches >= LAUNCH_BOUND_MIN_LAUNCHES
                    and ls["median_kernel_us"] <= SHORT_KERNEL_US
                    and _host_paced(w, dev)
                    and ls["idle_host_us"] >= ls["idle_sync_us"]    # paced by launches, not by syncs
                    and not (report.ops is not None and len(report.ops)
                             and host["uncovered_us"] > HOST_IDLE_MIN_SHARE * host["idle_us"]))
    # The time at stake: idle the host explains; a GPU idle most of the wall time also counts
    # the idle no launch explains (nothing was queued) and what lies outside its active window.
    cost = w.host_idle + (w.unexplained if w.bound else 0.0)
    if held:
        cost = max(cost - held, 0.0)   # the first-run item holds that time
    # The recording's own cost per launch and per op sits in that idle time: the run without the
    # profiler does not pay it, so neither does the time at stake.
    rec = recording_added_us(report, dev.get("window_start_us"), dev.get("window_end_us"))
    added = min(rec["added_us"], cost)
    cost -= added
    evidence = _host_evidence(dev, ls, w, g, k, hg, sg, host)
    head, did, pace, waits, syncs = _host_sentences(report, tl, dev, ls, w, evidence, host)
    link = gap_link(pd.concat([hg[_LINK_COLUMNS], sg[_LINK_COLUMNS]]) if len(sg) else hg, "wait on the host")
    if launch_bound:
        kind, title, body, cause_line, fix, fix_line = _launch_bound_text(ls, w, len(k), evidence)
        detail = head + " " + body + did + pace + waits + syncs + fix
    else:
        kind, title, cause_line, fix, fix_line = _host_bound_text(tl, dev, ls, w, evidence, did, len(hg), len(sg))
        detail = head + did + pace + waits + syncs + fix
    if added >= 1:
        detail += (f" About {fmt_us(added)} of the idle time is the recording's own cost ({rec['launches']} "
                   f"launches x {PROFILER_US_PER_LAUNCH:g} us, {rec['ops']} CPU ops x {PROFILER_US_PER_OP:g} us): "
                   "the run without the profiler does not pay it, so it is not at stake here.")
    if held:
        detail += (f" The first-run item holds {fmt_us(min(held, w.host_idle + w.unexplained))} of this "
                   "idle time (compiles, module loading); it is not counted here again.")
    evidence["cause"] = "host" if ls["idle_host_us"] >= ls["idle_sync_us"] else "sync"
    return Finding(kind, severity_for(cost, w.base), title, detail, evidence,
                   cost, cause=cause_line, fix=fix_line, link=link, spans=_host_spans(g, dev, tl, w))


def _host_evidence(dev, ls, w: _Waits, g, k, hg, sg, host) -> dict:
    """The figures of one device's host finding: busy and idle time, launches, the ops the GPU
    waited longest before, the synchronizations, what the host did in the idle time."""
    by_op = (hg.assign(op=hg["after_op"].fillna(hg["after"]))
             .groupby("op")["duration_us"].agg(["sum", "size"]).sort_values("sum", ascending=False))
    top_ops = [{"op": op, "idle_us": float(r["sum"]), "gaps": int(r["size"])}
               for op, r in by_op.head(3).iterrows()]
    sync_calls = Counter(f"{c} in {o}" if o else str(c)
                         for c, o in zip(sg["blocking_call"], sg["blocking_op"]))
    launches, items = len(k), int(ls["launches"])
    return {
        "device": dev["device"], "busy_share": w.busy_wall, "busy_us": dev["busy_us"],
        "wall_us": w.base, "window_us": dev["window_us"], "window_busy_share": dev["busy_share"],
        "idle_us": w.idle_wall, "idle_in_window_us": float(g["duration_us"].sum()),
        "idle_outside_window_us": w.outside,
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


def _framework_paced(evidence) -> bool:
    """Whether the host spent far longer between launches than in each launch call (the time goes
    to Python and framework work, not to the calls)."""
    call, interval = evidence["median_launch_call_us"], evidence["median_launch_interval_us"]
    return bool(call and interval and interval > 3 * call)


def _host_sentences(report, tl, dev, ls, w: _Waits, evidence, host) -> tuple[str, str, str, str, str]:
    """The sentences every host finding's detail holds: how busy the GPU was and how long it
    waited, what the host did meanwhile, its launch pace, the longest waits, the syncs."""
    waited = w.host_idle / w.base
    head = (f"The GPU{on_device(dev, tl)} was busy {w.busy_wall:.1%} of the wall time "
            f"({fmt_us(dev['busy_us'])} of {fmt_us(w.base)}); it waited on the host for {fmt_us(w.host_idle)} "
            f"({waited:.0%}) between launches"
            + (f", and {fmt_us(w.outside)} before its first or after its last work" if w.outside >= 1 else "")
            + ".")
    span_clock = report.meta.get("cuda_event_us") is None
    did = _host_did(host, w.outside, span_clock)
    call, interval = evidence["median_launch_call_us"], evidence["median_launch_interval_us"]
    pace = (f" The host issued a launch every {fmt_us(interval)} (median) while one launch call "
            f"costs {fmt_us(call)}"
            + (", so the time goes to Python and framework work between launches, not to the "
               "launch calls themselves." if _framework_paced(evidence) else "."))
    top_ops = evidence["longest_waits_before"]
    waits = (" Longest waits came before " + ", ".join(
        f"{x['op']} ({fmt_us(x['idle_us'])} in {x['gaps']} gap{'s' * (x['gaps'] != 1)})"
        for x in top_ops) + ".") if top_ops else ""
    sync_calls = Counter(evidence["sync_calls"])
    syncs = (f" Synchronizations idled it for {fmt_us(ls['idle_sync_us'])} more ("
             + ", ".join(f"{n}x {c}" for c, n in sync_calls.most_common(3))
             + "): the host blocked until the GPU drained, so nothing was queued ahead."
             if evidence["sync_gaps"] else "")
    return head, did, pace, waits, syncs


def _launch_bound_text(ls, w: _Waits, n_kernels, evidence) -> tuple[str, str, str, str, str, str]:
    """(kind, title, body, cause, fix sentence, fix line) of a launch-bound device."""
    launches, items = evidence["launches"], int(ls["launches"])
    interval = evidence["median_launch_interval_us"]
    title = (f"Launch-bound: {launches} kernel launches of ~{fmt_us(ls['median_kernel_us'])} "
             f"keep the GPU busy only {w.busy_wall:.0%} of the wall time")
    others = (f" (and {items - launches} copies and memsets: {items} GPU work items, "
              f"{ls['launches_per_ms']:.1f} per ms)" if items > launches else "")
    body = (f"{launches} kernel launches ({evidence['distinct_kernels']} distinct kernels) at "
            f"{evidence['launches_per_ms']:.1f} per ms{others}; the median kernel runs "
            f"{fmt_us(ls['median_kernel_us'])} but the GPU then idles a median "
            f"{fmt_us(ls['median_gap_us'])} until the next one arrives.")
    cause = (f"{launches} kernels of ~{fmt_us(ls['median_kernel_us'])} each, one launched every "
             f"{fmt_us(interval)}: the GPU finishes each long before the next arrives.")
    if _graphs_apply(ls):
        fix = (f" CUDA graphs already apply ({int(ls['graph_kernels'])} of {n_kernels} kernels "
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
    return "launch_bound", title, body, cause, fix, fix_line


def _host_bound_text(tl, dev, ls, w: _Waits, evidence, did, n_host_gaps, n_sync_gaps) -> tuple[str, str, str, str, str]:
    """(kind, title, cause, fix sentence, fix line) of a device that waited on the host without
    being launch-bound: host-bound, idle most of the wall time (GPU idle), or host idle."""
    by_sync = ls["idle_sync_us"] > ls["idle_host_us"]
    what = "synchronizations" if by_sync else "host work between launches"
    if w.bound and _host_paced(w, dev):
        kind = "host_bound"
        title = (f"Host-bound: the GPU idles {1 - w.busy_wall:.0%} of the wall time, mostly "
                 f"waiting on {what}")
    elif w.bound:
        # Most of the idle has no launch to blame (another framework's launches, host
        # work before the first kernel or after the last): say what the GPU did, first.
        kind = "gpu_idle"
        title = (f"The GPU{on_device(dev, tl)} was idle {1 - w.busy_wall:.1%} of the {fmt_us(w.base)} wall "
                 f"time: {fmt_us(dev['busy_us'])} of GPU work")
    else:
        kind = "host_idle"
        title = (f"The GPU{on_device(dev, tl)} waited on the host {fmt_us(w.host_idle)}, "
                 f"{w.host_idle / w.base:.0%} of the wall time")
    fix = (" Fix: take syncs out of the step (.item(), .cpu(), printing CUDA tensors, "
           "blocking .cuda() of pageable tensors); replay the step as a CUDA graph "
           "(torch.compile(mode=\"reduce-overhead\")) so the host stops pacing the GPU; or "
           "give each launch more work (larger batches).")
    if kind == "gpu_idle":
        cause = did.strip() or "The host did not keep the GPU fed."
        fix_line = ("Find what the host does in the region (profile with --stack / with_stack=True "
                    "for the Python); move that work out, or give the GPU more work per call "
                    "(jit or capture the whole step, larger batches).")
        fix = (" Fix: find what the host does in the region (--stack shows the Python), move it "
               "out of the measured step, or give the GPU more work per call (jit or capture "
               "the whole step in one graph, larger batches).")
    elif by_sync:
        cause = (f"{n_sync_gaps} synchronization{'s' * (n_sync_gaps != 1)} made the host wait for the GPU "
                 f"to drain ({fmt_us(ls['idle_sync_us'])} idle), so nothing was queued ahead.")
        fix_line = ("Take syncs out of the step (.item(), .cpu(), print of CUDA tensors); "
                    "copy with non_blocking=True from pinned memory.")
    elif _graphs_apply(ls):
        cause = (f"The next launch came after the GPU went idle {n_host_gaps} time{'s' * (n_host_gaps != 1)}; "
                 f"{int(ls['graph_kernels'])} of {int(ls['kernels'])} kernels already come from "
                 f"{int(ls['graph_launches'])} CUDA graph replays, so the idle lies between replays.")
        fix = (" Fix: capture more of the step in one CUDA graph, or cut the host work between "
               "replays; give each replay more work (larger batches).")
        fix_line = "Capture more of the step in one CUDA graph, or cut the host work between replays."
    else:
        interval = evidence["median_launch_interval_us"]
        cause = (f"The next launch came after the GPU went idle {n_host_gaps} time{'s' * (n_host_gaps != 1)}"
                 + (f": the host spends {fmt_us(interval)} between launches (median)"
                    + (", in Python and framework work" if _framework_paced(evidence) else "") if interval else "")
                 + ".")
        fix_line = ("Replay the step as a CUDA graph (torch.compile(mode=\"reduce-overhead\")), "
                    "move host work out of the step, or give each launch more work.")
    return kind, title, cause, fix, fix_line


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


def _cold_finding(cold, base, idle_wall, dev) -> Finding:
    """``cold_start``: the run pays what a process pays once; profile it again."""
    cost = float(min(cold["cold_us"], base))
    share = cost / base if base else float("nan")
    what = (("compiling, " if cold["compile_us"] or cold["jit_us"] else "")
            + ("cuDNN's algorithm search, " if cold["search_us"] else ""))
    what += "loading and first-call setup" if what else "module loading and first-call setup"
    title = f"This looks like a first run: {fmt_us(cost)} ({share:.0%} of the wall time) went to {what}"
    detail = ("What a process pays once: " + "; ".join(cold["parts"]) + ". The second run does not pay "
              "it, so steady-state advice (CUDA graphs, fewer launches or syncs) does not apply to this time. "
              "Profile it again, or use --warmup 1 (%%kernelprofile --warmup 1; with ks.profile(), call "
              "the code once before the recorded call).")
    rest = idle_wall - cold["cold_us"] + cold["first_launch_extra_us"]
    if rest > 0.05 * base:
        detail += (f" The GPU idled {fmt_us(rest)} more that these do not explain (host work the profiler "
                   "does not name, before the first or between launches).")
    ev = {k: v for k, v in cold.items() if k not in ("intervals", "search_intervals", "cold")}
    ev.update({"device": dev["device"], "wall_us": base, "idle_us": idle_wall})
    ms, me = cold["intervals"]
    link = (range_link(dev["device"], float(ms[0]), float(me[-1]), "first-run setup") if len(ms) else None)
    return Finding("cold_start", severity_for(cost, base), title, detail, ev, cost,
                   cause=(cold["parts"][0][0].upper() + cold["parts"][0][1:] + ("; " + "; ".join(cold["parts"][1:3]) if len(cold["parts"]) > 1 else "")
                          + ".") if cold["parts"] else "First-call setup.",
                   fix="This looks like a first run: profile it again or use --warmup 1.", link=link)
