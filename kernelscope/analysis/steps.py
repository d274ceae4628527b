"""The steps of a training loop: torch.profiler's ``ProfilerStep#N`` ranges (``prof.step()`` under a
schedule, or a ``record_function`` of that name), each step's time and where it went.

A step's span is TensorBoard's (torch's tb_plugin, ``event_parser.py``): the host range of its
marker, extended to the end of the GPU work launched inside it (kernels, copies and memsets whose
launch call falls in the host range: the range Kineto writes as the step's
``gpu_user_annotation``), and starting no earlier than the previous step ended, so that the steps
never overlap. Its time is split the way the tb_plugin split it (``overall_parser.py``): each
microsecond of the step goes to the first of these that covers it, so that the parts sum to the
step's time:

``kernel`` (kernels other than NCCL's), ``memcpy``, ``memset``, ``communication`` (NCCL kernels,
``nccl:*``/``gloo:*`` ops), ``runtime`` (CUDA runtime and driver calls while none of the above
runs: the host launching or waiting), ``dataloader`` (``enumerate(DataLoader)#*.__next__`` and
``enumerate(DataPipe)#*`` ranges), ``cpu_exec`` (any other CPU op or annotation), ``other`` (time
nothing was recorded for: Python between ops, the profiler itself). As in the tb_plugin, a batch's
host-to-device copy is ``memcpy`` (the GPU's part comes first) and pinning done by a DataLoader
worker thread is ``cpu_exec``.

:func:`step_table` is the per-step table (``rep.steps``); :func:`step_summary` reads it: the median
step, the first steps told apart from the steady state, the step-to-step spread, the slowest step
and the part that grew most.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kernelscope.analysis.cold_start import ALLOC_CALL, COMPILE_OP
from kernelscope.analysis.distinct import by_distinct
from kernelscope.analysis.intervals import Spans, covered_length

# A step is a torch.profiler step (ProfilerStep#N, from its schedule or a record_function of
# that name) or a ks.profile repeat (kernelscope.repeat.N: the ranks view reads both).
_STEP = re.compile(r"^(?:ProfilerStep#|kernelscope\.repeat\.)(\d+)$")
PROFILER_STEP = "ProfilerStep#"
# The breakdown's parts, in the order that claims a microsecond first (the tb_plugin's ProfileRole).
PARTS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
PART_LABELS = {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "communication": "Communication",
               "runtime": "Runtime", "dataloader": "Data loading", "cpu_exec": "CPU exec", "other": "Other"}
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$|^enumerate\(DataPipe\)#")
_COMM_OP = re.compile(r"^(nccl|gloo):")
# A leading step this many times the median step is a first step, not the steady state (the
# recorded LM's first active step, after two warm-up steps, took 1.07x; a loop's first step
# with compiles or cuBLAS set-up takes several times its later ones).
FIRST_STEP_RATIO = 1.2
COLUMNS = ["step", "index", "start_us", "end_us", "step_us", "cpu_us", "gpu_start_us", "gpu_end_us",
           "gpu_busy_us", *[f"{p}_us" for p in PARTS], "kernels", "copies", "memsets", "collectives",
           "cpu_ops", "allocations", "compiles"]
_COUNTS = ("kernels", "copies", "memsets", "collectives", "cpu_ops", "allocations", "compiles")


def step_windows(ops: pd.DataFrame) -> pd.DataFrame:
    """The steps of a recording (``step``, ``index``, ``start_us``, ``end_us``: the host span of
    each step marker), in time order; empty when the recording marks no steps.

    >>> step_windows(ks.load("ranks/rank0.pt.trace.json.gz").ops)["step"].tolist()
    ['ProfilerStep#1', 'ProfilerStep#2', 'ProfilerStep#3']
    """
    cols = ["step", "index", "start_us", "end_us"]
    if not len(ops):
        return pd.DataFrame({c: [] for c in cols})
    names = ops["name"].astype(str)
    m = names.str.match(_STEP.pattern).to_numpy(dtype=bool)
    s = ops[m].drop_duplicates("name")
    out = pd.DataFrame({"step": s["name"].astype(str).to_numpy(),
                        "index": [_step_index(n) for n in s["name"].astype(str)],
                        "start_us": s["start_us"].astype(float).to_numpy(),
                        "end_us": (s["start_us"] + s["duration_us"]).astype(float).to_numpy()})
    return out.sort_values("start_us", kind="stable").reset_index(drop=True)


def _step_index(name: str) -> int:
    """The number of a step marker's name (``ProfilerStep#3`` -> 3)."""
    m = _STEP.match(name)
    assert m is not None         # step_windows picked the rows by it
    return int(m.group(1))


