"""The timeline's other rules: host-blocking synchronizations, streams that do not overlap, CUDA
graphs, a GPU-bound run. The host's rules (launch-bound, host-bound, cold start) are
:mod:`~kernelscope.analysis.findings.host`, the copies' :mod:`~kernelscope.analysis.findings.copies`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.backends import distinct_rows
from kernelscope.analysis.distinct import text_codes
from kernelscope.analysis.findings.base import (
    Finding,
    device_rows,
    gap_link,
    kernel_link,
    on_device,
    severity_for,
    span_link,
)
from kernelscope.analysis.intervals import Spans, covered_length, union_length
from kernelscope.analysis.summary import kernel_summary
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# Busy this much of its window, the GPU's time is in the kernels (the opposite of host-bound).
GPU_BOUND_MIN_BUSY = 0.8
# One host-blocking call costs the GPU a round trip: it drains, the host wakes, the next launch
# arrives. 11.9 us on an H200 (40 synchronizes after 6.5 us kernels: 0.87 ms, 0.39 ms without;
# benchmarks/advice synchronize_per_iter).
SYNC_ROUND_TRIP_US = 10.0


# -- rules ---------------------------------------------------------------------------------------

def sync_findings(report, tl) -> list:
    """Host-blocking synchronizations and blocking copies, with the idle time they caused.

    >>> [x["call"] for x in sync_findings(rep, rep.timeline)[0].evidence["calls"]][1:3]
    ['cudaStreamSynchronize in aten::copy_ (under aten::to)', 'cudaDeviceSynchronize']
    """
    from kernelscope.analysis.cold_start import cold_of
    b = tl.blocking
    if not len(b):
        return []
    g = tl.gaps
    sg = g[g["cause"] == "sync"] if len(g) else g
    cold = cold_of(report, tl)
    searched, held = 0, 0.0
    if cold is not None:
        # A first run's item holds what it explains: the syncs of cuDNN's algorithm search, and
        # the idle after a sync that its loading and setup fill (each microsecond once).
        total = float(sg["duration_us"].sum()) if len(sg) else 0.0
        b, sg, searched, held = _left_by_first_run(b, sg, cold)
        if not len(b):
            return []
        cost = max(total - held, 0.0)
    else:
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
    if searched or held >= 1:
        detail += (" This looks like a first run: "
                   + (f"{int(searched)} more synchronizations were cuDNN's algorithm search (a warm run "
                      "makes none)" if searched else "")
                   + ("; " if searched and held >= 1 else "")
                   + (f"{fmt_us(held)} of the idle after these lies in first-run setup" if held >= 1 else "")
                   + ": the first-run item holds that time.")
    detail += (" Fix: keep values on the GPU instead of .item()/.cpu()/print inside the loop; copy "
               "to pinned memory with non_blocking=True and synchronize once; find hidden syncs "
               "with torch.cuda.set_sync_debug_mode(\"warn\").")
    # What taking them out gives: the host's wait inside them and one round trip each (the GPU
    # drains, the host wakes and launches again); the idle after them beyond that is the host's
    # own pace between launches, which stays (a loop of .item() after small matmuls idled the GPU
    # 3.3 ms recorded and gained 0.17 ms without its syncs, benchmarks/advice).
    idle_caused = cost
    inside = int((~closing).sum())
    cost = min(cost, float(b.loc[~closing, "duration_us"].sum()) + inside * SYNC_ROUND_TRIP_US)
    if cost < idle_caused:
        detail += (f" At stake: {fmt_us(cost)}, their waits and one round trip each "
                   f"({SYNC_ROUND_TRIP_US:g} us); the rest of the idle after them is the host's own pace "
                   "between launches, which stays without them.")
    evidence = {"calls": calls, "syncs": n_sync, "blocking_copies": n_copy, "host_blocked_us": host_us,
                "idle_caused_us": idle_caused, "after_last_gpu_work": after_end}
    top = calls[0]["call"] if calls else "a synchronization"
    cause = (f"The host waited for the GPU to finish {len(b) - after_end} time{'s' * (len(b) - after_end != 1)} "
             f"inside the region (most in {top}), so nothing was queued ahead.")
    fix = ("Keep values on the GPU instead of .item()/.cpu()/print in the loop; copy to pinned memory "
           "with non_blocking=True and synchronize once.")
    link = (gap_link(sg, "idle after a synchronization") if len(sg)
            else span_link(b[~closing], "host-blocking call", "end_us"))
    return [Finding("syncs", severity_for(cost, window), title, detail, evidence, cost,
                    cause=cause, fix=fix, link=link, spans=Spans.of_rows(sg) if len(sg) else Spans())]


def stream_findings(report, tl) -> list:
    """Which streams ran work, which are side streams, and how long they overlapped.

    >>> stream_findings(cs, cs.timeline)[0].evidence["side_streams"]
    [38, 42]
    """
    out = []
    for dev in device_rows(tl):
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
        title = (f"Work ran on {len(b)} streams{on_device(dev, tl)} (main {main}, side "
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
    k = report.kernels
    known, why = n_k, None
    if "graph_unmatched" in k.columns:
        g = k[k["graph_launch"].fillna(False).astype(bool)]
        un = g["graph_unmatched"].dropna()
        known = n_k - len(un)
        why = un.value_counts().index[0] if len(un) else None
    told = (f" {known} of {n_k} are given the op, shapes and line that captured them"
            + (f"; {n_k - known} are not, because {why}." if why else "."))
    return [Finding("cuda_graphs", "info",
                    f"CUDA graphs apply: {n_k} of {total} kernels came from {n_g} graph replay"
                    f"{'s' * (n_g != 1)}",
                    "Graph replays launch all their kernels with one host call, so per-kernel "
                    "launch cost is gone for these; the GPU-side gap between them is "
                    f"{fmt_us(float(ls['median_gap_us'].median()))} (median)." + told,
                    {"graph_kernels": n_k, "graph_launches": n_g, "kernels": total,
                     "attributed": known, "unmatched_reason": why})]


def gpu_bound_findings(report, tl) -> list:
    """The GPU was kept busy: the time is in the kernels (or the copies) themselves.

    Busy is taken over the wall time: two graph replays busy 93% of their first-to-last window
    but 40% of the wall time are no GPU-bound run.

    >>> gpu_bound_findings(after, after.timeline)
    []
    """
    from kernelscope.analysis.timeline import gpu_busy_share
    out = []
    for dev in device_rows(tl):
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
                           f"The GPU{on_device(dev, tl)} was busy {share:.0%} of the wall time: the time is "
                           f"in the {what}", detail,
                           {"device": dev["device"], "busy_share": share, "top": top,
                            "kernel_busy_us": kernel_busy, "copy_busy_us": copy_busy, "busy_in": what},
                           cause=f"Little is lost between kernels: the {what} themselves take the time.",
                           fix=("Make the largest kernels faster (their occupancy, roofline and shapes "
                                "say how)." if what == "kernels" else "Cut the copies (see the copy findings)."),
                           link=kernel_link(names, "the largest kernels") if names else None))
    return out


# -- helpers -------------------------------------------------------------------------------------

def _left_by_first_run(b, sg, cold) -> tuple[pd.DataFrame, pd.DataFrame, int, float]:
    """What the sync finding keeps of a first run (``cold``, from
    :func:`~kernelscope.analysis.cold_start.cold_of`): the blocking calls outside cuDNN's
    algorithm search, the sync gaps mostly outside first-run setup (its link), how many calls
    the search made, and the sync idle that first-run setup covers (the first-run item's)."""
    ss, se = cold["search_intervals"]
    searched = 0
    if len(ss):
        t = b["start_us"].to_numpy(float)
        i = np.searchsorted(ss, t, "right") - 1
        inside = (i >= 0) & (t < se[np.maximum(i, 0)])
        searched = int(inside.sum())
        b = b[~inside]
    ms, me = cold["intervals"]
    held = 0.0
    if len(sg) and len(ms):
        cov = covered_length(ms, me, sg["start_us"], sg["end_us"])
        held = float(cov.sum())
        sg = sg[cov < 0.5 * sg["duration_us"].to_numpy(float)]
    return b, sg, searched, held


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


