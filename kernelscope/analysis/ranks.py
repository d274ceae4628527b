"""Many ranks of one distributed run: each rank summarised apart, then the summaries combined.

:func:`rank_summary` reduces one rank's Report to what the cross-rank view needs (a few small
tables: its kernel summary, its steps, its collectives and the merged busy intervals for the
lanes), so that it can run where the trace lies and only the summary travels.
:func:`combine` puts the summaries side by side on one clock and answers the questions a
multi-GPU run raises: which rank is slowest in each step and by how much, how much
communication compute hides on each rank, what each collective moved at what bus bandwidth
against the link, and what to fix first.

Words used in the tables:

- *compute*: the union of a rank's kernels other than NCCL's (work on the GPU);
- *communication*: the union of its collectives: NCCL kernels on the GPU, or the spans of
  gloo/MPI calls on the host;
- *exposed communication*: communication while no compute runs on that rank (time the
  collective adds to the step); *hidden*: the rest;
- *work*: a step's time less its exposed communication. In a synchronous job every rank's step
  lasts about as long as the slowest one's, because the others wait for it in a collective; so
  the rank that waits least, the one with the most work, is the one the others wait for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelscope.analysis.collectives import collectives
from kernelscope.analysis.findings.base import Finding, severity_for
from kernelscope.analysis.intervals import covered_length, intersection_length, merge_intervals, union_length
from kernelscope.analysis.peaks import peer_link_gbps
from kernelscope.analysis.steps import assign_steps, key_time, step_windows
from kernelscope.units import fmt_pct, fmt_us

# Intervals kept per lane (compute, communication, copies) and rank for the view: merged, then
# coarsened until they fit, so that 64 ranks of long runs still make a small payload.
LANE_INTERVALS = 1500
# The same rank is "the slow rank" when it is the slowest in at least this share of the steps
# and lags the median rank by at least SLOW_RANK_MIN_LAG of a step.
SLOW_RANK_MIN_STEPS = 2 / 3
SLOW_RANK_MIN_LAG = 0.05
# Work of the ranks spread by this much of the median is an imbalance worth a look.
IMBALANCE_MIN_SPREAD = 0.10
# Exposed communication above this share of the median rank's step time is worth a finding.
EXPOSED_COMM_MIN_SHARE = 0.10
LANE_KINDS = ("compute", "comm", "copy")


@dataclass
class RankSummary:
    """What one rank contributes to a multi-rank report (small: no launch-level tables).

    >>> s = rank_summary(ks.load("ranks/rank1.pt.trace.json.gz"))
    >>> s.info["rank"], len(s.steps)
    (1, 3)
    """

    info: dict
    kernels: pd.DataFrame
    steps: pd.DataFrame
    collectives: pd.DataFrame
    overlap: dict
    lanes: dict = field(default_factory=dict)


def rank_summary(rep, *, source=None) -> RankSummary:
    """Summarise one rank's Report for :func:`combine` (pure; runs where the trace lies).

    >>> rank_summary(ks.load("ranks/rank1.pt.trace.json.gz")).overlap["exposed_comm_us"]
    131990.45967968734
    """
    meta = rep.meta
    dist = meta.get("distributed") if isinstance(meta.get("distributed"), dict) else {}
    k = rep.kernels
    comm = collectives(rep)
    is_nccl = (k["backend"] == "NCCL").to_numpy(dtype=bool) if len(k) else np.zeros(0, bool)
    comp = k[~is_nccl]
    intervals = {
        "compute": _spans(comp["start_us"], comp["duration_us"]),
        "comm": _spans(comm["start_us"], comm["duration_us"]),
        "copy": _spans(rep.copies["start_us"], rep.copies["duration_us"]),
    }
    merged = {kind: merge_intervals(*iv) for kind, iv in intervals.items()}
    steps = _step_table(rep, comp, comm, merged)
    compute_us = float((merged["compute"][1] - merged["compute"][0]).sum())
    comm_us = float((merged["comm"][1] - merged["comm"][0]).sum())
    hidden = intersection_length(merged["comm"], merged["compute"]) if comm_us else 0.0
    overlap = {"compute_us": compute_us, "comm_us": comm_us, "hidden_comm_us": hidden,
               "exposed_comm_us": comm_us - hidden, "hidden_share": hidden / comm_us if comm_us else None}
    devices = rep.devices
    info = {
        "rank": dist.get("rank"), "world_size": dist.get("world_size"), "backend": dist.get("backend"),
        "host": dist.get("host"), "local_rank": dist.get("local_rank"),
        "process_groups": dist.get("process_groups") or [],
        "source": str(source or meta.get("source") or ""), "time_origin_ns": meta.get("time_origin_ns"),
        "span_us": meta.get("span_us"), "wall_us": rep.wall_time_us,
        "device": str(devices["name"].iloc[0]) if len(devices) else None, "devices": int(len(devices)),
        "launches": int(len(k)), "kernels": int(k["name"].nunique()) if len(k) else 0,
        "gpu_time_us": rep.gpu_time_us, "copies": int(len(rep.copies)), "partial": rep.partial,
        "notes": [str(n) for n in rep.notes],
    }
    kernels = rep.summary()
    return RankSummary(info=info, kernels=kernels, steps=steps, collectives=comm, overlap=overlap,
                       lanes={kind: _coarsen(*merged[kind]) for kind in LANE_KINDS})


def _spans(start, dur):
    s = np.asarray(start, dtype=float)
    d = np.asarray(dur, dtype=float)
    ok = np.isfinite(s) & np.isfinite(d)
    return s[ok], s[ok] + d[ok]


def _step_table(rep, comp, comm, merged) -> pd.DataFrame:
    w = step_windows(rep.ops)
    if not len(w):
        # No step markers: the whole recording is one step.
        ends = [float(np.max(e)) for _, e in merged.values() if len(e)]
        span = rep.meta.get("span_us") or (max(ends) if ends else 0.0)
        w = pd.DataFrame({"step": ["(whole recording)"], "index": [0], "start_us": [0.0],
                          "end_us": [float(max([span] + ends))]})
    starts, ends = w["start_us"].to_numpy(float), w["end_us"].to_numpy(float)

    def assign(key):
        # The step whose host span holds the moment the work was asked for.
        return assign_steps(starts, ends, key)

    ck = assign(key_time(comp["launch_start_us"], comp["start_us"])) if len(comp) else np.zeros(0, int)
    mk = assign(comm["launch_us"].to_numpy(float)) if len(comm) else np.zeros(0, int)
    cs, ce = _spans(comp["start_us"], comp["duration_us"]) if len(comp) else (np.zeros(0), np.zeros(0))
    ms, me = (comm["start_us"].to_numpy(float), comm["end_us"].to_numpy(float)) if len(comm) else (np.zeros(0), np.zeros(0))
    cms, cme = merged["compute"]
    rows = []
    for i, r in enumerate(w.itertuples(index=False)):
        c = ck == i
        m = mk == i
        end = max([r.end_us] + ([float(ce[c].max())] if c.any() else []) + ([float(me[m].max())] if m.any() else []))
        comm_s, comm_e = merge_intervals(ms[m], me[m])
        comm_us = float((comm_e - comm_s).sum())
        hidden = float(covered_length(cms, cme, comm_s, comm_e).sum()) if len(comm_s) else 0.0
        step_us = end - r.start_us
        rows.append({"step": r.step, "index": int(r.index), "start_us": float(r.start_us), "end_us": float(end),
                     "step_us": step_us, "compute_us": union_length(cs[c], ce[c]),
                     "comm_us": comm_us, "exposed_comm_us": comm_us - hidden,
                     "collectives": int(m.sum()), "launches": int(c.sum()),
                     "work_us": step_us - (comm_us - hidden)})
    return pd.DataFrame(rows)


def _coarsen(s, e, limit=LANE_INTERVALS):
    """At most ``limit`` disjoint intervals: gaps shorter than a growing resolution are closed
    (a lane is drawn a few thousand pixels wide at most)."""
    s, e = np.asarray(s, float), np.asarray(e, float)
    if len(s) <= limit:
        return s, e
    span = float(e.max() - s.min()) or 1.0
    res = span / (limit * 4)
    while len(s) > limit:
        keep = np.r_[True, s[1:] - e[:-1] > res]
        first = np.flatnonzero(keep)
        last = np.r_[first[1:] - 1, len(s) - 1]
        s, e = s[first], np.maximum.accumulate(e)[last]
        res *= 2
    return s, e


# -- across ranks ------------------------------------------------------------------------------

@dataclass
class RankTables:
    """:func:`combine`'s answer: the tables of a multi-rank report (all with a ``rank`` column)."""

    ranks: pd.DataFrame
    kernels: pd.DataFrame
    steps: pd.DataFrame
    stragglers: pd.DataFrame
    collectives: pd.DataFrame
    comm: pd.DataFrame
    overlap: pd.DataFrame
    lanes: dict
    findings: list
    notes: list
    origin_ns: int | None = None


