"""Reading onnxruntime-web runs recorded in headless Chromium (WebGPU, and WASM on the CPU).

The file is what ``benchmarks/onnxruntime/webgpu_record.py`` writes: one JSON object whose top
level says ``"format": "onnxruntime-web"``, holding

- ``console``: what the page printed, among it ONNX Runtime's own session profile
  (``enableProfiling: true``; a WebAssembly build prints its events to the console, one JSON
  event a line, the same events a native ORT profile file holds): per node its op type, its
  execution provider, input/output shapes and its host-side time; per run ``model_run``;
- ``kernels``: onnxruntime-web's per-kernel WebGPU records (``env.webgpu.profiling.ondata``,
  JSEP build): kernelType, kernelName (the node), programName (the WGSL program), start and end
  in ns from WebGPU timestamp queries;
- ``adapter`` (vendor, architecture, features), ``ortVersion``, ``chromium`` (version, flags).

The C++ WebGPU EP (``ort.webgpu.min.mjs``) records its GPU times in the session profile itself
(``cat: "Api"`` events named ``node&kernelType&program``), already on the session's clock.

Rows carry their node's execution provider as ``kernel_backend``, which
:data:`~kernelscope.trace.onnxruntime.PROVIDERS` (the one table) names: ``JsExecutionProvider``
(JSEP: its kernels are WGSL programs) and ``WebGpuExecutionProvider`` are "ORT WebGPU" on a
``WebGPU`` device; a node's ``backend`` column is that device, and ``CPUExecutionProvider`` in a
browser is ``WASM``. A node's ``MemcpyToHost``/``MemcpyFromHost`` is a copy (the copies table).

Clock: time 0 is the session profile's first event. JSEP's timestamps count from its first query
on the GPU's own clock, which has no stated relation to the session's: each run's kernels are
placed so that its first kernel starts with its node, keeping their GPU spacing and durations.

What the WebGPU row rests on here: Chromium's WebGPU (Dawn) on SwiftShader's Vulkan, a software
adapter on the CPU (``adapter.architecture == "swiftshader"``), so its times are a CPU's, not a
GPU's; the file says which adapter ran it.
"""
from __future__ import annotations

import re

import msgspec

from kernelscope.errors import TraceError
from kernelscope.jsonable import num, whole
from kernelscope.trace.files import read_bytes
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
from kernelscope.trace.onnxruntime import PROVIDERS

FORMAT = "onnxruntime-web"
_MARK = re.compile(rb'"format"\s*:\s*"onnxruntime-web"')
_COPY_OPS = {"MemcpyToHost": "DtoH", "MemcpyFromHost": "HtoD"}
_SUFFIX = "_kernel_time"


def looks_like_ortweb(raw: bytes) -> bool:
    """Whether a JSON file is an onnxruntime-web recording (its top level names the format).

    >>> looks_like_ortweb(b'{"format": "onnxruntime-web", "ep": "webgpu"}'), looks_like_ortweb(b'[]')
    (True, False)
    """
    return bool(_MARK.search(bytes(raw[:4096])))


def _where(provider) -> str | None:
    """The device a provider's nodes ran on; in a browser the CPU provider runs as WebAssembly.

    >>> _where("JsExecutionProvider"), _where("CPUExecutionProvider")
    ('WebGPU', 'WASM')
    """
    device = PROVIDERS[provider][1] if provider in PROVIDERS else provider
    return "WASM" if device == "CPU" else device


def profile_events(lines) -> list:
    """ONNX Runtime's profile events among the console lines (one JSON event a line, with a
    trailing comma; the ``[`` and ``]`` around them and any other message are skipped).

    >>> profile_events(['[', '{"cat": "Node", "ph": "X", "name": "a", "ts": 1, "dur": 2},', 'hello'])
    [{'cat': 'Node', 'ph': 'X', 'name': 'a', 'ts': 1, 'dur': 2}]
    """
    out = []
    for line in lines if isinstance(lines, list) else []:
        text = line.strip().rstrip(",") if isinstance(line, str) else ""
        if not text.startswith("{"):
            continue
        try:
            e = msgspec.json.decode(text)
        except msgspec.DecodeError:
            continue
        if isinstance(e, dict) and e.get("ph") == "X" and num(e.get("ts")) is not None \
                and num(e.get("dur")) is not None:
            out.append(e)
    return out


