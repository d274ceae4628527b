"""Watch CUDA graph captures: which op (shapes, dtypes, module, source line) made each node.

A replayed graph's kernels have no CPU op in any trace: the op that made them ran at capture,
maybe long before the recording. ``watch_graphs()`` wraps ``torch.cuda.CUDAGraph.capture_begin``
and ``capture_end`` (which ``torch.cuda.graph``, ``make_graphed_callables`` and Inductor's
cudagraph trees all call), so it costs nothing until a capture happens. During a capture it
counts the graph's nodes around every aten op (a dispatch mode) and notes the module and source
line; when the capture ends it reads each node (kernel name, grid, block) from the driver. The
records are what :mod:`kernelscope.analysis.graph_match` matches replays against.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import weakref

from kernelscope.capture import graph_nodes

# Records kept per process: a server that captures graphs for many batch sizes keeps the newest.
MAX_GRAPHS = 512

_watch = None

# torch's dtype names -> the scalar-type names Kineto writes in ``Input type`` (the ops table's).
_KINETO_DTYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                  "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
                  "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
                  "complex64": "c10::complex<float>", "float8_e4m3fn": "c10::Float8_e4m3fn",
                  "float8_e5m2": "c10::Float8_e5m2"}
_SKIP_FILES = (os.sep + "torch" + os.sep, os.sep + "kernelscope" + os.sep, "contextlib.py",
               os.sep + "triton" + os.sep, "<frozen ")


def _source_line(frame) -> str | None:
    """The first frame outside torch, Triton and kernelscope: the user's line that ran the op."""
    while frame is not None:
        f = frame.f_code.co_filename
        if not any(s in f for s in _SKIP_FILES):
            return f"{f}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return None


def _tensor_info(args) -> tuple[list, list]:
    import torch
    dims: list = []
    types: list = []
    for a in args:
        if isinstance(a, torch.Tensor):
            dims.append(list(a.shape))
            types.append(_KINETO_DTYPES.get(str(a.dtype).removeprefix("torch."), str(a.dtype)))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, torch.Tensor) for x in a):
            dims.append([list(x.shape) for x in a])
            types.append("TensorList")
        else:
            dims.append([])
            types.append("Scalar" if isinstance(a, (int, float, bool)) else "")
    return dims, types


class _Capture:
    """One capture in progress: the graph being built and the ops that added its nodes."""

    def __init__(self, graph_obj, stream: int, handle):
        self.graph_obj, self.stream, self.handle = graph_obj, stream, handle
        self.thread = threading.get_ident()
        self.t0 = time.perf_counter_ns()
        self.wall0 = time.time_ns()
        self.marks = []         # (first node, end node, op, dims, types, module, source)
        self.modules = []       # the module stack: (module, dotted path)

    def module_path(self):
        return self.modules[-1][1] if self.modules else None