def assign_ranks(infos: list, names: list) -> tuple[list, list]:
    """A rank for every trace: the one it records, else one in its file name (``rank3``,
    ``rank-3``, ``rank_3``), else 0 for a lone trace, else the next free number; and notes
    saying where a rank was not recorded or was recorded twice.

    >>> assign_ranks([{"rank": None}], ["run.json"])
    ([0], [])
    >>> assign_ranks([{"rank": None}, {"rank": None}], ["a/rank1.json", "a/rank0.json"])[0]
    [1, 0]
    """
    notes = []
    wanted = []
    for info, name in zip(infos, names):
        r = info.get("rank")
        if r is None:
            m = re.search(r"rank[-_]?(\d+)", str(name).rsplit("/", 1)[-1], re.I)
            r = int(m.group(1)) if m else None
        wanted.append(r)
    if len(wanted) == 1 and wanted[0] is None:
        return [0], []
    out, used = [], set()
    for r, name in zip(wanted, names):
        if r is not None and r not in used:
            out.append(r)
            used.add(r)
            continue
        free = next(i for i in range(len(wanted) + len(used) + 1) if i not in used and i not in wanted)
        notes.append(f"{name}: {'rank ' + str(r) + ' is taken by another trace' if r is not None else 'records no rank'}"
                     f"; read as rank {free}")
        out.append(free)
        used.add(free)
    return out, notes


