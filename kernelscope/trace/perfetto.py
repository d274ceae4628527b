"""Reading JAX's own profiler traces (``jax.profiler.trace(dir, create_perfetto_trace=True)``).

JAX writes ``perfetto_trace.json.gz``: Chrome-trace JSON whose GPU process is named
``/device:GPU:<n>`` (one thread per stream) and whose host process is ``/host:CPU``. Each kernel
event carries XLA's ``kernel_details`` (``regs:168 static_shared:0 dynamic_shared:231424
grid:64,2,1 block:384,1,1 occ_pct:18.75``), the HLO op and module that launched it, and a
``correlation_id`` shared with the host-side launch event. The Kineto reader hands such files
here (:func:`looks_like_jax`), and both reach the same :class:`Trace`.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kernelscope.errors import TraceError
from kernelscope.jsonable import num, whole
from kernelscope.trace.builder import MAX_TIME_US
from kernelscope.trace.model import (
    COPY_COLUMNS,
    DEVICE_COLUMNS,
    FRAME_COLUMNS,
    KERNEL_COLUMNS,
    OP_COLUMNS,
    RUNTIME_COLUMNS,
    SYNC_COLUMNS,
    Trace,
    frame,
)

# What JAX names the file (``<host>.perfetto_trace.json.gz`` where a tool prefixes the host).
FILE_NAMES = ("perfetto_trace.json.gz", "perfetto_trace.json")
_MARK = re.compile(rb'"name"\s*:\s*"/(device:GPU|host:CPU)')
_DEVICE = re.compile(r"^/device:GPU:(\d+)")
_STREAM = re.compile(r"Stream #(\d+)")
_DETAIL = re.compile(r"(\w+):([\d.,]+)")
_COPY = re.compile(r"^Memcpy(\w+)|^Memset")


def looks_like_jax(raw: bytes) -> bool:
    """Whether a Chrome-trace file is JAX's perfetto trace (its process names say so).

    >>> looks_like_jax(b'{"traceEvents":[{"ph":"M","name":"process_name","args":{"name":"/device:GPU:0"}}]}')
    True
    """
    return bool(_MARK.search(raw[:1 << 16]))


def _details(text) -> dict:
    """XLA's ``kernel_details`` string as numbers: regs, static/dynamic shared, grid, block, occ_pct."""
    out = {}
    for key, val in _DETAIL.findall(text if isinstance(text, str) else ""):
        parts = [whole(p) if key in ("grid", "block") else num(p) for p in val.split(",")]
        out[key] = parts if key in ("grid", "block") else parts[0]
    return out


def read_jax_perfetto(doc, label, notes) -> Trace:
    """A :class:`Trace` from a decoded JAX perfetto trace (a dict with ``traceEvents``).

    >>> import gzip
    >>> t = read_jax_perfetto(json.load(gzip.open("wild/jax_own.perfetto_trace.json.gz")), "x", [])
    >>> t.kernels[["name", "grid_x", "registers_per_thread"]].head(2)
                                          name  grid_x  registers_per_thread
    0  sm90_xmma_gemm_f32f32_tf32f32_f32_nn...      64                   168
    1             input_multiply_reduce_fusion     512                    32
    """
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TraceError(label, "not a JAX profiler trace: it has no 'traceEvents' list")
    procs, threads = _names(events)
    gpu = {pid: int(m.group(1)) for pid, n in procs.items() if (m := _DEVICE.match(n))}
    kern, copies, host = _sorted_events(events, gpu, notes)
    if not kern and not copies and not host:
        raise TraceError(label, "the JAX profiler trace holds no events")
    k = _kernel_table(kern, host, threads, gpu)
    tables = {"kernels": k, "copies": _copy_table(copies, gpu), "ops": _op_table(host)}
    starts = [float(t["start_us"].min()) for t in tables.values() if len(t)]
    origin = min(starts) if starts else 0.0
    ends = [float((t["start_us"] + t["duration_us"]).max()) for t in tables.values() if len(t)]
    for t in tables.values():
        t["start_us"] = t["start_us"] - origin
    k["launch_start_us"] = k["launch_start_us"] - origin
    devs = sorted(set(gpu.values()))
    devices = frame({"index": devs, "name": [procs[p] for i in devs for p in gpu if gpu[p] == i][:len(devs)],
                     "device_type": ["CUDA"] * len(devs)}, DEVICE_COLUMNS)
    notes.append("JAX profiler trace: occupancy is XLA's own figure (the recording names no compute "
                 "capability for ours); the launching op is the XLA HLO op")
    meta = {"source": label, "time_origin_ns": int(round(origin * 1000)),
            "span_us": (max(ends) - origin) if ends else None, "notes": notes, "producer": "jax"}
    empty = {name: frame({}, schema) for name, schema in (("runtime", RUNTIME_COLUMNS),
                                                          ("frames", FRAME_COLUMNS), ("syncs", SYNC_COLUMNS))}
    return Trace(kernels=k, copies=tables["copies"], runtime=empty["runtime"], ops=tables["ops"],
                 frames=empty["frames"], syncs=empty["syncs"], devices=devices, meta=meta)


