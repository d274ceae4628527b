"""Does a recording look like a first, cold run? What a process pays once, on the host: lazy
module loading (a launch or module call taking milliseconds), CUDA and library initialization,
JIT compiles and autotuning (dynamo / Inductor / Triton ranges, or the silent stretch before a
Triton kernel's first launch), cuDNN's algorithm search (``cudnn.benchmark``: a convolution that
synchronizes while it times its candidates), a CUDA op's first call taking milliseconds on the
host, the caching allocator growing (``cudaMalloc``), cuBLAS/cuDNN handles creating their
streams and events; and, on the GPU, a kernel's first launch far slower than its later ones.

A steady-state diagnosis ("host-bound: replay the step as a CUDA graph", "keep values on the GPU
instead of .item()") is wrong for such a run: the second run does not pay it. :func:`cold_start`
says how much of the run it explains; :func:`cold_of` is that, once per timeline, for the rules.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kernelscope.analysis.backends import distinct_rows
from kernelscope.analysis.distinct import by_distinct, factorize, stable_order, text_codes
from kernelscope.analysis.intervals import covered_length, merge_intervals, union_length
from kernelscope.trace.model import SYNC_CALLS
from kernelscope.units import fmt_us as _us

# A launch or module call this long loads a module (lazy loading, CUDA_MODULE_LOADING=LAZY: the
# first launch of a kernel of an H200 recording took 5.6-9 ms; a warm launch takes 5-60 us).
SLOW_CALL_US = 3000.0
# ... except the region's first launch call, which also pays the profiler's start-up (CUPTI's:
# 2.5-3.7 ms in a warm process on the H200, tests/data's attention, mlp_train and compiled
# recordings and two held-out warm steps).
FIRST_LAUNCH_CALL_US = 5000.0
# A CUDA op call (one that launches kernels) spending SLOW_CALL_US on the host outside its launch
# and blocking calls, and this much per kernel it launched, is paying a first call: a warm
# aten::mm takes ~30 us on the host, the process's first one 76 ms (cuBLAS initializes, the
# kernel's module loads); a first aten::sum 11 ms beside its 5.6 ms launch.
SLOW_OP_PER_LAUNCH_US = 1000.0
# Host time with nothing recorded (no op, no runtime call) before the first launch of a
# JIT-compiled kernel: Triton compiles in Python on the first call (0.2-2 s on the H200). From
# 100 ms on: a fresh process's first recorded region could hold 27-47 ms of the profiler's own
# set-up there (captures before 990034b), and a warm Triton call waits microseconds.
JIT_MIN_US = 100_000.0
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
_LAUNCH_CALL = re.compile(r"Launch")
ALLOC_CALL = re.compile(r"^(cudaMalloc|cudaMallocHost|cudaHostAlloc|cudaMallocAsync|cuMemAlloc|cuMemCreate)")
_HANDLE_CALL = re.compile(r"^(cudaStreamCreate|cudaEventCreate|cuStreamCreate|cuEventCreate)")
_BLOCKING = re.compile(r"Synchronize|Memcpy|Memset|EventQuery|StreamQuery|StreamWaitEvent")
# A convolution that synchronizes is cuDNN (or MIOpen) timing candidate algorithms
# (torch.backends.cudnn.benchmark): a warm one, its choice cached per shape, never waits.
_SEARCH_OP = re.compile(r"convolution|cudnn|miopen", re.I)
_JIT_BACKENDS = ("Triton", "Helion")


def cold_start(report, busy_starts=(), busy_ends=()) -> dict:
    """What the run paid once, and the host time it covers while the GPU was idle.

    Returns ``{"cold": bool, "cold_us", "compile_us", "jit_us", "jit_variants", "load_us",
    "init_us", "alloc_us", "allocs", "handle_calls", "search_us", "search_syncs", "search_calls",
    "first_launch_extra_us", "first_launches": [...], "first_calls": [...], "slow_ops": [...],
    "jit": [...], "slow_calls": [...], "parts": [words], "intervals": (starts, ends),
    "search_intervals": (starts, ends)}``: ``cold_us`` is the time of those host intervals while
    the GPU was idle (the busy intervals given) plus the extra GPU time of first launches.

    >>> c = cold_start(ks.load("advice/first_ops_in_process.before.ksreport.json.gz"))
    >>> c["cold"], [(s["op"], round(s["host_us"] / 1e3, 1)) for s in c["slow_ops"]][:2]
    (True, [('aten::mm', 76.2), ('aten::_softmax', 13.2)])
    """
    ops, rt, k = report.ops, report.runtime, report.kernels
    iv_s, iv_e = [], []
    compile_us = 0.0
    if len(ops):
        c = ops[_by_name(ops["name"], lambda n: COMPILE_OP.match(n) is not None)]
        if len(c):
            s, e = c["start_us"].astype(float), c["start_us"].astype(float) + c["duration_us"].astype(float)
            compile_us = union_length(s, e)
            iv_s += s.tolist()
            iv_e += e.tolist()
    kinds = _call_kinds(rt) if len(rt) else {}
    r = _runtime_cold(rt, kinds, iv_s, iv_e)
    host = _op_host(ops, rt, kinds)
    calls = _first_calls(host)
    slow, search = _slow_ops(host)
    jit = _jit_waits(k, ops, rt)
    for c in calls:
        iv_s.append(c["start_us"])
        iv_e.append(c["start_us"] + c["first_us"])
    for c in slow + jit:
        iv_s.append(c["start_us"])
        iv_e.append(c["end_us"])
    iv_s += search[0].tolist()
    iv_e += search[1].tolist()
    first = _first_launches(k)
    extra = float(sum(f["extra_us"] for f in first))
    ms, me = merge_intervals(iv_s, iv_e)
    host_us = float((me - ms).sum()) - _overlap(ms, me, busy_starts, busy_ends)
    cold_us = max(host_us, 0.0) + extra
    jit_us = union_length([j["start_us"] for j in jit], [j["end_us"] for j in jit])
    search_us = float((search[1] - search[0]).sum())
    out = {"compile_us": compile_us, "jit_us": jit_us, **r, "search_us": search_us,
           "search_syncs": int(search[2]), "search_calls": int(search[3]), "first_launch_extra_us": extra,
           "first_launches": first[:5], "first_calls": calls[:5], "slow_ops": _leaves(slow)[:5], "jit": jit[:5],
           "jit_variants": len(jit)}
    wall = report.wall_time_us or 0.0
    evidence = r["load_us"] or r["init_us"] or first or calls or slow or search_us
    cold = bool(compile_us > 0 or jit or (wall and cold_us >= COLD_MIN_SHARE * wall and evidence))
    out.update({"cold": cold, "cold_us": cold_us, "parts": _parts(out, calls, slow),
                "intervals": (ms, me), "search_intervals": search[:2]})
    return out


def cold_of(report, tl):
    """:func:`cold_start` over the timeline's busy intervals when the run looks like a first
    run, else None; worked out once per timeline (the host rules price the first-run item with
    it, the sync rule leaves it the synchronizations it explains).

    >>> cold_of(rep, rep.timeline) is None
    True
    """
    got = tl.__dict__.get("_cold_start")
    if got is None:
        acts = tl.activities
        got = cold_start(report, acts["start_us"], acts["end_us"]) if len(acts) else {"cold": False}
        tl.__dict__["_cold_start"] = got     # a cache beside the timeline's tables, not a field
    return got if got["cold"] else None


def _by_name(names: pd.Series, test) -> np.ndarray:
    """``test(name)`` of each row (its text), called once per distinct name; a missing name is False."""
    return by_distinct(names, lambda n: bool(test(str(n))), bool, False)


def _call_kinds(rt) -> dict:
    """Which runtime calls launch, load modules, block the host, synchronize, allocate or create
    streams and events: one bool array each, the names tested once per distinct name."""
    tests = {"launch": lambda n: _LAUNCH_CALL.search(n) is not None,
             "load": lambda n: _LOAD_CALL.search(n) is not None,
             "block": lambda n: n in SYNC_CALLS or _BLOCKING.search(n) is not None,
             "sync": lambda n: n in SYNC_CALLS or "EventQuery" in n or "StreamQuery" in n,
             "alloc": lambda n: ALLOC_CALL.match(n) is not None,
             "handle": lambda n: _HANDLE_CALL.match(n) is not None}
    codes, uniq = factorize(rt["name"], use_na_sentinel=True)
    text = [str(u) for u in uniq]
    # (code -1, a missing name, takes the False at the end)
    return {k: np.array([t(n) for n in text] + [False], dtype=bool)[codes] for k, t in tests.items()}


def _runtime_cold(rt, kinds: dict, iv_s: list, iv_e: list) -> dict:
    """The runtime calls a first run pays for (slow launch and module calls, other slow calls,
    allocations, stream and event creation), their intervals appended to ``iv_s``/``iv_e``."""
    out = {"load_us": 0.0, "init_us": 0.0, "alloc_us": 0.0, "allocs": 0, "handle_calls": 0, "slow_calls": []}
    if not len(rt):
        return out
    names = rt["name"]
    d = rt["duration_us"].astype(float)
    slow = (d >= SLOW_CALL_US) & ~kinds["block"]
    launch = kinds["launch"]
    if launch.any():
        # The region's first launch also pays the profiler's start-up: a module load from 5 ms on.
        first = int(np.argmin(np.where(launch, rt["start_us"].to_numpy(float), np.inf)))
        slow.iloc[first] = bool(slow.iloc[first]) and d.iloc[first] >= FIRST_LAUNCH_CALL_US
    load = slow & kinds["load"]
    alloc = pd.Series(kinds["alloc"], index=rt.index)
    handle = pd.Series(kinds["handle"], index=rt.index)
    keep = slow | alloc | handle
    iv_s += rt.loc[keep, "start_us"].astype(float).tolist()
    iv_e += (rt.loc[keep, "start_us"].astype(float) + d[keep]).tolist()
    out.update({"load_us": float(d[load].sum()), "init_us": float(d[slow & ~load & ~alloc].sum()),
                "alloc_us": float(d[alloc].sum()), "allocs": int(alloc.sum()), "handle_calls": int(handle.sum()),
                "slow_calls": [{"call": str(n), "us": float(u)} for n, u in zip(names[slow], d[slow])][:10]})
    return out


def _op_host(ops, rt, kinds: dict) -> dict | None:
    """Each CPU op (``cpu_op``) as arrays: name, start, end, duration, thread, its input shapes,
    and, for those of :data:`SLOW_CALL_US` or longer (no other can pay a first call), from the
    runtime calls made on its thread within it: the kernels it launched (``launches``), the
    synchronizations it made (``syncs``) and its host time outside launch and blocking calls
    (``net``: what a first call's loading and setup take, without the profiler's start-up that
    lands on the first launch; the whole call for shorter ops)."""
    if not len(ops):
        return None
    keep = _by_name(ops["cat"], "cpu_op".__eq__) if "cat" in ops else np.ones(len(ops), bool)
    start = ops["start_us"].to_numpy(float)[keep]
    dur = ops["duration_us"].to_numpy(float)[keep]
    end = start + dur
    tid = ops["tid"].to_numpy(object)[keep] if "tid" in ops else np.zeros(len(start), dtype=object)
    launches, syncs, net = np.zeros(len(start)), np.zeros(len(start)), dur.copy()
    cand = np.flatnonzero(dur >= SLOW_CALL_US)
    if len(rt) and len(cand):
        rs, rd = rt["start_us"].to_numpy(float), rt["duration_us"].to_numpy(float)
        rtid = rt["tid"].to_numpy(object) if "tid" in rt else np.zeros(len(rt), dtype=object)
        codes = text_codes(np.concatenate([tid[cand], rtid]))
        ot, rc = codes[:len(cand)], codes[len(cand):]
        if not np.isin(ot, rc).any():
            ot, rc = np.zeros_like(ot), np.zeros_like(rc)     # threads not told apart: one
        excluded = np.where(kinds["launch"] | kinds["block"], rd, 0.0)
        for t in np.unique(ot).tolist():
            m, rm = cand[ot == t], np.flatnonzero(rc == t)
            rm = rm[np.argsort(rs[rm], kind="stable")]
            lo, hi = np.searchsorted(rs[rm], start[m], "left"), np.searchsorted(rs[rm], end[m], "left")
            for arr, vals in ((launches, kinds["launch"][rm]), (syncs, kinds["sync"][rm]), (net, -excluded[rm])):
                c = np.r_[0.0, np.cumsum(vals)]
                arr[m] += c[hi] - c[lo]
    dims = ops["input_dims"].to_numpy(object)[keep] if "input_dims" in ops else np.full(len(start), None)
    return {"name": ops["name"].to_numpy(object)[keep], "start": start, "end": end, "dur": dur,
            "net": net, "launches": launches, "syncs": syncs, "dims": dims, "tid": tid}


def _first_calls(host) -> list:
    """CPU ops whose first call ran :data:`FIRST_LAUNCH_RATIO` times their later median and
    :data:`SLOW_CALL_US` longer, on the host outside launch and blocking calls (a first
    ``aten::sum`` of 28 ms, later ones 36 us: the reduction's module loading and first-call
    setup). ``first_us`` is the whole first call."""
    if host is None:
        return []
    out = []
    for name, rows in _slow_firsts(host["start"], host["net"], host["name"], SLOW_CALL_US):
        net = host["net"][rows]
        rest = float(np.median(net[1:]))
        if net[0] >= FIRST_LAUNCH_RATIO * max(rest, 1e-9) and net[0] - rest >= SLOW_CALL_US:
            out.append({"op": str(name), "start_us": float(host["start"][rows[0]]),
                        "first_us": float(host["dur"][rows[0]]),
                        "later_median_us": float(np.median(host["dur"][rows[1:]]))})
    return sorted(out, key=lambda c: -c["first_us"])


def _slow_ops(host) -> tuple[list, tuple]:
    """The CUDA op calls that pay a first call (:data:`SLOW_OP_PER_LAUNCH_US`: milliseconds on
    the host outside their launches and syncs, the first of their name and shapes and the only
    such one: a shape paying it on every call is steady state), and cuDNN's algorithm searches
    (convolutions that synchronize, :data:`_SEARCH_OP`) as (starts, ends, syncs, calls)."""
    none = (np.zeros(0), np.zeros(0), 0, 0)
    if host is None or not len(host["start"]):
        return [], none
    net = host["net"]
    slow = np.zeros(len(net), dtype=bool)
    cand = np.flatnonzero(host["dur"] >= SLOW_CALL_US)      # (no shorter op is either)
    search = cand[(host["syncs"][cand] >= 1) & by_distinct(
        host["name"][cand], lambda x: _SEARCH_OP.search(str(x)) is not None, bool, False)]
    slow[cand] = ((host["launches"][cand] >= 1) & (net[cand] >= SLOW_CALL_US)
                  & (net[cand] >= SLOW_OP_PER_LAUNCH_US * np.maximum(host["launches"][cand], 1)))
    ms, me = merge_intervals(host["start"][search], host["end"][search])
    if len(ms):
        # An op around a search (the conv2d that calls it) holds the search's time: not its own.
        slow[cand] &= covered_length(ms, me, host["start"][cand], host["end"][cand]) <= 0
    out = []
    if slow.any():
        codes = factorize(host["name"], use_na_sentinel=True)[0]
        shapes: dict = {}
        for i in np.flatnonzero(slow).tolist():
            if codes[i] not in shapes:      # each name's shapes as text, once
                rows = np.flatnonzero(codes == codes[i])
                shapes[codes[i]] = (rows, np.array([str(x) for x in host["dims"][rows]], dtype=object))
            rows, text = shapes[codes[i]]
            same = rows[text == str(host["dims"][i])]
            # The first call of its name and shapes (none ended before it began; a wrapper of the
            # same name around it is no earlier call), and no later one slow again.
            if (host["end"][same] <= host["start"][i]).any() or slow[same[host["start"][same] >= host["end"][i]]].any():
                continue
            out.append({"op": str(host["name"][i]), "start_us": float(host["start"][i]),
                        "end_us": float(host["end"][i]), "host_us": float(net[i]),
                        "launches": int(host["launches"][i]), "tid": host["tid"][i]})
    # The innermost search ops hold the syncs; the outer ones (conv2d around it) the same ones.
    inner = _leaves([{"start_us": host["start"][i], "end_us": host["end"][i], "i": i, "tid": host["tid"][i]}
                     for i in search.tolist()])
    syncs = int(sum(host["syncs"][c["i"]] for c in inner))
    return out, (ms, me, syncs, len(inner))


def _leaves(calls: list) -> list:
    """The calls (dicts with start_us, end_us, tid) that hold no other one: ``aten::mm``, not
    the ``aten::matmul`` around it; longest first."""
    by = sorted(calls, key=lambda c: (str(c["tid"]), c["start_us"], -c["end_us"]))
    out = [c for c, nxt in zip(by, by[1:] + [None])
           if nxt is None or str(nxt["tid"]) != str(c["tid"]) or nxt["start_us"] >= c["end_us"]]
    return sorted(out, key=lambda c: -(c.get("host_us") or c["end_us"] - c["start_us"]))


def _jit_waits(k, ops, rt) -> list:
    """The stretch with nothing recorded on the host before the first launch of each
    JIT-compiled kernel variant (Triton's and Helion's, told apart by name, constexprs, registers,
    block and shared memory: an autotuner compiles each candidate), :data:`JIT_MIN_US` or
    longer: the JIT compiling it."""
    if not len(k) or "backend" not in k or "launch_start_us" not in k:
        return []
    rows = np.flatnonzero(by_distinct(k["backend"], lambda b: b in _JIT_BACKENDS, bool, False)
                          & k["launch_start_us"].notna().to_numpy())
    bounds = [a for t in (ops, rt) if len(t) for a in
              (t["start_us"].to_numpy(float), t["start_us"].to_numpy(float) + t["duration_us"].to_numpy(float))]
    if not len(rows) or not bounds:
        return []
    b = np.sort(np.concatenate(bounds))
    j = k.iloc[rows]
    ls = j["launch_start_us"].to_numpy(float)
    by_time = np.argsort(ls, kind="stable")
    cols = [c for c in ("name", "config", "registers_per_thread", "block_x", "shared_mem_bytes") if c in j]
    _, first = distinct_rows([j[c].iloc[by_time].reset_index(drop=True) for c in cols])
    out = []
    for i in by_time[first].tolist():
        at = np.searchsorted(b, ls[i], "left") - 1
        if at >= 0 and ls[i] - b[at] >= JIT_MIN_US:
            out.append({"kernel": str(j["name"].iloc[i]), "start_us": float(b[at]), "end_us": float(ls[i]),
                        "wait_us": float(ls[i] - b[at])})
    return out


def _parts(c: dict, calls: list, slow: list) -> list:
    """The first-run item's words, one part per kind of cost, the costliest first."""
    parts = []
    if c["compile_us"]:
        parts.append((c["compile_us"], f"{_us(c['compile_us'])} compiling (dynamo / Inductor / autotuning)"))
    if c["jit"]:
        j, n = c["jit"], c["jit_variants"]
        names = list(dict.fromkeys(x["kernel"][:60] for x in j))
        parts.append((c["jit_us"], f"{_us(c['jit_us'])} with nothing recorded before the first launch of "
                      f"{n} JIT-compiled kernel{'s' * (n != 1) if len(names) == n else ' variant' + 's' * (n != 1)} "
                      f"({', '.join(names[:3])}): Triton compiles each kernel and config in Python on its first call"))
    if c["search_us"]:
        n = c["search_calls"]
        parts.append((c["search_us"], f"{_us(c['search_us'])} in cuDNN's algorithm search "
                      f"(torch.backends.cudnn.benchmark: {n} convolution{'s' * (n != 1)} timed candidate "
                      f"algorithms, synchronizing {c['search_syncs']} times; each new input shape pays it once)"))
    said = {x["start_us"] for x in calls}
    leaves = [s for s in _leaves(slow) if s["start_us"] not in said]
    if leaves:
        us = sum(s["host_us"] for s in leaves)
        parts.append((us, f"{len(leaves)} CUDA op call{'s' * (len(leaves) != 1)} spent milliseconds "
                      "on the host outside their launches and syncs, as a first call does (kernel modules "
                      "loading, libraries initializing): " + ", ".join(
                          f"{s['op']} {_us(s['host_us'])}" for s in leaves[:3])))
    if c["load_us"]:
        parts.append((c["load_us"], f"{_us(c['load_us'])} in launch and module calls of 3 ms or more (lazy module loading)"))
    if c["init_us"]:
        parts.append((c["init_us"], f"{_us(c['init_us'])} in other runtime calls of 3 ms or more "
                      "(CUDA and library initialization)"))
    if c["allocs"]:
        parts.append((c["alloc_us"], f"{c['allocs']} cudaMalloc-type call{'s' * (c['allocs'] != 1)} "
                      f"({_us(c['alloc_us'])}: the caching allocator growing)"))
    if c["handle_calls"]:
        h = c["handle_calls"]
        parts.append((0.0, f"{h} stream/event creation{'s' * (h != 1)} (cuBLAS/cuDNN handles and streams made on first use)"))
    if calls:
        f = calls[0]
        parts.append((sum(x["first_us"] for x in calls), f"{len(calls)} CPU op{'s' * (len(calls) != 1)} whose "
                      f"first call ran far longer than the later ones ({f['op']}: {_us(f['first_us'])}, "
                      f"later {_us(f['later_median_us'])})"))
    first = c["first_launches"]
    if first:
        e = c["first_launch_extra_us"]
        parts.append((e, f"{len(first)} kernel{'s' * (len(first) != 1)} whose first launch ran far longer than "
                      f"the later ones ({_us(e)} extra, e.g. {first[0]['kernel'][:60]})"))
    return [t for _, t in sorted(parts, key=lambda p: -p[0])]