def combine(summaries: list) -> RankTables:
    """Put rank summaries side by side on one clock (see the module docstring for the words).

    >>> t = combine([rank_summary(ks.load(f"ranks/rank{i}.pt.trace.json.gz")) for i in (0, 1)])
    >>> t.stragglers[["step", "slowest_rank", "lag_us"]]
                 step  slowest_rank      lag_us
    0  ProfilerStep#1             1  52885.9142
    1  ProfilerStep#2             1  52945.0616
    2  ProfilerStep#3             1  53545.9175
    """
    summaries = sorted(summaries, key=lambda s: s.info["rank"])
    origins = [s.info.get("time_origin_ns") for s in summaries]
    known = [o for o in origins if isinstance(o, int)]
    origin = min(known) if known else None
    offsets = [((o - origin) / 1000.0) if isinstance(o, int) and origin is not None else 0.0 for o in origins]
    notes = []
    if len(known) < len(origins):
        notes.append("some traces hold no clock origin; their times are not aligned with the others")
    hosts = {s.info.get("host") for s in summaries}
    if len(hosts - {None}) > 1:
        notes.append("ranks ran on several hosts: their clocks are aligned only as well as the hosts' "
                     "clocks agree, so arrival skews across hosts are estimates")

    def tagged(df, s, off, cols=()):
        d = df.copy()
        for c in cols:
            d[c] = d[c].astype(float) + off
        d.insert(0, "rank", s.info["rank"])
        return d

    steps = pd.concat([tagged(s.steps, s, off, ("start_us", "end_us")) for s, off in zip(summaries, offsets)],
                      ignore_index=True)
    kernels = pd.concat([tagged(s.kernels, s, 0.0) for s in summaries], ignore_index=True)
    comm = pd.concat([tagged(s.collectives, s, off, ("start_us", "end_us", "launch_us"))
                      for s, off in zip(summaries, offsets) if len(s.collectives)], ignore_index=True) \
        if any(len(s.collectives) for s in summaries) else _empty_collectives()
    comm = _match_calls(comm, summaries)
    overlap = pd.DataFrame([{"rank": s.info["rank"], **s.overlap} for s in summaries])
    stragglers = _stragglers(steps)
    ranks = _rank_table(summaries, steps, overlap)
    lanes = {s.info["rank"]: {kind: (np.asarray(a) + off, np.asarray(b) + off) for kind, (a, b) in s.lanes.items()}
             for s, off in zip(summaries, offsets)}
    tables = RankTables(ranks=ranks, kernels=kernels, steps=steps, stragglers=stragglers, collectives=comm,
                        comm=comm_summary(comm), overlap=overlap, lanes=lanes, findings=[], notes=notes,
                        origin_ns=origin)
    tables.findings = rank_findings(tables)
    return tables