def key_time(launch, start) -> np.ndarray:
    """When an activity was asked for: its launch call if known, else its own start.

    >>> key_time([np.nan, 5.0], [1.0, 9.0]).tolist()
    [1.0, 5.0]
    """
    launch = np.asarray(launch, dtype=float)
    start = np.asarray(start, dtype=float)
    return np.where(np.isfinite(launch), launch, start)


def assign_steps(starts, ends, key) -> np.ndarray:
    """The step (row of the windows ``starts``/``ends``, sorted by start) whose host span holds
    each moment of ``key`` (the last step started before it), -1 for none.

    >>> assign_steps([0, 10], [5, 20], [1, 7, 12, -1]).tolist()
    [0, -1, 1, -1]
    """
    starts, ends = np.asarray(starts, float), np.asarray(ends, float)
    key = np.asarray(key, float)
    if not len(starts):
        return np.full(len(key), -1)
    i = np.searchsorted(starts, key, side="right") - 1
    return np.where((i >= 0) & (key <= ends[np.maximum(i, 0)]), i, -1)


def step_table(rep) -> pd.DataFrame:
    """One row per ``ProfilerStep#N`` (``rep.steps``): its span, host time (``cpu_us``), GPU range
    and busy time, the breakdown (``kernel_us`` ... ``other_us``, summing to ``step_us``) and what
    it ran (launches, copies, memsets, collectives, CPU ops, allocations, compile ranges). Empty
    (with these columns) when the recording marks no steps.

    >>> t = step_table(ks.load("training/lm_steps.pt.trace.json.gz"))
    >>> t["index"].tolist() == list(range(3, 15)), round(t["step_us"].median())
    (True, 29830)
    >>> t[["step", "step_us", "gpu_busy_us", "kernel_us", "runtime_us", "cpu_exec_us", "other_us"]].round().head(2)
                 step  step_us  gpu_busy_us  kernel_us  runtime_us  cpu_exec_us  other_us
    0  ProfilerStep#3  31785.0       3020.0     2957.0      3699.0      17502.0    7564.0
    1  ProfilerStep#4  29180.0       3020.0     2956.0      3508.0      16490.0    6162.0
    """
    # A live capture of many cycles keeps the earlier cycles' rows only (capture/schedule.py).
    earlier = pd.DataFrame((getattr(rep, "meta", None) or {}).get("earlier_steps") or [], columns=COLUMNS)
    w = step_windows(rep.ops)
    w = w[w["step"].str.startswith(PROFILER_STEP)].reset_index(drop=True) if len(w) else w
    if not len(w):
        return earlier if len(earlier) else pd.DataFrame({c: [] for c in COLUMNS})
    hs, he = w["start_us"].to_numpy(float), w["end_us"].to_numpy(float)
    roles, gpu_s, gpu_e, counts = _gpu_work(rep, hs, he)
    start, end = _spans(hs, he, gpu_e)
    roles.update(_host_roles(rep))
    parts = _breakdown(roles, start, end)
    busy = Spans.of(0, *_concat([roles[p] for p in ("kernel", "memcpy", "memset", "communication")]))
    bs, be = busy.parts.get(0, (np.zeros(0), np.zeros(0)))
    counts.update(_host_counts(rep, start, end))
    out = pd.DataFrame({"step": w["step"].to_numpy(object), "index": w["index"].astype(int).to_numpy(),
                        "start_us": start, "end_us": end, "step_us": end - start, "cpu_us": he - hs,
                        "gpu_start_us": gpu_s, "gpu_end_us": gpu_e,
                        "gpu_busy_us": covered_length(bs, be, start, end)})
    for p in PARTS:
        out[f"{p}_us"] = parts[p]
    for c in _COUNTS:
        out[c] = counts[c]
    return pd.concat([earlier, out[COLUMNS]], ignore_index=True) if len(earlier) else out[COLUMNS]