def read_ortweb(path) -> Trace:
    """A :class:`Trace` from an onnxruntime-web recording: ops (one per node run, with ``op_type``,
    ``provider`` and ``backend``), the WebGPU kernels with their GPU times, copies between the
    providers, the adapter as the device.

    >>> t = read_ortweb("onnxruntime/webgpu_mlp.webgpu.ortweb.json")
    >>> t.devices[["name", "device_type"]]
                     name device_type
    0  google swiftshader      WebGPU
    >>> n = t.ops[t.ops["cat"] == "onnxruntime_node"]
    >>> sorted(set(zip(n["op_type"], n["backend"])))
    [('Gemm', 'WebGPU'), ('MemcpyToHost', 'WebGPU'), ('Relu', 'WebGPU'), ('Softmax', 'WebGPU'), ('TopK', 'WASM')]
    >>> t.kernels[["name", "op"]].drop_duplicates().values.tolist()[:2]
    [['GemmShared', 'fc1_matmul/MatMulAddFusion'], ['Relu', 'relu']]
    """
    label = str(path)
    try:
        doc = msgspec.json.decode(read_bytes(path))
    except (msgspec.DecodeError, RecursionError) as e:
        msg = str(e)
        raise TraceError(label, "the JSON ends early (truncated file?)" if "truncated" in msg.lower()
                         else f"not valid JSON ({msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceError(label, f"not an onnxruntime-web recording (no \"format\": \"{FORMAT}\")")
    return ortweb_trace(doc, label)


def ortweb_trace(doc: dict, label: str) -> Trace:
    """:func:`read_ortweb` from the decoded document."""
    events = profile_events(doc.get("console"))
    nodes = [e for e in events if e.get("cat") == "Node"]
    if not nodes:
        raise TraceError(label, "the recording holds no node of ONNX Runtime's session profile "
                                "(was the session created with enableProfiling: true?)")
    origin = min(float(e["ts"]) for e in events)
    notes: list = []
    runs = sorted((float(e["ts"]) - origin, float(e["dur"])) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")
    ops = _op_table(events, origin, runs)
    copies = _copy_table(ops)
    jsep = doc.get("kernels") if isinstance(doc.get("kernels"), list) else []
    kernels = _jsep_kernels(jsep, ops, runs, notes) if jsep else _api_kernels(events, origin)
    adapter = doc.get("adapter") if isinstance(doc.get("adapter"), dict) else None
    webgpu = adapter is not None or len(kernels)
    devices = frame({"index": [0], "name": [" ".join(str(adapter.get(k) or "") for k in (
        "vendor", "architecture")).strip() or "WebGPU adapter" if adapter else "WebGPU adapter"],
        "device_type": ["WebGPU"]} if webgpu else {}, DEVICE_COLUMNS)
    if adapter and adapter.get("architecture") == "swiftshader":
        notes.append("WebGPU on SwiftShader (Vulkan on the CPU): a software adapter; its kernel "
                     "times are the CPU's")
    ends = [float((t["start_us"] + t["duration_us"]).max()) for t in (ops, kernels) if len(t)]
    meta = {"source": label, "producer": FORMAT, "time_origin_ns": 0, "notes": notes,
            "span_us": max(ends) if ends else None, "ep": doc.get("ep"),
            "ort_version": (doc.get("ortVersion") or {}).get("web") if isinstance(doc.get("ortVersion"), dict)
            else None, "adapter": adapter, "chromium": doc.get("chromium"), "runs": len(runs)}
    empty = {n: frame({}, s) for n, s in (("runtime", RUNTIME_COLUMNS), ("frames", FRAME_COLUMNS),
                                          ("syncs", SYNC_COLUMNS))}
    return Trace(kernels=kernels, copies=copies, runtime=empty["runtime"], ops=ops, frames=empty["frames"],
                 syncs=empty["syncs"], devices=devices, meta=meta)


def _shapes(items) -> tuple:
    """``[{"float": [8, 64]}, ...]`` (ORT's ``input_type_shape``) -> (dims, types)."""
    dims, types = [], []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and len(item) == 1:
            (t, d), = item.items()
            types.append(str(t))
            dims.append([whole(x) for x in d] if isinstance(d, list) else [])
    return dims, types


def _run_of(ts: float, runs) -> int | None:
    """The index of the ``model_run`` holding time ``ts`` (None: outside every run)."""
    for i, (start, dur) in enumerate(runs):
        if start <= ts <= start + dur:
            return i
    return None


def _op_table(events, origin, runs):
    """One row per node run (``cat: "Node"``) and per session event (``model_run``, the
    executor, initialization), in time order."""
    rows: dict = {c: [] for c in (*OP_COLUMNS, "op_type", "provider", "backend", "run", "output_dims")}
    for e in sorted(events, key=lambda e: float(e["ts"])):
        if e.get("cat") not in ("Node", "Session"):
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        name = str(e.get("name", ""))
        node = e.get("cat") == "Node"
        provider = args.get("provider") if node else None
        dims, types = _shapes(args.get("input_type_shape"))
        start = float(e["ts"]) - origin
        vals = {"name": name[:-len(_SUFFIX)] if node and name.endswith(_SUFFIX) else name,
                "cat": "onnxruntime_node" if node else "onnxruntime_session",
                "pid": str(e.get("pid")), "tid": str(e.get("tid")), "start_us": start,
                "duration_us": float(e["dur"]), "input_dims": dims if node else None,
                "input_types": types if node else None, "kernel_backend": provider if node else FORMAT,
                "op_type": args.get("op_name"), "provider": provider,
                "backend": _where(provider) if node else None,
                "run": _run_of(start, runs), "output_dims": _shapes(args.get("output_type_shape"))[0] if node else None}
        for c in rows:
            rows[c].append(vals.get(c))
    return frame(rows, OP_COLUMNS)


def _copy_table(ops):
    """The copy nodes (MemcpyToHost: WebGPU -> WASM, MemcpyFromHost: back) as copies: their time
    is the host's wait for the copy (it holds the GPU work queued before it)."""
    m = ops["op_type"].isin(list(_COPY_OPS))
    c = ops[m]
    return frame({"kind": ["memcpy"] * len(c), "name": c["op_type"].tolist(),
                  "copy_kind": [_COPY_OPS[t] for t in c["op_type"]], "device_index": [0] * len(c),
                  "stream": [0] * len(c), "start_us": c["start_us"].tolist(),
                  "duration_us": c["duration_us"].tolist(), "op": c["name"].tolist(),
                  "op_index": c.index.tolist()}, COPY_COLUMNS)


def _jsep_kernels(records, ops, runs, notes):
    """JSEP's per-kernel records as kernels, matched in order to the WebGPU nodes that ran them
    (same name), each run's kernels shifted onto the session's clock at its first node."""
    gpu_nodes = ops[(ops["cat"] == "onnxruntime_node") & (ops["backend"] == "WebGPU")
                    & ~ops["op_type"].isin(list(_COPY_OPS))]
    queue = [(n, s, r, i) for n, s, r, i in zip(gpu_nodes["name"], gpu_nodes["start_us"], gpu_nodes["run"],
                                                gpu_nodes.index)]
    rows: dict = {c: [] for c in (*KERNEL_COLUMNS, "kernel_type", "input_dims", "output_dims", "gpu_start_ns")}
    q, shift, unmatched = 0, {}, 0
    for rec in records:
        if not isinstance(rec, dict):
            continue
        start, end = num(rec.get("startTime")), num(rec.get("endTime"))
        if start is None or end is None or end < start:
            unmatched += 1
            continue
        name = rec.get("kernelName")
        # Several programs of one node share its name; the next node starts a new match.
        while q < len(queue) and queue[q][0] != name:
            q += 1
        node = queue[q] if q < len(queue) else None
        if node is None:
            unmatched += 1
        run = node[2] if node else None
        if run not in shift:
            shift[run] = (node[1] if node else 0.0) - start / 1000.0
        vals = {"name": str(rec.get("programName", "")), "device_index": 0, "stream": 0,
                "start_us": start / 1000.0 + shift[run], "duration_us": (end - start) / 1000.0,
                "correlation": whole(rec.get("kernelId")), "op": name, "op_index": node[3] if node else None,
                "kernel_backend": ops.at[node[3], "provider"] if node else "JsExecutionProvider",
                "graph_launch": False, "kernel_type": rec.get("kernelType"),
                "input_dims": [m.get("dims") for m in rec.get("inputsMetadata") or [] if isinstance(m, dict)],
                "output_dims": [m.get("dims") for m in rec.get("outputsMetadata") or [] if isinstance(m, dict)],
                "gpu_start_ns": start}
        for c in rows:
            rows[c].append(vals.get(c))
    if unmatched:
        notes.append(f"{unmatched} WebGPU kernel record(s) matched no WebGPU node of the profile")
    notes.append("WebGPU kernel times from timestamp queries (onnxruntime-web JSEP); each run's "
                 "kernels placed at its first node's start on the session's clock")
    return frame(rows, KERNEL_COLUMNS)


def _api_kernels(events, origin):
    """The C++ WebGPU EP's GPU events (``cat: "Api"``, ``node&kernelType&program``) as kernels."""
    rows: dict = {c: [] for c in (*KERNEL_COLUMNS, "kernel_type", "shapes")}
    for e in events:
        if e.get("cat") != "Api":
            continue
        parts = str(e.get("name", "")).split("&")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        vals = {"name": parts[-1], "device_index": 0, "stream": 0, "start_us": float(e["ts"]) - origin,
                "duration_us": float(e["dur"]), "op": parts[0], "kernel_backend": "WebGpuExecutionProvider",
                "graph_launch": False, "kernel_type": parts[1] if len(parts) > 2 else None,
                "shapes": args.get("shapes")}
        for c in rows:
            rows[c].append(vals.get(c))
    return frame(rows, KERNEL_COLUMNS)