def _names(events) -> tuple[dict, dict]:
    """The metadata events' names: ``{pid: process name}``, ``{(pid, tid): thread name}``."""
    procs, threads = {}, {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and isinstance(e.get("args"), dict):
            name = e["args"].get("name")
            if e.get("name") == "process_name":
                procs[e.get("pid")] = str(name)
            elif e.get("name") == "thread_name":
                threads[(e.get("pid"), e.get("tid"))] = str(name)
    return procs, threads


def _sorted_events(events, gpu, notes) -> tuple[list, list, list]:
    """The complete events as ``(event, ts, dur, args)``, sorted into the GPU's kernels, its copies
    and memsets, and the host's events (ops and launch calls); events without a usable time are
    skipped, and ``notes`` says how many."""
    kern, copies, host, bad = [], [], [], 0
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur = num(e.get("ts")), num(e.get("dur"))
        if ts is None or dur is None or not (0 <= dur <= MAX_TIME_US and abs(ts) <= MAX_TIME_US):
            bad += 1
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        pid = e.get("pid")
        if isinstance(pid, (int, float, str)) and pid in gpu:     # a damaged pid ({} or a list) is the host's
            (copies if _COPY.match(str(e.get("name", ""))) and "kernel_details" not in args else kern).append(
                (e, ts, dur, args))
        else:
            host.append((e, ts, dur, args))
    if bad:
        notes.append(f"skipped {bad} event(s) with a missing, negative, out-of-range or non-numeric time")
    return kern, copies, host


def _kernel_table(kern, host, threads, gpu) -> pd.DataFrame:
    """The kernels table: each kernel's launch shape and resources from XLA's ``kernel_details``,
    its launch call from the host event of its ``correlation_id``, and XLA's own occupancy."""
    # Host-side launch events share the kernel's correlation_id: they give the launch time and thread.
    launch = {}
    for e, ts, dur, args in host:
        cid = whole(args.get("correlation_id"))
        if cid is not None and cid not in launch:
            launch[cid] = (ts, dur, str(e.get("tid")))
    rows: dict = {c: [] for c in KERNEL_COLUMNS}
    reported = []
    for e, ts, dur, args in kern:
        d = _details(args.get("kernel_details"))
        grid, block = d.get("grid") or [None] * 3, d.get("block") or [None] * 3
        cid = whole(args.get("correlation_id"))
        lt = launch.get(cid, (None, None, None))
        smem = [d.get("static_shared"), d.get("dynamic_shared")]
        tname = threads.get((e.get("pid"), e.get("tid")), "")
        sm = _STREAM.search(tname)
        vals = {
            "name": str(e.get("name", "")), "device_index": gpu[e.get("pid")],
            "stream": int(sm.group(1)) if sm else whole(e.get("tid")),
            "start_us": ts, "duration_us": dur, "correlation": cid,
            "grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2],
            "block_x": block[0], "block_y": block[1], "block_z": block[2],
            "registers_per_thread": whole(d.get("regs")),
            "shared_mem_bytes": int(sum(smem)) if None not in smem else None,
            "launch_start_us": lt[0], "launch_duration_us": lt[1], "launch_tid": lt[2],
            "op": str(args.get("hlo_op")) if args.get("hlo_op") is not None else None,
            "kernel_backend": "xla",
        }
        for c in rows:
            rows[c].append(vals.get(c))
        occ = d.get("occ_pct", num(args.get("theoretical_occupancy_pct")))
        reported.append(occ / 100.0 if occ is not None else np.nan)
    k = frame(rows, KERNEL_COLUMNS)
    # XLA's own figure (the CUDA occupancy API on the recording GPU): kept beside ours, and used
    # where ours cannot be computed (the trace names no compute capability).
    k["reported_occupancy"] = np.asarray(reported, dtype=float)
    k["graph_launch"] = pd.array([("cuda_graph_id" in a) for _, _, _, a in kern], dtype="boolean")
    return k


def _copy_table(copies, gpu) -> pd.DataFrame:
    """The copies table: the GPU's memcpy and memset events."""
    crow: dict = {c: [] for c in COPY_COLUMNS}
    for e, ts, dur, args in copies:
        m = _COPY.match(str(e.get("name", "")))
        vals = {"kind": "memset" if str(e.get("name")).startswith("Memset") else "memcpy",
                "name": str(e.get("name")), "copy_kind": m.group(1) if m else None,
                "device_index": gpu[e.get("pid")], "start_us": ts, "duration_us": dur,
                "correlation": whole(args.get("correlation_id"))}
        for c in crow:
            crow[c].append(vals.get(c))
    return frame(crow, COPY_COLUMNS)


def _op_table(host) -> pd.DataFrame:
    """The ops table: the host's events other than launch calls (those carry a correlation_id)."""
    orow: dict = {c: [] for c in OP_COLUMNS}
    for e, ts, dur, args in host:
        if args.get("correlation_id") is not None:
            continue   # the launch side of a kernel, not an op
        vals = {"name": str(e.get("name", "")), "cat": "xla_host", "pid": str(e.get("pid")),
                "tid": str(e.get("tid")), "start_us": ts, "duration_us": dur}
        for c in orow:
            orow[c].append(vals.get(c))
    return frame(orow, OP_COLUMNS)


def read_jax_bytes(raw: bytes, label, notes) -> Trace:
    """:func:`read_jax_perfetto` from the file's (UTF-8, already gunzipped) bytes."""
    import msgspec
    try:
        doc = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        msg = str(e)
        raise TraceError(label, "the JSON ends early (truncated file?)" if "truncated" in msg.lower()
                         else f"not valid JSON ({msg})") from None
    return read_jax_perfetto(doc, label, notes)