def _concat(pairs):
    return (np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0),
            np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0))


def _intervals(df, mask=None):
    s = df["start_us"].to_numpy(float)
    e = s + df["duration_us"].to_numpy(float)
    if mask is not None:
        s, e = s[mask], e[mask]
    ok = np.isfinite(s) & np.isfinite(e)
    return s[ok], e[ok]


def _gpu_work(rep, hs, he):
    """The GPU's roles (kernel, memcpy, memset, communication intervals), each step's GPU range
    (first start and last end of the work launched in it; NaN for none) and its counts."""
    k, c = rep.kernels, rep.copies
    comm = _is_comm(k)
    is_set = (c["kind"].astype(str) == "memset").to_numpy(bool) if len(c) else np.zeros(0, bool)
    roles = {"kernel": _intervals(k, ~comm), "communication": _intervals(k, comm),
             "memcpy": _intervals(c, ~is_set), "memset": _intervals(c, is_set)}
    n = len(hs)
    gpu_s, gpu_e = np.full(n, np.inf), np.full(n, -np.inf)
    counts = {}
    for df, groups in ((k, (("kernels", ~comm), ("collectives", comm))),
                       (c, (("copies", ~is_set), ("memsets", is_set)))):
        at = assign_steps(hs, he, key_time(df["launch_start_us"], df["start_us"])) if len(df) else np.zeros(0, int)
        s = df["start_us"].to_numpy(float) if len(df) else np.zeros(0)
        e = s + (df["duration_us"].to_numpy(float) if len(df) else np.zeros(0))
        ok = (at >= 0) & np.isfinite(s) & np.isfinite(e)
        np.minimum.at(gpu_s, at[ok], s[ok])
        np.maximum.at(gpu_e, at[ok], e[ok])
        for name, m in groups:
            counts[name] = np.bincount(at[m & (at >= 0)], minlength=n)[:n]
    return roles, np.where(np.isfinite(gpu_s), gpu_s, np.nan), np.where(np.isfinite(gpu_e), gpu_e, np.nan), counts


def _is_comm(k) -> np.ndarray:
    if not len(k):
        return np.zeros(0, bool)
    if "backend" in k.columns:
        return (k["backend"] == "NCCL").to_numpy(dtype=bool)
    return by_distinct(k["name"], lambda n: "nccl" in str(n).lower(), bool, False)


def _spans(hs, he, gpu_e):
    """TensorBoard's step spans: the host range extended to the end of its GPU work, each
    starting no earlier than the one before ended."""
    start, end = hs.copy(), np.fmax(he, gpu_e)
    for i in range(1, len(start)):
        start[i] = max(start[i], end[i - 1])
        end[i] = max(end[i], start[i])
    return start, end


def _host_roles(rep) -> dict:
    ops = rep.ops
    names = ops["name"] if len(ops) else pd.Series([], dtype=object)
    mark = by_distinct(names, lambda n: _STEP.match(str(n)) is not None, bool, False)
    loader = by_distinct(names, lambda n: _DATALOADER.match(str(n)) is not None, bool, False)
    comm = by_distinct(names, lambda n: _COMM_OP.match(str(n)) is not None, bool, False)
    rt = rep.runtime
    return {"runtime": _intervals(rt), "dataloader": _intervals(ops, loader),
            "cpu_exec": _intervals(ops, ~(mark | loader | comm)),
            "communication": _concat([_intervals(rep.kernels, _is_comm(rep.kernels)), _intervals(ops, comm)])}


