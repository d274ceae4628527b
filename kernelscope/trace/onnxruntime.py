"""Reading ONNX Runtime's own profiles (``SessionOptions.enable_profiling = True``).

``InferenceSession.end_profiling()`` writes a JSON array of Chrome-trace events (no
``traceEvents`` key around them), each with ``cat`` ``"Session"`` (``model_loading_uri`` or
``model_loading_array``, ``session_initialization``, ``model_run``, the executor's
``SequentialExecutor::Execute``), ``"Node"`` (one ``<node>_kernel_time`` event per node run:
``args`` hold ``op_name``, ``provider``, ``input_type_shape``, ``output_type_shape``,
``output_size``, ``node_index``, ``thread_scheduling_stats``; before 1.17 also
``_fence_before``/``_fence_after`` events, which carry no work and are skipped) or ``"Kernel"``
(what a device provider's own profiler recorded: the CUDA provider with
``enable_cuda_profiling`` writes each CUPTI kernel with ``stream`` and ``grid_*``/``block_*``
as strings, and copies as such events with a grid of -1; the ROCm provider the same from
roctracer). Times are microseconds from the profiler's start. The Kineto reader hands such files
here (:func:`looks_like_onnxruntime`), and both reach the same :class:`Trace`:

- each node run on a provider is a row of the kernels table (``name`` the node, ``op`` its op
  type, ``kernel_backend`` the provider, which :data:`PROVIDERS` turns into a backend label
  (``analysis/backend_rules.py``) and a device type (``device_type``, per row); ``stream`` the
  ordinal of the thread that ran it, ``launch_tid`` that thread), with its shapes
  (``input_dims``, ``input_types``, ``output_dims``), ``run`` (which ``model_run`` it belongs
  to) and ``pool_threads`` (the intra-op pool's threads that ran part of it, the caller's
  included);
- ``MemcpyToHost``/``MemcpyFromHost`` nodes (what ONNX Runtime inserts between providers) are
  copies (``DtoH``/``HtoD``, ``bytes`` their output's size);
- where a node has device ``Kernel`` events, the kernels are the rows (launch shape from their
  args, ``op`` the node's op type) and the node is a CPU op (cat ``ort_node``) holding its
  host time. ONNX Runtime writes a node's device events right after the node's event and
  rewrites their start to the node's start plus 1 us per event (``MergeEvents`` in
  ``gpu_profiler_common.cc``; its ROCm tracer's clock has another epoch): their durations are
  the device's, their order within the node is kept, their start times are not the device's
  (the report's notes say so). This path follows ONNX Runtime's source: no CUDA recording was
  at hand when it was written;
- session events are user annotations in the ops table (``model_run`` ranges among them).

The file is untrusted: anything that is not such an array is a :class:`~kernelscope.TraceError`
naming the file; odd fields inside an event are left empty, names are cut to
:data:`MAX_NAME` characters.
"""
from __future__ import annotations

import re

import numpy as np

from kernelscope.errors import TraceError
from kernelscope.jsonable import num, whole
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

# The name ONNX Runtime gives its profile (``profile_file_prefix`` defaults to it).
FILE_PREFIX = "onnxruntime_profile"
MAX_NAME = 4000
_START = re.compile(rb"^\s*\[\s*\{")
_CAT = re.compile(rb'"cat"\s*:\s*"(Session|Node|Kernel)"')
_ORT_KEYS = re.compile(rb'"(op_name|model_loading_(uri|array)|session_initialization|model_run)"')
_SUFFIX = "_kernel_time"
_FENCES = ("_fence_before", "_fence_after")
# The copy nodes ONNX Runtime inserts between providers, and their direction.
COPY_OPS = {"MemcpyFromHost": "HtoD", "MemcpyToHost": "DtoH"}
_COPY_KIND = re.compile(r"HtoD|DtoH|DtoD|HtoH|PtoP", re.IGNORECASE)
# ONNX Runtime's execution providers, as its profile names them (a node's ``provider`` arg), with
# the backend label each gets (one of analysis/backend_rules.py's BACKENDS) and the device type it
# runs on. A provider that picks the device itself says so in its device type: CoreML picks the
# CPU, GPU or Neural Engine ("Apple"), OpenVINO and DirectML a device of their own kind; NPUs are
# grouped. An unknown provider is "other" on an "unknown" device.
PROVIDERS: dict[str, tuple[str, str]] = {
    "CPUExecutionProvider": ("ORT CPU", "CPU"),
    "CUDAExecutionProvider": ("ORT CUDA", "CUDA"),
    "TensorrtExecutionProvider": ("TensorRT", "CUDA"),
    "NvTensorRTRTXExecutionProvider": ("TensorRT", "CUDA"),
    "ROCMExecutionProvider": ("ORT ROCm", "ROCm"),
    "MIGraphXExecutionProvider": ("MIGraphX", "ROCm"),
    "WebGpuExecutionProvider": ("ORT WebGPU", "WebGPU"),
    "JsExecutionProvider": ("ORT WebGPU", "WebGPU"),
    "CoreMLExecutionProvider": ("CoreML", "Apple"),
    "DmlExecutionProvider": ("DirectML", "DirectML"),
    "OpenVINOExecutionProvider": ("OpenVINO", "OpenVINO"),
    "XnnpackExecutionProvider": ("XNNPACK", "CPU"),
    "DnnlExecutionProvider": ("oneDNN", "CPU"),
    "ACLExecutionProvider": ("ACL", "CPU"),
    "ArmNNExecutionProvider": ("ACL", "CPU"),
    "QNNExecutionProvider": ("QNN", "NPU"),
    "NnapiExecutionProvider": ("NNAPI", "NPU"),
    "CANNExecutionProvider": ("CANN", "NPU"),
    "VitisAIExecutionProvider": ("Vitis AI", "NPU"),
}
_DEVICES = {k.lower(): v[1] for k, v in PROVIDERS.items()}
_NODE_COLUMNS = ("provider", "input_dims", "input_types", "output_dims", "run", "pool_threads", "node_index")