def _empty_collectives() -> pd.DataFrame:
    from kernelscope.analysis.collectives import COLUMNS
    return pd.DataFrame({c: pd.Series(dtype=object) for c in ["rank", *COLUMNS]})


def _match_calls(comm: pd.DataFrame, summaries) -> pd.DataFrame:
    """Number each rank's calls per (process group, kind) in time order, so that the n-th call
    on every rank is the same collective (NCCL and gloo both need every rank of a group to issue
    a group's collectives in one order); then per call: the rank that arrived last, the arrival
    skew, and the bus bandwidth of the last arrival's time (the others' include waiting for it)."""
    extra = ["call", "last_rank", "skew_us", "transfer_us", "call_busbw_gbps", "link_gbps", "busbw_of_link"]
    if not len(comm):
        for c in extra:
            comm[c] = pd.Series(dtype=float)
        return comm
    comm = comm.copy()
    pg = comm["process_group"].fillna("").astype(str)
    comm["call"] = comm.assign(_pg=pg).groupby(["rank", "_pg", "kind"], sort=False).cumcount()
    key = [pg, comm["kind"], comm["call"]]
    g = comm.groupby(key, sort=False)
    latest = g["start_us"].transform("max")
    comm["skew_us"] = latest - g["start_us"].transform("min")
    last = comm["start_us"] == latest
    # The last arrival's duration stands for the transfer; its rank is the one others waited for.
    lr = comm[last].assign(_pg=pg[last]).drop_duplicates(["_pg", "kind", "call"]).set_index(["_pg", "kind", "call"])
    idx = pd.MultiIndex.from_arrays(key)
    comm["last_rank"] = lr["rank"].reindex(idx).to_numpy()
    comm["transfer_us"] = lr["duration_us"].reindex(idx).to_numpy()
    size = comm["bytes"].astype("float64")
    t = comm["transfer_us"].astype("float64")
    comm["call_busbw_gbps"] = np.where(t > 0, size / t.where(t > 0) / 1e3, np.nan) * comm["busbw_factor"].astype(float)
    link = _links(summaries)
    comm["link_gbps"] = [link.get(b) if b == "NCCL" else None for b in comm["backend"]]
    comm["link_gbps"] = comm["link_gbps"].astype("float64")
    comm["busbw_of_link"] = comm["call_busbw_gbps"] / comm["link_gbps"]
    return comm


def _links(summaries) -> dict:
    """The peer link rate (GB/s, one direction, datasheet) NCCL's traffic crosses, per backend:
    known when every rank's host is recorded and is the same one (NVLink between the GPUs of one
    board); across hosts it is the network, which no trace records."""
    hosts = {s.info.get("host") for s in summaries}
    devices = {s.info.get("device") for s in summaries}
    if None in hosts or len(hosts) != 1 or len(devices) != 1:
        return {}
    rate = peer_link_gbps(next(iter(devices)))
    return {"NCCL": rate} if rate else {}


def comm_summary(comm: pd.DataFrame) -> pd.DataFrame:
    """Collectives by kind: calls, bytes, time, algorithm and protocol, and the bus bandwidth
    (median over calls, of the last arrival's time) against the link where it is known.

    >>> ranks.comm_summary()[["kind", "calls", "bytes_per_call", "busbw_gbps"]]
            kind  calls  bytes_per_call  busbw_gbps
    0  AllReduce    9.0      3.3563e+07      0.3698
    1  Broadcast    3.0      4.1943e+06      3.6782
    """
    cols = ["backend", "kind", "algorithm", "protocol", "dtype", "calls", "ranks", "bytes_per_call",
            "bytes", "time_us", "mean_us", "busbw_gbps", "link_gbps", "busbw_of_link", "skew_us"]
    if not len(comm):
        return pd.DataFrame({c: [] for c in cols})
    c = comm.assign(algorithm=comm["algorithm"].fillna("-"), protocol=comm["protocol"].fillna("-"),
                    dtype=comm["dtype"].fillna("-"))
    g = c.groupby(["backend", "kind", "algorithm", "protocol", "dtype"], sort=False)
    n_ranks = g["rank"].nunique()
    out = pd.DataFrame({
        "calls": g["call"].size() / n_ranks, "ranks": n_ranks,
        "bytes_per_call": g["bytes"].median(), "bytes": g["bytes"].sum() / n_ranks,
        "time_us": g["duration_us"].sum() / n_ranks, "mean_us": g["duration_us"].mean(),
        "busbw_gbps": g["call_busbw_gbps"].median(), "link_gbps": g["link_gbps"].first(),
        "skew_us": g["skew_us"].median(),
    }).reset_index()
    out["busbw_of_link"] = out["busbw_gbps"] / out["link_gbps"]
    return out.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)[cols]