def _host_counts(rep, start, end) -> dict:
    ops, rt = rep.ops, rep.runtime
    n = len(start)

    def count(df, test):
        if not len(df):
            return np.zeros(n, int)
        m = by_distinct(df["name"], test, bool, False)
        at = assign_steps(start, end, df["start_us"].to_numpy(float)[m])
        return np.bincount(at[at >= 0], minlength=n)[:n]
    return {"cpu_ops": count(ops, lambda s: _STEP.match(str(s)) is None),
            "allocations": count(rt, lambda s: ALLOC_CALL.match(str(s)) is not None),
            "compiles": count(ops, lambda s: COMPILE_OP.match(str(s)) is not None)}


def _breakdown(roles, start, end) -> dict:
    """Each part's time in each step: the part claims what the parts before it left of the
    steps (``intervals.Spans``), so that every microsecond is counted once."""
    left = Spans.of(0, start, end)
    out = {}
    for p in PARTS[:-1]:
        got = left & Spans.of(0, *roles[p])
        left = left - got
        out[p] = _within(got, start, end)
    out["other"] = _within(left, start, end)
    return out


def _within(spans, start, end):
    s, e = spans.parts.get(0, (np.zeros(0), np.zeros(0)))
    return covered_length(s, e, start, end) if len(s) else np.zeros(len(start))


def step_summary(table: pd.DataFrame) -> dict:
    """What the per-step table says as a whole: ``steps``; the ``median_step`` (the step whose
    time is the median, its parts summing to it); the ``first`` steps (leading steps at least
    :data:`FIRST_STEP_RATIO` times the median, each with what grew against the median step);
    ``steady`` (the steps after them: ``median_us``, ``p90_us``, ``max_over_median``, ``cv``: the
    standard deviation over the mean); the ``slowest`` steady step and the part that grew most.
    Empty for a table with no steps.

    >>> s = step_summary(step_table(ks.load("training/leak_steps.pt.trace.json.gz")))
    >>> s["steps"], s["median_step"]["index"], [f["index"] for f in s["first"]], s["first"][0]["ratio"]
    (8, 3, [1], 1.228...)
    >>> s["first"][0]["grew"][:2], round(s["steady"]["median_us"]), s["slowest"]["index"]
    (['cpu_exec', 'other'], 31227, 2)
    """
    if not len(table):
        return {}
    t = table.reset_index(drop=True)
    times = t["step_us"].to_numpy(float)
    median = float(np.median(times))
    first = 0
    while first < len(t) - 1 and times[first] >= FIRST_STEP_RATIO * median:
        first += 1
    steady = t.iloc[first:]
    st = steady["step_us"].to_numpy(float)
    s_med = float(np.median(st))
    ref = _row(steady, int(np.argsort(st, kind="stable")[(len(st) - 1) // 2]))
    slow = _row(steady, int(np.argmax(st)))
    return {"steps": int(len(t)), "median_us": median, "median_step": ref,
            "first": [dict(_row(t, i), ratio=float(times[i] / median), **_grew(_row(t, i), ref))
                      for i in range(first)],
            "steady": {"steps": int(len(st)), "from_index": int(steady["index"].iloc[0]), "median_us": s_med,
                       "p90_us": float(np.percentile(st, 90)), "max_over_median": float(st.max() / s_med) if s_med else None,
                       "cv": float(st.std() / st.mean()) if len(st) > 1 and st.mean() else 0.0},
            "slowest": dict(slow, ratio=float(slow["step_us"] / s_med) if s_med else None, **_grew(slow, ref))}


def _row(df, i) -> dict:
    r = df.iloc[i]
    out = {"step": str(r["step"]), "index": int(r["index"]), "step_us": float(r["step_us"]),
           "parts": {p: float(r[f"{p}_us"]) for p in PARTS}}
    out.update({c: int(r[c]) for c in _COUNTS})
    return out


def _grew(row: dict, ref: dict) -> dict:
    """The parts that grew against the reference step, most first (``grew``: part names,
    ``grew_us``: by how much), and the counts that changed (``more``: {count: difference})."""
    d = {p: row["parts"][p] - ref["parts"][p] for p in PARTS}
    order = [p for p in sorted(PARTS, key=lambda p: -d[p]) if d[p] > 0]
    return {"grew": order, "grew_us": {p: d[p] for p in order},
            "more": {c: row[c] - ref[c] for c in _COUNTS if row[c] != ref[c]}}