class GraphWatch:
    """Records every CUDA graph captured while it is on: ``records`` (newest last).

    >>> w = ks.watch_graphs(); w.on                       # doctest: +SKIP
    True
    """

    def __init__(self):
        self.records: list[dict] = []
        self.on = False
        self.errors: list[str] = []
        self._orig = None
        self._current: _Capture | None = None
        self.captures = 0        # captures seen so far (each record's ``capture`` number)

    # -- switching ------------------------------------------------------------------------
    def start(self):
        if self.on:
            return self
        import torch
        cls = torch.cuda.CUDAGraph
        self._orig = (cls.capture_begin, cls.capture_end)
        begin, end = self._orig
        watch = self

        def capture_begin(graph, *args, **kwargs):
            out = begin(graph, *args, **kwargs)
            watch._begin(graph)
            return out

        def capture_end(graph, *args, **kwargs):
            cap = watch._end_ops(graph)
            out = end(graph, *args, **kwargs)
            watch._finish(cap, graph)
            return out

        capture_begin.__wrapped__, capture_end.__wrapped__ = begin, end
        cls.capture_begin, cls.capture_end = capture_begin, capture_end
        self.on = True
        return self

    def stop(self):
        if not self.on:
            return self
        import torch
        torch.cuda.CUDAGraph.capture_begin, torch.cuda.CUDAGraph.capture_end = self._orig
        self.on = False
        return self

    # -- one capture ------------------------------------------------------------------------
    def _begin(self, graph_obj):
        try:
            import torch
            stream = int(torch.cuda.current_stream().cuda_stream)
            handle = graph_nodes.capturing_graph(stream)
            if handle is None:
                return
            cap = _Capture(graph_obj, stream, handle)
            cap.mode = _OpMarks(self, cap).__enter__()
            cap.hooks = _module_hooks(cap) + _triton_marks(cap)
            self._current = cap
        except Exception as e:  # noqa: BLE001 - a watch never breaks the user's capture
            self.errors.append(f"capture start: {type(e).__name__}: {e}"[:300])

    def _end_ops(self, graph_obj):
        cap, self._current = self._current, None
        if cap is None or cap.graph_obj is not graph_obj:
            return None
        try:
            cap.mode.__exit__(None, None, None)
            for h in cap.hooks:
                h.remove()
            handles = graph_nodes.nodes(cap.handle)
            index = {h: i for i, h in enumerate(handles)}
            cap.nodes = [graph_nodes.describe(h, index) for h in handles]
        except Exception as e:  # noqa: BLE001 - a watch never breaks the user's capture
            self.errors.append(f"capture end: {type(e).__name__}: {e}"[:300])
            return None
        return cap

    def _finish(self, cap, graph_obj):
        if cap is None:
            return
        # The capture's mode and hooks refer back to it: let the graph object go with the user's.
        cap.graph_obj = cap.mode = cap.hooks = None
        try:
            exec_handle = graph_obj.raw_cuda_graph_exec() if hasattr(graph_obj, "raw_cuda_graph_exec") else 0
        except Exception:  # noqa: BLE001 - no exec handle: the record lacks an exec id, nothing else
            exec_handle = 0
        self.captures += 1
        for first, stop, op, dims, types, module, source in cap.marks:
            for n in cap.nodes[first:stop]:
                n.setdefault("op", op)
                n.setdefault("input_dims", dims)
                n.setdefault("input_types", types)
                n.setdefault("module", module)
                n.setdefault("source", source)
        rec = {"capture": self.captures, "stream": cap.stream, "thread": cap.thread,
               "wall_ns": cap.wall0, "capture_us": (time.perf_counter_ns() - cap.t0) / 1e3,
               "exec_id": graph_nodes.exec_id(exec_handle), "nodes": cap.nodes, "freed_ns": None}
        self.records.append(rec)
        del self.records[:-MAX_GRAPHS]
        # A graph freed before a recording starts cannot be what the recording replays.
        try:
            weakref.finalize(graph_obj, _freed, rec, self)
        except TypeError:
            pass


    def mark(self) -> tuple:
        """Where a recording starts: (captures so far, the clock), for :meth:`for_recording`."""
        return self.captures, time.perf_counter_ns()

    def for_recording(self, kernels, since: tuple) -> dict:
        """What a recording keeps (its ``meta["graph_captures"]``): the captures made during it
        (``in_region``) and the earlier ones that launched as many kernels as one of its replays."""
        g = kernels["graph_launch"].fillna(False).to_numpy(dtype=bool)
        sizes = set(kernels.loc[g].groupby("correlation").size().tolist())
        keep = []
        for r in self.records:
            inside = r["capture"] > since[0]
            if r["freed_ns"] is not None and r["freed_ns"] < since[1]:
                continue    # freed before the recording started
            if inside or sum(n.get("kind") == "kernel" for n in r["nodes"]) in sizes:
                keep.append({**r, "in_region": inside})
        return {"watch": self.on, "records": keep, "errors": list(self.errors[-5:])}


def _freed(rec: dict, watch: GraphWatch) -> None:
    rec["freed_ns"] = time.perf_counter_ns()


