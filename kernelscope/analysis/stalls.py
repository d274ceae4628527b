"""Warp-stall reasons: one vocabulary for every source of stall samples.

Nsight Compute (``smsp__pcsamp_warps_issue_stalled_<reason>``) and Triton's Proton PC sampling
(``stalled_<reason>``) count the same hardware states. Both are read into one table,
``report.stalls``: one row per launch (or per kernel name, where the source only aggregates by
name), a ``source`` column saying who measured it, ``samples`` (stall samples counted), and one
column per reason holding that reason's share of the row's stall samples (0..1; ``selected``,
a warp issuing, is not a stall and is left out of the shares).

>>> normalize_reason("smsp__pcsamp_warps_issue_stalled_long_scoreboard")
'long_scoreboard'
>>> explain("long_scoreboard").title
'waiting on global/local memory'
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class StallReason:
    """What a stall reason means and what usually removes it."""

    name: str
    title: str
    meaning: str
    fix: str


# Order: the reasons users meet most first (the order the views list them in).
_REASONS = [
    StallReason("long_scoreboard", "waiting on global/local memory",
                "warps wait for an L1TEX result: global, local, texture or surface memory",
                "improve locality and coalescing, reuse data through shared memory, raise occupancy "
                "or instruction-level parallelism to hide the latency"),
    StallReason("barrier", "waiting at a block barrier",
                "warps wait at __syncthreads() for the rest of their block",
                "balance the work between warps before a barrier, or split the block's work so "
                "fewer barriers are needed"),
    StallReason("mio_throttle", "shared-memory / special-unit queue full",
                "the MIO queue (shared memory, special math, dynamic branches) is full",
                "fewer shared-memory instructions (wider loads), avoid bank conflicts, fewer "
                "transcendental instructions"),
    StallReason("math_pipe_throttle", "math pipe busy",
                "the math pipe the warp needs is busy: the kernel is compute-bound on that pipe",
                "use a faster pipe (tensor cores, lower precision) or fewer instructions; this is "
                "often the sign of a kernel near its roof"),
    StallReason("short_scoreboard", "waiting on shared memory / MIO",
                "warps wait for a shared-memory or special-function result",
                "avoid shared-memory bank conflicts, reduce special-function instructions"),
    StallReason("wait", "fixed-latency dependency",
                "warps wait a fixed number of cycles on an instruction's result",
                "more independent instructions between dependent ones (unrolling, ILP), higher "
                "occupancy"),
    StallReason("lg_throttle", "local/global queue full",
                "the L1 queue for local and global memory instructions is full",
                "fewer, wider memory instructions (vectorized loads), avoid register spills to "
                "local memory"),
    StallReason("tex_throttle", "texture queue full",
                "the texture/L1TEX unit's queue is full",
                "fewer texture or global fetches, better locality"),
    StallReason("not_selected", "eligible, another warp issued",
                "the warp was ready but the scheduler picked another: enough parallelism",
                "nothing to fix; occupancy is more than enough"),
    StallReason("selected", "issuing",
                "the warp issued an instruction (not a stall)", "nothing to fix"),
    StallReason("dispatch_stall", "dispatch stall",
                "the pipeline could not dispatch the chosen instruction",
                "rare; usually resolves with a different instruction mix"),
    StallReason("drain", "draining memory stores at exit",
                "warps wait for their stores to drain before exiting",
                "usually small; fewer or earlier stores at the end of the kernel"),
    StallReason("imc_miss", "constant cache miss",
                "warps wait for the immediate constant cache",
                "keep constants uniform across the warp; fewer distinct constant addresses"),
    StallReason("membar", "memory barrier",
                "warps wait at a memory fence (__threadfence, atomics with ordering)",
                "fewer or narrower fences; use block-scope instead of device-scope"),
    StallReason("branch_resolving", "resolving a branch",
                "warps wait for a branch target or a warp-divergence decision",
                "fewer divergent branches; predication or warp-uniform conditions"),
    StallReason("no_instruction", "instruction cache miss",
                "no instruction available: instruction-cache miss or fetch after a branch",
                "smaller kernels (less unrolling), fewer code paths"),
    StallReason("sleeping", "sleeping",
                "warps are sleeping (nanosleep) or yielded",
                "intentional in spin-waits; otherwise remove the sleep"),
    StallReason("misc", "miscellaneous", "a stall reason the hardware does not break down", "rarely actionable"),
    StallReason("gmma", "waiting on warpgroup MMA",
                "warps wait for a Hopper warpgroup matrix multiply (wgmma) to finish",
                "expected in tensor-core GEMMs; deeper pipelining hides it"),
    StallReason("branch", "branch", "warps wait on a branch instruction", "fewer divergent branches"),
    StallReason("warpgroup_arrive", "waiting at a warpgroup arrive",
                "warps wait at a warpgroup barrier for their wgmma results (wgmma.wait_group)",
                "expected in Hopper tensor-core kernels; more stages in flight between issue and wait"),
]
REASONS = {r.name: r for r in _REASONS}
# Reasons that count as "stalled" in the shares (a warp issuing is not stalled).
NOT_STALLS = frozenset({"selected"})

# Spellings one source uses for another's reason (ncu's PC sampling says "no_instructions" where
# its warp-state metrics and Proton say "no_instruction").
_ALIASES = {"no_instructions": "no_instruction"}
_PREFIXES = ("smsp__pcsamp_warps_issue_stalled_", "smsp__warps_issue_stalled_",
             "smsp__average_warps_issue_stalled_", "stalled_", "stall_")
_SUFFIXES = ("_not_issued", "_per_issue_active.ratio", "_per_warp_active.pct", ".sum", ".avg", ".ratio")


def normalize_reason(name: str) -> str:
    """A stall metric or counter name (ncu's, Proton's) as the reason's short name.

    >>> normalize_reason("stalled_not_Selected")
    'not_selected'
    >>> normalize_reason("smsp__pcsamp_warps_issue_stalled_no_instructions")
    'no_instruction'
    """
    s = str(name).strip().lower()
    for p in _PREFIXES:
        if s.startswith(p):
            s = s[len(p):]
            break
    for suf in _SUFFIXES:
        if s.endswith(suf):
            s = s[: -len(suf)]
    return _ALIASES.get(s, s)


def explain(reason: str) -> StallReason:
    """The meaning and usual fix of a reason (a generic entry for one we do not know).

    >>> explain("barrier").fix.startswith("balance")
    True
    """
    r = normalize_reason(reason)
    return REASONS.get(r) or StallReason(r, r.replace("_", " "), "a stall reason this version does not describe",
                                         "see Nsight Compute's documentation of warp stall reasons")


def stall_shares(counts: pd.DataFrame, *, keys: list[str], source: str) -> pd.DataFrame:
    """Tidy ``report.stalls`` rows from raw per-reason sample counts.

    ``counts`` has the ``keys`` columns (e.g. ``name``, ``launch``) and one column per reason
    (any spelling :func:`normalize_reason` understands) holding sample counts. The result has the
    keys, ``source``, ``samples`` (stall samples, ``selected`` excluded), ``top_stall`` and one
    share column per reason, ordered as :data:`REASONS` (unknown reasons last).

    >>> c = pd.DataFrame({"name": ["k"], "stalled_barrier": [30], "stalled_wait": [10], "stalled_selected": [60]})
    >>> row = stall_shares(c, keys=["name"], source="Proton").iloc[0]
    >>> row["top_stall"], float(row["barrier"]), float(row["samples"])
    ('barrier', 0.75, 40.0)
    """
    reason_cols = {c: normalize_reason(c) for c in counts.columns if c not in keys}
    raw = pd.DataFrame({r: pd.to_numeric(counts[c], errors="coerce") for c, r in reason_cols.items()},
                       index=counts.index).T.groupby(level=0).sum(min_count=1).T
    order = [r for r in REASONS if r in raw.columns] + sorted(c for c in raw.columns if c not in REASONS)
    raw = raw[order]
    stall_cols = [c for c in order if c not in NOT_STALLS]
    total = raw[stall_cols].sum(axis=1, min_count=1)
    shares = raw[stall_cols].div(total.where(total > 0), axis=0)
    out = counts[keys].copy()
    out["source"] = source
    out["samples"] = total.astype("float64")
    valid = shares.notna().any(axis=1) & (total > 0)
    top = pd.Series([None] * len(shares), index=shares.index, dtype=object)
    if valid.any():
        top[valid] = shares[valid].fillna(-1.0).idxmax(axis=1)
    out["top_stall"] = top
    for c in stall_cols:
        out[c] = shares[c].astype("float64")
    return out.reset_index(drop=True)


def top_stalls(stalls: pd.DataFrame, n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` largest mean shares over a stalls table's rows, weighted by samples.

    >>> top_stalls(stall_shares(pd.DataFrame({"name": ["k"], "stalled_wait": [1]}), keys=["name"], source="x"))
    [('wait', 1.0)]
    """
    if stalls is None or not len(stalls):
        return []
    cols = reason_columns(stalls)
    w = stalls["samples"].fillna(0).to_numpy(dtype=float)
    if not cols or w.sum() <= 0:
        return []
    m = np.nan_to_num(stalls[cols].to_numpy(dtype=float)) * w[:, None]
    mean = m.sum(axis=0) / w.sum()
    order = np.argsort(-mean)[:n]
    return [(cols[i], float(mean[i])) for i in order if mean[i] > 0]