def _stragglers(steps: pd.DataFrame) -> pd.DataFrame:
    cols = ["step", "index", "ranks", "slowest_rank", "slowest_work_us", "median_work_us", "lag_us",
            "lag_share", "fastest_rank", "spread_us", "step_us", "slowest_compute_us", "median_compute_us"]
    rows = []
    for (name, index), g in steps.groupby(["step", "index"], sort=False):
        if len(g) < 2:
            continue
        g = g.sort_values("rank")
        slow = g.loc[g["work_us"].idxmax()]
        fast = g.loc[g["work_us"].idxmin()]
        others = g[g["rank"] != slow["rank"]]
        med = float(others["work_us"].median())
        step_us = float(g["step_us"].median())
        rows.append({"step": name, "index": int(index), "ranks": int(len(g)), "slowest_rank": int(slow["rank"]),
                     "slowest_work_us": float(slow["work_us"]), "median_work_us": med,
                     "lag_us": float(slow["work_us"]) - med,
                     "lag_share": (float(slow["work_us"]) - med) / step_us if step_us > 0 else None,
                     "fastest_rank": int(fast["rank"]), "spread_us": float(slow["work_us"] - fast["work_us"]),
                     "step_us": step_us, "slowest_compute_us": float(slow["compute_us"]),
                     "median_compute_us": float(others["compute_us"].median())})
    return pd.DataFrame(rows, columns=cols)


def _rank_table(summaries, steps, overlap) -> pd.DataFrame:
    rows = []
    by_rank = steps.groupby("rank")
    for s in summaries:
        i = s.info
        st = by_rank.get_group(i["rank"]) if i["rank"] in by_rank.groups else steps.iloc[0:0]
        ov = s.overlap
        rows.append({
            "rank": i["rank"], "host": i.get("host"), "local_rank": i.get("local_rank"), "device": i.get("device"),
            "backend": i.get("backend"), "world_size": i.get("world_size"), "steps": int(len(st)),
            "step_us": float(st["step_us"].median()) if len(st) else None,
            "work_us": float(st["work_us"].sum()) if len(st) else None,
            "compute_us": ov["compute_us"], "comm_us": ov["comm_us"], "exposed_comm_us": ov["exposed_comm_us"],
            "hidden_share": ov["hidden_share"], "launches": i["launches"], "gpu_time_us": i["gpu_time_us"],
            "collectives": int(len(s.collectives)), "wall_us": i.get("wall_us"),
            "source": i.get("source"),
        })
    return pd.DataFrame(rows)


# -- findings -------------------------------------------------------------------------------------

def rank_findings(t: RankTables) -> list:
    """Exposed communication, one slow rank, imbalance across ranks: most costly first.

    >>> [f.kind for f in rank_findings(combine(ranks.summaries))]
    ['slow_rank', 'exposed_communication']
    """
    out = []
    for rule in (_slow_rank, _imbalance, _exposed_comm):
        try:
            out.extend(rule(t))
        except Exception as e:  # noqa: BLE001 - one broken rule must not hide the others
            out.append(Finding("analysis_error", "info", f"could not run {rule.__name__}: {e!r}",
                               "This is a kernelscope bug; the other findings are unaffected.", {"rule": rule.__name__}))
    return sorted(out, key=lambda f: -f.cost_us)


def _window(t) -> float:
    """The run's time per rank (median over ranks of the summed step times)."""
    if not len(t.steps):
        return 0.0
    return float(t.steps.groupby("rank")["step_us"].sum().median())


