"""Backend attribution: which library launched each kernel, and the breakdowns built on it.

"Backend" is the library that launched a kernel, not what its name says: cuBLAS ships
CUTLASS-built kernels, so the launching CPU op, the launch API and Triton's op arguments are read
alongside the name. The rules are data (:mod:`kernelscope.analysis.backend_rules`); this module
applies them once per distinct (name, op, launch API, kernel_backend, device type) and maps the
answer onto every launch.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pandas as pd

from kernelscope.analysis.backend_rules import RULES, TENSOR_CORE_HINTS, cpu_op_backend, provider_backend
from kernelscope.analysis.devices import annotate_devices
from kernelscope.analysis.distinct import factorize, identities, stable_order, text_codes
from kernelscope.analysis.names import unique_short_names

_FIELDS = ("name", "op", "launch_api", "kernel_backend", "device_type")


def _alternatives(pattern: str) -> list:
    """Split a regex at its top-level ``|``. Python's re scans a long name far faster for each
    alternative alone (a literal prefix is searched with a fast scan; a mix with ``^`` is not),
    and kernel names run to thousands of characters."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            cur.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[":                                   # a class may hold | ( ) unescaped
            j = i + 1
            if j < len(pattern) and pattern[j] == "^":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            cur.append(pattern[i:j + 1])
            i = j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


class _AnyOf:
    """A compiled rule condition: true when any top-level alternative is found."""

    def __init__(self, pattern: str):
        self.parts = tuple(re.compile(p) for p in _alternatives(pattern))

    def search(self, text: str) -> bool:
        return any(p.search(text) for p in self.parts)


_COMPILED = tuple(
    (rule, tuple((f, _AnyOf(getattr(rule, f))) for f in _FIELDS if getattr(rule, f) is not None))
    for rule in RULES)
_HINTS = tuple((_AnyOf(p), v) for p, v in TENSOR_CORE_HINTS)


class Attribution(NamedTuple):
    backend: str
    tensor_cores: bool | None
    rule: str


def _text(v) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return ""
    return str(v)


@lru_cache(maxsize=65536)
def _classify(name: str, op: str, launch_api: str, kernel_backend: str, device_type: str) -> Attribution:
    if (label := provider_backend(kernel_backend)) is not None:
        # An ONNX Runtime node: its profile names the execution provider that ran it.
        return Attribution(label, None, "ort-provider")
    ctx = {"name": name, "op": op, "launch_api": launch_api, "kernel_backend": kernel_backend,
           "device_type": device_type}
    for rule, conds in _COMPILED:
        if all(rx.search(ctx[f]) for f, rx in conds):
            tc = rule.tensor_cores
            if rule.tc_by_name:
                for rx, v in _HINTS:
                    if rx.search(name):
                        tc = v
                        break
            return Attribution(rule.backend, tc, rule.id)
    return Attribution("other", None, "fallback")  # unreachable while RULES ends in a catch-all