def _module_hooks(cap: _Capture) -> list:
    """Global module hooks for the capture's length: the dotted path of the running module."""
    from torch.nn.modules import module as m

    def pre(mod, args):
        if threading.get_ident() != cap.thread:
            return
        if cap.modules:
            parent, path = cap.modules[-1]
            name = next((k for k, v in parent._modules.items() if v is mod), type(mod).__name__)
            cap.modules.append((mod, f"{path}.{name}"))
        else:
            cap.modules.append((mod, type(mod).__name__))

    def post(mod, args, out):
        if threading.get_ident() == cap.thread and cap.modules and cap.modules[-1][0] is mod:
            cap.modules.pop()

    return [m.register_module_forward_pre_hook(pre), m.register_module_forward_hook(post)]


class _Restore:
    def __init__(self, cls, name, orig):
        self.cls, self.name, self.orig = cls, name, orig

    def remove(self):
        setattr(self.cls, self.name, self.orig)


def _triton_marks(cap: _Capture) -> list:
    """For the capture's length, note the nodes each Triton kernel run adds (Inductor's and the
    user's own kernels launch outside any aten op): the kernel's name, its tensors' shapes and
    the line that ran it. Only where Triton or Inductor is already imported."""
    targets = []
    ind = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    if ind is not None and hasattr(ind, "CachingAutotuner"):
        targets.append((ind.CachingAutotuner, lambda self: getattr(getattr(self, "fn", None), "__name__", None)))
    jit = sys.modules.get("triton.runtime.jit")
    if jit is not None and hasattr(jit, "JITFunction"):
        targets.append((jit.JITFunction, lambda self: getattr(self, "__name__", None)))
    depth = [0]
    out = []
    for cls, name_of in targets:
        orig = cls.__dict__.get("run")
        if orig is None:
            continue

        def run(self, *args, _orig=orig, _name_of=name_of, **kwargs):
            if depth[0] or threading.get_ident() != cap.thread:
                return _orig(self, *args, **kwargs)
            depth[0] += 1
            try:
                before = graph_nodes.node_count(cap.handle)
                out_ = _orig(self, *args, **kwargs)
                after = graph_nodes.node_count(cap.handle)
            finally:
                depth[0] -= 1
            if after > before >= 0:
                dims, kinds = _tensor_info(args)
                cap.marks.append((before, after, _name_of(self), dims, kinds, cap.module_path(),
                                  _source_line(sys._getframe(1))))
            return out_
        cls.run = run
        out.append(_Restore(cls, "run", orig))
    return out


def _OpMarks(watch: GraphWatch, cap: _Capture):
    """A dispatch mode that notes which nodes each aten op added to the capture's graph.

    A dispatch mode sits below autograd and leaves the model's own path as it is (a
    torch-function mode would turn off fast paths such as TransformerEncoderLayer's). Its one
    cost: the first dispatch mode of a process makes torch import its compiler (4-7 s on the
    H200), paid once, at the first capture, where torch.compile has not already paid it.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpMarks(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            before = graph_nodes.node_count(cap.handle)
            out = func(*args, **(kwargs or {}))
            after = graph_nodes.node_count(cap.handle)
            if after > before >= 0:
                dims, kinds = _tensor_info(args)
                name = "aten::" + func._schema.name.split("::", 1)[-1] if hasattr(func, "_schema") else str(func)
                cap.marks.append((before, after, name, dims, kinds, cap.module_path(),
                                  _source_line(sys._getframe(1))))
            return out

    return OpMarks()


def watch_graphs(on: bool = True) -> GraphWatch:
    """Turn the process's CUDA graph watch on (or off with ``on=False``) and return it.

    ``%load_ext kernelscope`` turns it on; ``ks.profile`` reports then attribute the kernels of
    graphs captured before the recording to the op, shapes, module and line that captured them.
    Without torch, or without a GPU, it does nothing and costs nothing.

    >>> ks.watch_graphs(on=False).on
    False
    """
    global _watch
    if _watch is None:
        _watch = GraphWatch()
    if not on:
        return _watch.stop()
    try:
        import torch
        if not torch.cuda.is_available():
            return _watch
    except ImportError:
        return _watch
    return _watch.start()


def current() -> GraphWatch | None:
    """The process's watch, if one was ever made (what a recording reads its captures from)."""
    return _watch