def _slow_rank(t) -> list:
    s = t.stragglers
    if not len(s):
        return []
    counts = s["slowest_rank"].value_counts()
    rank, times = int(counts.index[0]), int(counts.iloc[0])
    mine = s[s["slowest_rank"] == rank]
    lag = float(mine["lag_us"].median())
    share = float(mine["lag_share"].median()) if mine["lag_share"].notna().any() else 0.0
    if times < SLOW_RANK_MIN_STEPS * len(s) or share < SLOW_RANK_MIN_LAG:
        return []
    cost = float(mine["lag_us"].sum())
    extra = float((mine["slowest_compute_us"] - mine["median_compute_us"]).median())
    why = (f"It computed {fmt_us(extra)} more per step on the GPU than the median rank"
           if extra > 0.5 * lag else
           "Its GPU compute is close to the others', so the time goes on the host (data loading, "
           "Python, launches) before it reaches the collective")
    return [Finding(
        "slow_rank", severity_for(cost, _window(t)),
        f"Rank {rank} is the slowest in {times} of {len(s)} steps, by {fmt_us(lag)} per step "
        f"({share:.0%} of a step): the other ranks wait for it",
        f"{why}. The others spend that time waiting in their next collective (exposed "
        f"communication on their lanes). Even the work out, or give rank {rank} less of it.",
        {"rank": rank, "steps_slowest": times, "steps": int(len(s)), "lag_us_median": lag,
         "lag_share_median": share, "compute_extra_us_median": extra,
         "per_step": s[["step", "slowest_rank", "lag_us"]].head(20).to_dict("records")},
        cost_us=cost)]


def _imbalance(t) -> list:
    s = t.stragglers
    if not len(s) or any(f.kind == "slow_rank" for f in _slow_rank(t)):
        return []
    spread = (s["spread_us"] / s["median_work_us"].where(s["median_work_us"] > 0)).median()
    if not np.isfinite(spread) or spread < IMBALANCE_MIN_SPREAD:
        return []
    work = t.steps.groupby("rank")["work_us"].sum()
    cost = float((s["lag_us"]).sum())
    return [Finding(
        "imbalance", severity_for(cost, _window(t)),
        f"Work is uneven across ranks: the busiest rank works {spread:.0%} more than the least busy "
        f"in a typical step, and a different rank is the slowest from step to step",
        "Every step lasts as long as its slowest rank; uneven shards (sequence lengths, batch sizes, "
        "expert routing) or a rank sharing its GPU or CPU with other work make the spread.",
        {"spread_share_median": float(spread), "work_us_by_rank": {int(r): float(v) for r, v in work.items()},
         "slowest_by_step": s[["step", "slowest_rank", "lag_us"]].head(20).to_dict("records")},
        cost_us=cost)]


def _exposed_comm(t) -> list:
    r = t.ranks
    if not len(r) or not r["comm_us"].fillna(0).gt(0).any():
        return []
    steps = t.steps.groupby("rank")[["exposed_comm_us", "step_us"]].sum()
    share = (steps["exposed_comm_us"] / steps["step_us"].where(steps["step_us"] > 0)).dropna()
    if not len(share) or share.median() < EXPOSED_COMM_MIN_SHARE:
        return []
    hidden = t.overlap.set_index("rank")["hidden_share"].astype(float)
    slow = _slow_rank(t)
    detail = "Collectives ran while no compute ran on the rank, so they added to its steps. "
    if slow and slow[0].evidence["rank"] in steps.index:
        # The slow rank waits for nobody: its exposed time is the collectives' own cost; the
        # others' excess is waiting for it (the slow-rank finding's cost).
        sr = slow[0].evidence["rank"]
        cost = float(steps.loc[sr, "exposed_comm_us"])
        detail += (f"On the other ranks most of it is waiting for rank {sr}; rank {sr}'s own exposed "
                   f"communication ({fmt_us(cost)}) is what the collectives cost once it catches up. ")
    else:
        cost = float(steps["exposed_comm_us"].median())
    detail += ("Overlap communication with compute: DDP's bucketing (bucket_cap_mb), FSDP's prefetch, "
               "or issuing the collective asynchronously (async_op=True) before independent work.")
    lo, hi = float(share.min()), float(share.max())
    span = f"{lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{lo:.0%} to {hi:.0%}"
    return [Finding(
        "exposed_communication", severity_for(cost, _window(t)),
        f"Communication is exposed for {span} of the step time across ranks "
        f"({fmt_us(float(steps['exposed_comm_us'].median()))} per rank, median); compute hides "
        f"{fmt_pct(float(hidden.median()), 0)} of it",
        detail,
        {"exposed_share_by_rank": {int(k): float(v) for k, v in share.items()},
         "exposed_comm_us_by_rank": {int(k): float(v) for k, v in steps["exposed_comm_us"].items()},
         "hidden_share_by_rank": {int(k): (None if not np.isfinite(v) else float(v)) for k, v in hidden.items()}},
        cost_us=cost)]