def distinct_rows(columns) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row's combination of values, the first row of each code) over columns of
    equal length; codes count up in order of first appearance. Factorizing column by column and
    combining the integer codes is much cheaper than hashing tuples of long strings.

    >>> codes, first = distinct_rows([pd.Series(["a", "b", "a", "a"]), pd.Series([1, 1, 1, 2])])
    >>> codes.tolist(), first.tolist()
    ([0, 1, 0, 2], [0, 1, 3])
    """
    n = len(columns[0]) if len(columns) else 0
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    combined = firsts = None
    for c in columns:
        if combined is not None:
            firsts = _firsts(combined) if firsts is None else firsts     # of the groups so far
            if _same_within(c, combined, firsts):
                continue         # the same value throughout each group so far: nothing to split
        c_codes, c_uniq = factorize(c, use_na_sentinel=False)
        if combined is not None and len(c_uniq) == 1 and pd.isna(c_uniq[:1]).all():
            continue             # all missing: one value throughout, nothing to tell apart
        c_codes = c_codes.astype(np.int64, copy=False)
        if combined is None:
            combined = c_codes
        elif len(c_uniq) > 1:    # one value throughout tells no rows apart
            # re-factorize after each step so the combined code stays below n * n (no overflow)
            combined = pd.factorize(combined * len(c_uniq) + c_codes)[0].astype(np.int64, copy=False)
            firsts = None
    assert combined is not None      # the first column always sets it
    return combined, _firsts(combined) if firsts is None else firsts


def _firsts(codes: np.ndarray) -> np.ndarray:
    """The first row of each code, codes counting up in order of first appearance: where the
    running maximum rises."""
    top = np.maximum.accumulate(codes)
    return np.flatnonzero(np.r_[True, top[1:] > top[:-1]])


def _same_within(values, codes: np.ndarray, firsts: np.ndarray) -> bool:
    """Does every row hold a value equal to its group's first one (NaN as NaN among numbers)?
    Then grouping by ``values`` too splits nothing, and a column that follows from the ones
    before it (a kernel's device, its short name) costs one comparison, not a factorize (equal
    strings are mostly the same object: Python compares those at once). Missing text compares
    unequal: such a column is factorized.
    """
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else values
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "Ofiub":
        return False
    if arr.dtype == object:
        # A row holding its group's first object compares as that object with itself: compared
        # once per group, and only the other rows by value.
        ids = identities(arr)
        other = np.flatnonzero(ids != ids[firsts][codes])
        arr, ref = np.concatenate([arr[firsts], arr[other]]), np.concatenate([arr[firsts], arr[firsts][codes[other]]])
    else:
        ref = arr[firsts][codes]
    try:
        same = np.asarray(arr == ref, dtype=bool)
    except (TypeError, ValueError):   # values that do not compare to a truth value (arrays)
        return False
    if same.shape != arr.shape:
        return False
    if arr.dtype.kind == "f":
        same |= np.isnan(arr) & np.isnan(ref)
    return bool(same.all())


def classify(name, op=None, launch_api=None, kernel_backend=None, device_type="CUDA") -> Attribution:
    """Backend, tensor-core use (True/False/None) and the id of the rule that decided.

    >>> classify("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"
    ...          "(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)", op="aten::mm")
    Attribution(backend='cuBLAS', tensor_cores=False, rule='cublas-cutlass')
    >>> classify("some_unknown_kernel").backend
    'other'
    """
    return _classify(_text(name), _text(op), _text(launch_api), _text(kernel_backend).lower(),
                     _text(device_type))


def annotate_backends(kernels: pd.DataFrame, trace=None) -> pd.DataFrame:
    """Add ``short_name``, ``backend``, ``tensor_cores`` (boolean, NA = unknown) and
    ``backend_rule`` (why) to a kernels table; returns the same frame.

    >>> k = annotate_backends(ks.load("mlp_train.pt.trace.json.gz").trace.kernels.copy())
    >>> k[["short_name", "backend", "tensor_cores", "backend_rule"]].head(3)
                                    short_name backend  tensor_cores backend_rule
    0  elementwise bfloat16_copy (vectorize...    ATen         False    aten-name
    1  elementwise bfloat16_copy (vectorize...    ATen         False    aten-name
    2  elementwise bfloat16_copy (vectorize...    ATen         False    aten-name
    """
    k = kernels
    n = len(k)
    # The values as they are (classify reads a missing one as ""), without a copy per column.
    cols = [k[c].to_numpy(object) if c in k.columns else np.full(n, None, dtype=object)
            for c in ("name", "op", "launch_api", "kernel_backend", "device_type")]
    # Classify each distinct context once, then map: a 100k-launch trace has a few hundred.
    codes, first = distinct_rows(cols)
    uniq = [tuple(c[i] for c in cols) for i in first.tolist()]
    found = [classify(*key) for key in uniq]
    # Unique within the report: two kernels never share a readable name.
    shorts = unique_short_names(_text(key[0]) for key in uniq)
    short = [shorts[_text(key[0])] for key in uniq]

    def take(values, dtype=object):
        return pd.Series(np.asarray(values, dtype=dtype)[codes] if n else [], index=k.index, dtype=dtype)

    k["short_name"] = take(short)
    k["backend"] = take([a.backend for a in found])
    k["tensor_cores"] = pd.Series(pd.array([a.tensor_cores for a in found], dtype="boolean").take(codes)
                                  if n else pd.array([], dtype="boolean"), index=k.index)
    k["backend_rule"] = take([a.rule for a in found])
    return k


# -- breakdowns -------------------------------------------------------------------------------
_BREAKDOWN_COLUMNS = ["device", "backend", "launches", "gpu_time_us", "share", "cpu_time_us", "kernel_share"]


def gpu_rows(report) -> pd.DataFrame:
    """Kernels plus copies as (device, backend, op, duration) rows: memcpy/memset are backends too."""
    k = report.kernels
    dev = k["device_type"] if "device_type" in k.columns else pd.Series("CUDA", index=k.index)
    parts = [pd.DataFrame({"device": dev.fillna("CUDA").astype(object).values,
                           "backend": k["backend"].values, "op": k["op"].values,
                           "duration_us": k["duration_us"].astype(float).values})]
    c = report.copies
    if len(c):
        cdev = c["device_type"] if "device_type" in c.columns else \
            annotate_devices(c[["device_index"]].copy(), report.devices)["device_type"]
        cdev = cdev.fillna("CUDA").astype(object).values
        kind = c["kind"].where(c["kind"].isin(["memcpy", "memset"]), "memcpy")
        parts.append(pd.DataFrame({"device": cdev, "backend": kind.values, "op": c["op"].values,
                                   "duration_us": c["duration_us"].astype(float).values}))
    return pd.concat(parts, ignore_index=True)


def op_self_time(ops: pd.DataFrame) -> np.ndarray:
    """Each op's self time in us: its duration less that of the ops nested directly in it
    (same thread, fully contained). Self times add up without counting nested time twice.

    >>> round(float(op_self_time(ks.load("mlp_train.pt.trace.json.gz").ops).sum()), 1)
    9074.2
    """
    self_us = ops["duration_us"].astype(float).fillna(0.0).to_numpy().copy()
    n = len(ops)
    if not n:
        return self_us
    start = ops["start_us"].astype(float).to_numpy()
    end = start + ops["duration_us"].astype(float).fillna(0.0).to_numpy()
    dur = end - start
    # Parents sort before their children: by thread, start, longer first on ties.
    threads = text_codes(ops["tid"], use_na_sentinel=False)   # 7 and "7" are one thread; a missing one is one more
    order = thread_start_order(threads, start, dur)
    parent = nearest_enclosing(end[order], threads[order])
    has = parent >= 0
    # Summed in sorted order, as a walk with a stack would add them.
    child_sorted = np.bincount(parent[has], weights=dur[order][has], minlength=n)
    child = np.empty(n)
    child[order] = child_sorted
    return np.maximum(self_us - child, 0.0)


def thread_start_order(threads: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """``np.lexsort((-dur, start, threads))``: by thread, start, longer first, then row; in
    about a tenth of the time on a trace's ops, whose starts come nearly in order (a stable
    sort of nearly sorted floats is fast, one of small integer codes too; only rows that share
    a start are ordered by duration).

    >>> thread_start_order(np.array([1, 0, 0, 0]), np.array([0.0, 5.0, 2.0, 2.0]), np.array([1.0, 1.0, 1.0, 3.0])).tolist()
    [3, 2, 1, 0]
    """
    if np.isnan(start).any() or np.isnan(dur).any():
        return np.lexsort((-dur, start, threads))      # NaN ties compare unequal: lexsort's own order
    order = np.argsort(start, kind="stable")
    s = start[order]
    tie = s[1:] == s[:-1]
    if tie.any():
        # Positions in runs of equal starts: each run ordered by -dur (stable: then by row).
        in_run = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])
        run = np.cumsum(np.r_[True, ~tie])[in_run]
        rows = order[in_run]
        order[in_run] = rows[np.lexsort((-dur[rows], run))]
    return order[stable_order(threads[order])]



def nearest_enclosing(end: np.ndarray, group: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """For intervals sorted by (group, start, longer first), the position of each one's parent
    (-1: none): the nearest earlier interval of its group that ends no earlier (within ``eps``).

    It is what a walk with a stack finds (pop while the new interval ends after the top), for
    all intervals at once: each candidate that ends too early is replaced by *its* candidate, so
    the gap to the parent closes in O(log n) rounds of array operations.

    >>> nearest_enclosing(np.array([10.0, 4.0, 9.0, 20.0]), np.array([0, 0, 0, 1])).tolist()
    [-1, 0, 0, -1]
    """
    n = len(end)
    cand = np.arange(-1, n - 1)
    firsts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if n else np.zeros(0, np.int64)
    cand[firsts] = -1
    reach = end + eps
    todo = np.flatnonzero(cand >= 0)
    if len(todo) and len(firsts) <= 64:
        # One that ends after every earlier one of its group has no parent: -1 at once (a
        # thread's top-level ops, thousands in a row, each took ~log2(n) rounds to get there).
        # A NaN end reaches nothing and passes: its rounds decide as the walk does.
        before = np.full(n, np.nan)
        for a, b in zip(firsts.tolist(), np.r_[firsts[1:], n].tolist()):
            before[a + 1:b] = np.maximum.accumulate(reach[a:b - 1])
        top = end[todo] > before[todo]
        cand[todo[top]] = -1
        todo = todo[~top]
    todo = todo[end[todo] > reach[cand[todo]]]
    while len(todo):
        # Every interval strictly between a candidate and its own candidate ends before the
        # candidate does, so before this one too: jump over them.
        cand[todo] = cand[cand[todo]]
        todo = todo[cand[todo] >= 0]
        todo = todo[end[todo] > reach[cand[todo]]]
    return cand


def backend_breakdown(report) -> pd.DataFrame:
    """GPU time by device and backend, then CPU op time by framework.

    GPU rows (device CUDA/ROCm): ``launches`` kernels or copies, ``gpu_time_us`` their summed
    durations, ``share`` of all GPU kernel+copy time, ``kernel_share`` of kernel time alone
    (copies and memsets: NaN; the kernel table's backend groups show this one). CPU rows
    (device CPU, from ``report.ops``):
    ``launches`` is the number of op calls and ``cpu_time_us`` their summed *self* time: ops nest
    (aten::linear holds aten::addmm holds aten::mm), so summing totals would count the same
    microsecond several times, while self times add up to the time spent inside any op.
    User annotations (record_function ranges) are not ops and are left out.

    >>> ks.load("mlp_train.pt.trace.json.gz").backends
      device backend  launches  gpu_time_us   share  cpu_time_us  kernel_share
    0   CUDA    ATen        64      642.464  0.6246          NaN        0.8711
    1   CUDA  memcpy         4      289.568  0.2815          NaN           NaN
    2   CUDA  cuBLAS        10       95.072  0.0924          NaN        0.1289
    3   CUDA  memset         2        1.473  0.0014          NaN           NaN
    4    CPU    ATen       360          NaN     NaN     7849.515           NaN
    5    CPU   other        90          NaN     NaN      466.694           NaN
    """
    g = gpu_rows(report)
    if len(g):
        grp = g.groupby(["device", "backend"], sort=False)["duration_us"]
        gpu = pd.DataFrame({"launches": grp.size(), "gpu_time_us": grp.sum()}).reset_index()
        total = gpu["gpu_time_us"].sum()
        gpu["share"] = gpu["gpu_time_us"] / total if total > 0 else 0.0
        # Of kernel time alone (copies and memsets left out): what the kernel table's backend
        # groups show, so a backend reads one number in both places (ATen 61.4%, not 60.6%).
        k = report.kernels
        kdev = k["device_type"] if "device_type" in k.columns else pd.Series("CUDA", index=k.index)
        kt = pd.DataFrame({"device": kdev.fillna("CUDA").astype(object).values, "backend": k["backend"].values,
                           "duration_us": k["duration_us"].astype(float).values})
        ktime = kt.groupby(["device", "backend"], sort=False)["duration_us"].sum()
        ktotal = float(kt["duration_us"].sum())
        kshare = [ktime.get((d, b), np.nan) / ktotal if ktotal > 0 else np.nan
                  for d, b in zip(gpu["device"], gpu["backend"])]
        gpu["kernel_share"] = kshare
        gpu["cpu_time_us"] = np.nan
        gpu = gpu.sort_values("gpu_time_us", ascending=False, kind="stable")
    else:
        gpu = pd.DataFrame(columns=_BREAKDOWN_COLUMNS)
    ops = report.ops
    # Only the columns read, of the rows kept: the ops table is the largest of a trace.
    keep = (ops["cat"] != "user_annotation").fillna(True).to_numpy(dtype=bool) if len(ops) \
        else np.zeros(0, bool)
    if keep.any():
        names, kbs = ops["name"].to_numpy(object)[keep], ops["kernel_backend"].to_numpy(object)[keep]
        # Classify each distinct (name, kernel_backend) once: op names repeat heavily.
        codes, first = distinct_rows([names, kbs])
        label_codes, labels = pd.factorize(np.array(
            [cpu_op_backend(_text(names[i]), _text(kbs[i])) for i in first], dtype=object))
        # Each row's label as a code in order of first appearance, as groupby(sort=False) orders
        # them (grouping by integer codes, not by the column of strings).
        row_codes, seen = pd.factorize(label_codes[codes])
        times = ops.loc[keep, ["tid", "start_us", "duration_us"]] if not keep.all() else ops
        grp = pd.Series(op_self_time(times)).groupby(row_codes, sort=False)
        cpu = pd.DataFrame({"launches": grp.size(), "cpu_time_us": grp.sum()})
        cpu.index = pd.Index(labels[seen], dtype=object, name="backend")
        cpu = cpu.reset_index()
        cpu["device"] = "CPU"
        cpu["gpu_time_us"] = np.nan
        cpu["share"] = np.nan
        cpu["kernel_share"] = np.nan
        cpu = cpu.sort_values("cpu_time_us", ascending=False, kind="stable")
    else:
        cpu = pd.DataFrame(columns=_BREAKDOWN_COLUMNS)
    frames = [f[_BREAKDOWN_COLUMNS] for f in (gpu, cpu) if len(f)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
            _BREAKDOWN_COLUMNS, [object, object, "int64", float, float, float, float])})
    out = pd.concat(frames, ignore_index=True)
    out["launches"] = out["launches"].astype("int64")
    for c in ("gpu_time_us", "share", "cpu_time_us", "kernel_share"):
        out[c] = out[c].astype(float)
    return out


def op_backends(report) -> pd.DataFrame:
    """Per CPU op: which backends its kernels and copies came from, one row per (op, backend):
    ``launches``, ``gpu_time_us`` and ``share`` of that op's GPU time. Ops with the most GPU
    time come first; work with no launching op is listed under ``op`` = None.

    >>> rep = ks.load("copies_streams.pt.trace.json.gz")
    >>> op_backends(rep)[["op", "backend", "launches"]]
                op backend  launches
    0  aten::copy_  memcpy         6
    1     aten::mm  cuBLAS         2
    """
    g = gpu_rows(report)
    cols = ["op", "backend", "launches", "gpu_time_us", "share"]
    if not len(g):
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(cols, [object, object, "int64", float, float])})
    g["op"] = g["op"].astype(object).where(g["op"].notna(), None)
    grp = g.groupby(["op", "backend"], sort=False, dropna=False)["duration_us"]
    out = pd.DataFrame({"launches": grp.size(), "gpu_time_us": grp.sum()}).reset_index()
    op_total = out.groupby("op", dropna=False)["gpu_time_us"].transform("sum")
    out["share"] = np.where(op_total > 0, out["gpu_time_us"] / op_total.where(op_total > 0, 1.0), 0.0)
    out["_op_total"] = op_total
    out = out.sort_values(["_op_total", "gpu_time_us"], ascending=False, kind="stable")
    out["op"] = out["op"].astype(object).where(out["op"].notna(), None)
    return out[cols].reset_index(drop=True)