# Columns of a stalls table that are not reasons (keys, provenance, sample counts).
META_COLUMNS = frozenset({"name", "launch", "correlation", "source", "samples", "top_stall", "launches",
                          "device", "kernel_id", "sampled_time_us", "in_profiled_run"})


def reason_columns(stalls: pd.DataFrame) -> list:
    """The share columns of a stalls table (every float column that is not :data:`META_COLUMNS`).

    >>> reason_columns(stall_shares(pd.DataFrame({"name": ["k"], "stalled_wait": [1]}), keys=["name"], source="x"))
    ['wait']
    """
    return [c for c in stalls.columns if c not in META_COLUMNS and pd.api.types.is_float_dtype(stalls[c])]


def empty_stalls() -> pd.DataFrame:
    """A stalls table with no rows: the columns every ``report.stalls`` has (the Trace's schema).

    >>> empty_stalls().columns.tolist()
    ['name', 'launch', 'source', 'samples', 'top_stall', 'launches']
    """
    from kernelscope.trace.model import STALL_COLUMNS, frame
    return frame({}, STALL_COLUMNS)


def kernel_top_stall(kernels: pd.DataFrame, stalls: pd.DataFrame) -> pd.Series:
    """``top_stall`` for each row of a kernels table: the launch's own stalls row where one
    matches (``ncu_id`` to an Nsight Compute row's ``launch``, else ``correlation``), else the
    top reason over all rows of the kernel's name (weighted by samples); None where no row fits.

    >>> k = pd.DataFrame({"name": ["a", "b"], "correlation": [1, 2]})
    >>> s = stall_shares(pd.DataFrame({"name": ["a"], "stalled_wait": [5]}), keys=["name"], source="x")
    >>> kernel_top_stall(k, s).tolist()
    ['wait', None]
    """
    out = pd.Series([None] * len(kernels), index=kernels.index, dtype=object)
    if stalls is None or not len(stalls) or not len(kernels) or "top_stall" not in stalls.columns:
        return out
    for kcol, scol in (("ncu_id", "launch"), ("correlation", "correlation")):
        if kcol in kernels.columns and scol in stalls.columns:
            s = stalls[stalls[scol].notna() & stalls["top_stall"].notna()]
            by = dict(zip(pd.to_numeric(s[scol], errors="coerce").astype(float), s["top_stall"]))
            keys = pd.to_numeric(kernels[kcol], errors="coerce").astype(float)
            hit = [by.get(x) if x == x else None for x in keys.tolist()]
            out = pd.Series([o if o is not None else h for o, h in zip(out.tolist(), hit)], index=kernels.index,
                            dtype=object)
            if out.notna().any():
                return out
    if "name" in stalls.columns and "name" in kernels.columns:
        by_name = {name: (top[0][0] if (top := top_stalls(g, 1)) else None)
                   for name, g in stalls.groupby("name", sort=False)}
        return pd.Series([by_name.get(n) for n in kernels["name"].tolist()], index=kernels.index, dtype=object)
    return out


def annotate_top_stall(kernels: pd.DataFrame, stalls: pd.DataFrame) -> pd.DataFrame:
    """Kernels with ``top_stall`` (:func:`kernel_top_stall`) and ``stall_source`` (who sampled
    the kernel's stalls: Nsight Compute, Proton) from a stalls table.

    >>> k = pd.DataFrame({"name": ["a", "b"]})
    >>> s = stall_shares(pd.DataFrame({"name": ["a"], "stalled_wait": [3]}), keys=["name"], source="x")
    >>> annotate_top_stall(k, s)[["top_stall", "stall_source"]].values.tolist()
    [['wait', 'x'], [None, None]]
    """
    if stalls is None or not len(stalls) or "name" not in stalls.columns or not len(kernels):
        return kernels
    out = kernels.copy()
    out["top_stall"] = kernel_top_stall(out, stalls)
    src = out["name"].map(stalls.drop_duplicates("name").set_index("name")["source"])
    out["stall_source"] = src.astype(object).where(src.notna() & out["top_stall"].notna(), None)
    return out