def looks_like_onnxruntime(raw: bytes) -> bool:
    """Whether a file's first bytes are an ONNX Runtime profile: a JSON array whose events have
    ONNX Runtime's categories and names.

    >>> looks_like_onnxruntime(b'[\\n{"cat" : "Session","pid" :1,"name" :"model_loading_uri","args" : {}}')
    True
    >>> looks_like_onnxruntime(b'{"traceEvents": [{"cat": "Node"}]}')
    False
    """
    head = raw[:1 << 16]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    return bool(_START.match(head) and _CAT.search(head) and _ORT_KEYS.search(head))


def _text(v) -> str | None:
    return v[:MAX_NAME] if isinstance(v, str) and v else None


def _shapes(v) -> tuple[list | None, list | None]:
    """``[{"float": [64, 512]}, ...]`` -> ``([[64, 512], ...], ["float", ...])``; None where odd."""
    if not isinstance(v, list):
        return None, None
    dims, types = [], []
    for item in v:
        if not (isinstance(item, dict) and len(item) == 1):
            return None, None
        (t, d), = item.items()
        if not isinstance(d, list):
            return None, None
        dims.append([whole(x) for x in d])
        types.append(t[:64] if isinstance(t, str) else None)
    return dims, types


def _pool_threads(stats) -> int | None:
    """The threads that ran part of a node: the caller and each pool thread with ``num_run`` > 0."""
    if not isinstance(stats, dict):
        return None
    subs = stats.get("sub_threads")
    ran = sum(1 for s in subs.values() if isinstance(s, dict) and (whole(s.get("num_run")) or 0) > 0) \
        if isinstance(subs, dict) else 0
    return 1 + ran