def _first_launches(k) -> list:
    """Kernels whose first launch ran :data:`FIRST_LAUNCH_RATIO` times their later median."""
    if not len(k) or "name" not in k:
        return []
    out = []
    dur = k["duration_us"].to_numpy(float)
    for name, rows in _slow_firsts(k["start_us"].to_numpy(float), dur, k["name"].to_numpy(), FIRST_LAUNCH_MIN_EXTRA_US):
        d = dur[rows]
        rest = float(np.median(d[1:]))
        if rest > 0 and d[0] >= FIRST_LAUNCH_RATIO * rest and d[0] - rest >= FIRST_LAUNCH_MIN_EXTRA_US:
            out.append({"kernel": str(name), "first_us": float(d[0]), "later_median_us": rest,
                        "extra_us": float(d[0] - rest)})
    return sorted(out, key=lambda f: -f["extra_us"])


def _slow_firsts(start, dur, names, min_extra_us: float):
    """(name, its rows in time order) of each name called twice or more whose first call ran at
    least ``min_extra_us`` longer than its shortest later one (necessary for the first-call
    rules, which then decide on the median), in the order ``groupby("name", sort=False)`` over
    the rows sorted by start gives them. Over plain arrays: a trace holds a few hundred names in
    a million rows."""
    by_time = np.argsort(start, kind="stable")              # sort_values("start_us", kind="stable")
    codes = factorize(names[by_time], use_na_sentinel=True)[0]
    order = stable_order(codes)                             # each name's rows together, in time order
    sc = codes[order]
    if not len(sc):
        return
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    counts = np.diff(np.r_[starts, len(sc)])
    d = dur[by_time][order]
    later = d.copy()
    later[starts] = np.inf                                  # a name's first call is not a later one
    with np.errstate(invalid="ignore"):
        shortest_later = np.minimum.reduceat(later, starts)
        hit = (sc[starts] >= 0) & (counts >= 2) & (d[starts] - shortest_later >= min_extra_us)
    for j in np.flatnonzero(hit).tolist():
        rows = by_time[order[starts[j]:starts[j] + counts[j]]]
        yield names[rows[0]], rows


def _overlap(ms, me, bs, be) -> float:
    """How much of the disjoint intervals (ms, me) the GPU's busy intervals cover."""
    if not len(ms) or not len(bs):
        return 0.0
    bs, be = merge_intervals(bs, be)
    return float(covered_length(bs, be, ms, me).sum())
