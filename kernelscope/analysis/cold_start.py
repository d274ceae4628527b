"""Does a recording look like a first, cold run? What a process pays once, on the host: lazy
module loading (a launch or module call taking milliseconds), CUDA and library initialization,
JIT compiles and autotuning (dynamo / Inductor / Triton ranges), the caching allocator growing
(``cudaMalloc``), cuBLAS/cuDNN handles creating their streams and events; and, on the GPU, a
kernel's first launch far slower than its later ones.

A steady-state diagnosis ("host-bound: replay the step as a CUDA graph") is wrong for such a run:
the second run does not pay it. :func:`cold_start` says how much of the run it explains.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import by_distinct, factorize, stable_order
from kernelscope.analysis.intervals import covered_length, merge_intervals, union_length
from kernelscope.trace.model import SYNC_CALLS
from kernelscope.units import fmt_us as _us

# A launch or module call this long loads a module (lazy loading, CUDA_MODULE_LOADING=LAZY: the
# first launch of a kernel of an H200 recording took 6.4-7.1 ms; a warm launch takes 5-60 us).
# Shorter ones are not taken for a cold process: the first launch under a fresh profiler costs up
# to ~2.7 ms in a warm process too (CUPTI's start-up, in tests/data's attention, mlp_train and
# compiled recordings).
SLOW_CALL_US = 3000.0
# A run is called cold when what it pays once covers this share of its wall time (or it compiles).
COLD_MIN_SHARE = 0.1
# ... and the first-run verdict replaces the host-bound one when it explains half the idle time.
COLD_EXPLAINS_SHARE = 0.5
# A kernel's first launch this many times its later median (and 50 us longer) is a cold launch
# (a first cuBLAS GEMM ran 10x the next one in the recording).
FIRST_LAUNCH_RATIO = 5.0
FIRST_LAUNCH_MIN_EXTRA_US = 50.0

# Compile and autotune ranges that dynamo, AOTAutograd, Inductor and Triton's autotuner record
# (a warm call records "Torch-Compiled Region" and "## Call CompiledFxGraph ...", not these).
COMPILE_OP = re.compile(r"^(dynamo|entire_frame_compile|backend_compile|inductor_compile|compile_fx_inner|"
                        r"fx_codegen_and_compile|create_aot_dispatcher_function|.*\(dynamo_timed\)|"
                        r".*autotune.*|.*benchmark_all_configs.*|async_compile.*|TritonBundler.*)$", re.I)
_LOAD_CALL = re.compile(r"Launch|cuModuleLoad|cuLibraryLoad|cuModuleGetFunction|cuLibraryGetKernel|"
                        r"FuncGetAttributes|FuncSetAttribute|GetSymbolAddress|GetFuncBySymbol")
_ALLOC_CALL = re.compile(r"^(cudaMalloc|cudaMallocHost|cudaHostAlloc|cudaMallocAsync|cuMemAlloc|cuMemCreate)")
_HANDLE_CALL = re.compile(r"^(cudaStreamCreate|cudaEventCreate|cuStreamCreate|cuEventCreate)")
_BLOCKING = re.compile(r"Synchronize|Memcpy|Memset|EventQuery|StreamQuery|StreamWaitEvent")


def cold_start(report, busy_starts=(), busy_ends=()) -> dict:
    """What the run paid once, and the host time it covers while the GPU was idle.

    Returns ``{"cold": bool, "cold_us", "compile_us", "load_us", "init_us", "alloc_us", "allocs",
    "handle_calls", "first_launch_extra_us", "first_launches": [...], "slow_calls": [...],
    "parts": [words], "intervals": (starts, ends)}``: ``cold_us`` is the time of those host
    intervals while the GPU was idle (the busy intervals given) plus the extra GPU time of
    first launches.

    >>> cold_start(ks.load("tests/data/trust/cold_first_call.ksreport.json.gz"))["cold"]   # doctest: +SKIP
    True
    """
    ops, rt, k = report.ops, report.runtime, report.kernels
    iv_s, iv_e = [], []
    compile_us = load_us = init_us = alloc_us = 0.0
    if len(ops):
        c = ops[_by_name(ops["name"], lambda n: COMPILE_OP.match(n) is not None)]
        if len(c):
            s, e = c["start_us"].astype(float), c["start_us"].astype(float) + c["duration_us"].astype(float)
            compile_us = union_length(s, e)
            iv_s += s.tolist()
            iv_e += e.tolist()
    slow_calls, allocs, handles = [], 0, 0
    if len(rt):
        names = rt["name"]
        d = rt["duration_us"].astype(float)
        syncs = _by_name(names, lambda n: n in SYNC_CALLS or _BLOCKING.search(n) is not None)
        slow = (d >= SLOW_CALL_US) & ~syncs
        load = slow & _by_name(names, lambda n: _LOAD_CALL.search(n) is not None)
        alloc = pd.Series(_by_name(names, lambda n: _ALLOC_CALL.match(n) is not None), index=rt.index)
        handle = pd.Series(_by_name(names, lambda n: _HANDLE_CALL.match(n) is not None), index=rt.index)
        allocs, handles = int(alloc.sum()), int(handle.sum())
        load_us, init_us = float(d[load].sum()), float(d[slow & ~load & ~alloc].sum())
        alloc_us = float(d[alloc].sum())
        keep = slow | alloc | handle
        iv_s += rt.loc[keep, "start_us"].astype(float).tolist()
        iv_e += (rt.loc[keep, "start_us"].astype(float) + d[keep]).tolist()
        slow_calls = [{"call": str(n), "us": float(u)} for n, u in
                      zip(names[slow], d[slow])][:10]
    calls = _first_calls(ops)
    for c in calls:
        iv_s.append(c["start_us"])
        iv_e.append(c["start_us"] + c["first_us"])
    first = _first_launches(k)
    extra = float(sum(f["extra_us"] for f in first))
    ms, me = merge_intervals(iv_s, iv_e)
    host_us = float((me - ms).sum()) - _overlap(ms, me, busy_starts, busy_ends)
    cold_us = max(host_us, 0.0) + extra
    wall = report.wall_time_us or 0.0
    parts = []
    if compile_us:
        parts.append(f"{_us(compile_us)} compiling (dynamo / Inductor / autotuning)")
    if load_us:
        parts.append(f"{_us(load_us)} in launch and module calls of 3 ms or more (lazy module loading)")
    if init_us:
        parts.append(f"{_us(init_us)} in other runtime calls of 3 ms or more (CUDA and library initialization)")
    if allocs:
        parts.append(f"{allocs} cudaMalloc-type call{'s' * (allocs != 1)} ({_us(alloc_us)}: the caching allocator growing)")
    if handles:
        parts.append(f"{handles} stream/event creation{'s' * (handles != 1)} (cuBLAS/cuDNN handles and streams made on first use)")
    if calls:
        c = calls[0]
        parts.append(f"{len(calls)} CPU op{'s' * (len(calls) != 1)} whose first call ran far longer than the later "
                     f"ones ({c['op']}: {_us(c['first_us'])}, later {_us(c['later_median_us'])})")
    if first:
        parts.append(f"{len(first)} kernel{'s' * (len(first) != 1)} whose first launch ran far longer than the "
                     f"later ones ({_us(extra)} extra, e.g. {first[0]['kernel'][:60]})")
    cold = bool(compile_us > 0 or (wall and cold_us >= COLD_MIN_SHARE * wall and (load_us or init_us or first or calls)))
    return {"cold": cold, "cold_us": cold_us, "compile_us": compile_us, "load_us": load_us, "init_us": init_us,
            "alloc_us": alloc_us, "allocs": allocs, "handle_calls": handles, "first_launch_extra_us": extra,
            "first_launches": first[:5], "first_calls": calls[:5], "slow_calls": slow_calls, "parts": parts, "intervals": (ms, me)}


def _by_name(names: pd.Series, test) -> np.ndarray:
    """``test(name)`` of each row (its text), called once per distinct name; a missing name is False."""
    return by_distinct(names, lambda n: bool(test(str(n))), bool, False)


def _first_calls(ops) -> list:
    """CPU ops whose first call ran :data:`FIRST_LAUNCH_RATIO` times their later median and
    :data:`SLOW_CALL_US` longer (a first ``aten::sum`` of 28 ms, later ones 36 us: the
    reduction's module loading and first-call setup)."""
    if not len(ops):
        return []
    keep = _by_name(ops["cat"], "cpu_op".__eq__) if "cat" in ops else slice(None)
    out = []
    for name, start, dur in _slow_firsts(ops, keep, SLOW_CALL_US):
        rest = float(np.median(dur[1:]))
        if dur[0] >= FIRST_LAUNCH_RATIO * max(rest, 1e-9) and dur[0] - rest >= SLOW_CALL_US:
            out.append({"op": str(name), "start_us": float(start[0]), "first_us": float(dur[0]),
                        "later_median_us": rest})
    return sorted(out, key=lambda c: -c["first_us"])


def _first_launches(k) -> list:
    """Kernels whose first launch ran :data:`FIRST_LAUNCH_RATIO` times their later median."""
    if not len(k) or "name" not in k:
        return []
    out = []
    for name, _, dur in _slow_firsts(k, slice(None), FIRST_LAUNCH_MIN_EXTRA_US):
        rest = float(np.median(dur[1:]))
        if rest > 0 and dur[0] >= FIRST_LAUNCH_RATIO * rest and dur[0] - rest >= FIRST_LAUNCH_MIN_EXTRA_US:
            out.append({"kernel": str(name), "first_us": float(dur[0]), "later_median_us": rest,
                        "extra_us": float(dur[0] - rest)})
    return sorted(out, key=lambda f: -f["extra_us"])


def _slow_firsts(rows, keep, min_extra_us: float):
    """(name, its start times, its durations) in time order, of each name of ``rows[keep]`` called
    twice or more whose first call ran at least ``min_extra_us`` longer than its shortest later
    one (necessary for the first-call rules, which then decide on the median), in the order
    ``groupby("name", sort=False)`` over the rows sorted by start gives them. Over plain arrays:
    a trace holds a few hundred names in a million rows."""
    start = rows["start_us"].to_numpy(float)[keep]
    by_time = np.argsort(start, kind="stable")              # sort_values("start_us", kind="stable")
    start = start[by_time]
    dur = rows["duration_us"].to_numpy(float)[keep][by_time]
    names = rows["name"].to_numpy()[keep][by_time]
    codes = factorize(names, use_na_sentinel=True)[0]
    order = stable_order(codes)                             # each name's rows together, in time order
    sc = codes[order]
    if not len(sc):
        return
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    counts = np.diff(np.r_[starts, len(sc)])
    d = dur[order]
    later = d.copy()
    later[starts] = np.inf                                  # a name's first call is not a later one
    with np.errstate(invalid="ignore"):
        shortest_later = np.minimum.reduceat(later, starts)
        hit = (sc[starts] >= 0) & (counts >= 2) & (d[starts] - shortest_later >= min_extra_us)
    for j in np.flatnonzero(hit).tolist():
        rows_j = order[starts[j]:starts[j] + counts[j]]
        yield names[rows_j[0]], start[rows_j], dur[rows_j]


def _overlap(ms, me, bs, be) -> float:
    """How much of the disjoint intervals (ms, me) the GPU's busy intervals cover."""
    if not len(ms) or not len(bs):
        return 0.0
    bs, be = merge_intervals(bs, be)
    return float(covered_length(bs, be, ms, me).sum())