def read_onnxruntime(events, label, notes) -> Trace:
    """A :class:`Trace` from a decoded ONNX Runtime profile (the list of events).

    >>> import gzip
    >>> t = read_onnxruntime(json.load(gzip.open("onnxruntime/mlp_cpu.onnxruntime_profile.json.gz")), "x", [])
    >>> t.kernels[["name", "op", "kernel_backend", "device_type", "input_dims"]].head(3)
            name         op       kernel_backend device_type          input_dims
    0  fused fc1  FusedGemm  CPUExecutionProvider         CPU  [[64, 256], [512]]
    1  fused fc2  FusedGemm  CPUExecutionProvider         CPU  [[64, 512], [512]]
    2        fc3       Gemm  CPUExecutionProvider         CPU   [[64, 512], [10]]
    """
    if not isinstance(events, list):
        raise TraceError(label, "not an ONNX Runtime profile: the file is not a JSON array of events")
    sessions, nodes, device = sorted_events(events, notes)
    if not nodes and not sessions:
        raise TraceError(label, "not an ONNX Runtime profile: it holds no Session or Node event with a time")
    threads: dict = {}
    runs = model_runs(sessions)
    by_node = _device_events_of(nodes, device)
    krow: dict = {c: [] for c in (*KERNEL_COLUMNS, "device_type", *_NODE_COLUMNS)}
    crow: dict = {c: [] for c in (*COPY_COLUMNS, "device_type", "provider", "run")}
    orow: dict = {c: [] for c in OP_COLUMNS}
    for i, (e, ts, dur, args) in enumerate(nodes):
        node = node_fields(e, ts, dur, args, threads, runs)
        provider = node["provider"]
        dtype = _DEVICES.get(provider.lower(), "unknown") if provider else "unknown"
        if node["op"] in COPY_OPS:
            size = whole(args.get("output_size"))
            _append(crow, {**node, "kind": "memcpy", "copy_kind": COPY_OPS[node["op"]], "device_index": 0,
                           "device_type": dtype, "bytes": size, "launch_tid": node["tid"],
                           "bandwidth_gbps": size / dur / 1000.0 if size and dur > 0 else None})
        elif i in by_node:
            # The node's device work is its kernels; the node itself is host time (a CPU op).
            index = len(orow["name"])
            _append(orow, {**node, "cat": "ort_node", "pid": _text(str(e.get("pid"))), "kernel_backend": provider})
            for de, dts, ddur, dargs in by_node[i]:
                _device_row(krow, crow, de, dts, ddur, dargs, node, index, dtype)
        else:
            _append(krow, {**node, "device_index": 0, "device_type": dtype, "kernel_backend": provider,
                           "launch_tid": node["tid"], "launch_start_us": ts, "launch_duration_us": dur})
    for e, ts, dur, _args in sessions:
        _append(orow, {"name": _text(e.get("name")), "cat": "user_annotation", "pid": _text(str(e.get("pid"))),
                       "tid": _text(str(e.get("tid"))), "start_us": ts, "duration_us": dur})
    if by_node:
        notes.append("device kernel start times are ONNX Runtime's placeholders (the node's start plus 1 us "
                     "per kernel); their durations are the device's")
    return _trace(krow, crow, orow, label, notes, runs)


def sorted_events(events, notes) -> tuple[list, list, list]:
    """``(event, ts, dur, args)`` of the complete events by category: sessions, node runs (fences
    left out) and device events, in file order; events without a usable time are skipped and
    counted in ``notes``."""
    sessions, nodes, device, bad = [], [], [], 0
    for e in events:
        if not isinstance(e, dict) or e.get("ph", "X") != "X" or e.get("cat") not in ("Session", "Node", "Kernel"):
            continue
        ts, dur = num(e.get("ts")), num(e.get("dur"))
        if ts is None or dur is None or dur < 0:
            bad += 1
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        name = e.get("name") if isinstance(e.get("name"), str) else ""
        if e["cat"] == "Session":
            sessions.append((e, ts, dur, args))
        elif e["cat"] == "Kernel":
            device.append((e, ts, dur, args, len(nodes)))
        elif not name.endswith(_FENCES):
            nodes.append((e, ts, dur, args))
    if bad:
        notes.append(f"skipped {bad} event(s) with a missing, negative, out-of-range or non-numeric time")
    return sessions, nodes, device


def model_runs(sessions) -> dict:
    """The ``model_run`` ranges, in start order: ``{"start", "end", "tid"}`` arrays (a run's
    nodes are on its caller's thread; runs from several threads may overlap)."""
    spans = sorted((ts, ts + dur, str(e.get("tid"))) for e, ts, dur, _ in sessions if e.get("name") == "model_run")
    return {"start": np.array([s[0] for s in spans], dtype=float), "end": np.array([s[1] for s in spans], dtype=float),
            "tid": [s[2] for s in spans]}


def _run_of(runs, ts, tid) -> int | None:
    """The index of the ``model_run`` range holding time ``ts``: the latest started by then on
    the node's thread, else on any thread (the parallel executor's pool runs nodes off the caller's)."""
    starts, ends = runs["start"], runs["end"]
    last = int(np.searchsorted(starts, ts, side="right")) - 1
    holding = [i for i in range(last, -1, -1) if ts <= ends[i]][:8] if last >= 0 else []
    same = [i for i in holding if runs["tid"][i] == tid]
    return (same or holding or [None])[0]


def _device_events_of(nodes, device) -> dict:
    """``{node position: [device events]}``: each device event belongs to the node event written
    just before it (ONNX Runtime's ``MergeEvents`` puts them there)."""
    out: dict = {}
    for e, ts, dur, args, after in device:
        if after > 0:
            out.setdefault(after - 1, []).append((e, ts, dur, args))
    return out


def _node_name(e) -> str:
    name = _text(e.get("name")) or ""
    return name[:-len(_SUFFIX)] if name.endswith(_SUFFIX) else name


def node_fields(e, ts, dur, args, threads, runs) -> dict:
    """What every row made of a node run carries."""
    tid = _text(str(e.get("tid"))) if e.get("tid") is not None else None
    ins, in_types = _shapes(args.get("input_type_shape"))
    outs, _ = _shapes(args.get("output_type_shape"))
    return {"name": _node_name(e), "op": _text(args.get("op_name")), "provider": _text(args.get("provider")),
            "start_us": ts, "duration_us": dur, "tid": tid, "stream": threads.setdefault(tid, len(threads)),
            "input_dims": ins, "input_types": in_types, "output_dims": outs, "run": _run_of(runs, ts, tid),
            "pool_threads": _pool_threads(args.get("thread_scheduling_stats")),
            "node_index": whole(args.get("node_index"))}


def _device_row(krow, crow, e, ts, dur, args, node, op_index, dtype) -> None:
    """A device event of a node: a copy (CUPTI's memcpy records: grid -1, a copy's name) or a
    kernel with its launch shape."""
    name = _text(e.get("name")) or ""
    grid = [whole(args.get(f"grid_{a}")) for a in "xyz"]
    block = [whole(args.get(f"block_{a}")) for a in "xyz"]
    stream = whole(args.get("stream"))
    if stream is None and isinstance(args.get("stream"), str):
        stream = whole(int(args["stream"], 16)) if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", args["stream"]) else None
    shared = {"device_index": 0, "device_type": dtype, "stream": stream, "start_us": ts, "duration_us": dur,
              "op": node["op"], "op_index": op_index, "launch_tid": node["tid"], "run": node["run"],
              "provider": node["provider"]}
    if grid[0] == -1 or _COPY_KIND.search(name) and "memcpy" in name.lower():
        m = _COPY_KIND.search(name)
        _append(crow, {**shared, "kind": "memcpy", "name": name, "copy_kind": m.group(0) if m else None})
        return
    _append(krow, {**shared, "name": name,
                   "grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2],
                   "block_x": block[0], "block_y": block[1], "block_z": block[2]})


def _append(rows: dict, vals: dict) -> None:
    for c, col in rows.items():
        col.append(vals.get(c))


def _trace(krow, crow, orow, label, notes, runs) -> Trace:
    """The tables, on the profile's own clock (microseconds from the profiler's start)."""
    schema = {**KERNEL_COLUMNS, "device_type": "object", "provider": "object", "input_dims": "object",
              "input_types": "object", "output_dims": "object", "run": "int64", "pool_threads": "int64",
              "node_index": "int64"}
    k = frame(krow, schema)
    copies = frame(crow, {**COPY_COLUMNS, "device_type": "object", "provider": "object", "run": "int64"})
    ops = frame(orow, OP_COLUMNS)
    ends = [float((t["start_us"] + t["duration_us"]).max()) for t in (k, copies, ops) if len(t)]
    types = list(dict.fromkeys([*k["device_type"].dropna(), *copies["device_type"].dropna()]))
    devices = frame({"index": [0] * len(types), "name": types, "device_type": types}, DEVICE_COLUMNS)
    notes.append("ONNX Runtime profile: each node run on its execution provider is a row of the kernel table "
                 "(a node's time is its host-side Compute() call unless the provider recorded device kernels)")
    meta = {"source": label, "time_origin_ns": 0, "span_us": max(ends) if ends else None, "notes": notes,
            "producer": "onnxruntime", "onnxruntime_runs": len(runs["start"])}
    empty = {name: frame({}, schema) for name, schema in (("runtime", RUNTIME_COLUMNS),
                                                          ("frames", FRAME_COLUMNS), ("syncs", SYNC_COLUMNS))}
    return Trace(kernels=k, copies=copies, runtime=empty["runtime"], ops=ops, frames=empty["frames"],
                 syncs=empty["syncs"], devices=devices, meta=meta)


def read_onnxruntime_bytes(raw: bytes, label, notes) -> Trace:
    """:func:`read_onnxruntime` from the file's (UTF-8, already gunzipped) bytes.

    >>> read_onnxruntime_bytes(b'[{"cat": "Session", "name": "model_run"', "cut.json", [])
    Traceback (most recent call last):
    ...
    kernelscope.errors.TraceError: cut.json: the ONNX Runtime profile ends early (truncated file?)
    """
    import msgspec
    try:
        doc = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        msg = str(e)
        raise TraceError(label, "the ONNX Runtime profile ends early (truncated file?)" if "truncated" in msg.lower()
                         else f"the ONNX Runtime profile is not valid JSON ({msg})") from None
    return read_onnxruntime(doc, label, notes)
