"""A captured CUDA graph's nodes, read through the CUDA driver API with ctypes (no package).

While a stream captures, each launch adds a node to the graph being built: these functions find
that graph, count its nodes (cheaply, after every op) and, once the capture ends, read what each
node is (kernel name, grid, block, shared memory; memset size; copy) and what it depends on.
Everything degrades to ``None`` where the driver lacks a call.
"""
from __future__ import annotations

import ctypes

# CUgraphNodeType values (cuda.h) and the words the report uses for them.
NODE_KINDS = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty",
              6: "event_wait", 7: "event_record", 8: "semaphore_signal", 9: "semaphore_wait",
              10: "mem_alloc", 11: "mem_free", 12: "batch_mem_op", 13: "conditional"}

_lib = None


class _KernelParams(ctypes.Structure):
    # CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h, 12.0+), padded for fields a later driver adds.
    _fields_ = [("func", ctypes.c_void_p),
                ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p), ("_pad", ctypes.c_char * 64)]


class _MemsetParams(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_uint64), ("pitch", ctypes.c_size_t), ("value", ctypes.c_uint),
                ("element_size", ctypes.c_uint), ("width", ctypes.c_size_t), ("height", ctypes.c_size_t),
                ("_pad", ctypes.c_char * 32)]


def driver():
    """libcuda loaded once (``None`` where there is none: no NVIDIA driver on this machine)."""
    global _lib
    if _lib is None:
        try:
            _lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            _lib = False
    return _lib or None


def _fn(name):
    lib = driver()
    return getattr(lib, name, None) if lib is not None else None


def capturing_graph(stream: int):
    """The graph a capturing stream is building (a handle), or ``None`` when it is not capturing."""
    status, graph, cid = ctypes.c_int(0), ctypes.c_void_p(0), ctypes.c_uint64(0)
    deps, n = ctypes.c_void_p(0), ctypes.c_size_t(0)
    f = _fn("cuStreamGetCaptureInfo_v3")
    if f is not None:
        edges = ctypes.c_void_p(0)
        rc = f(ctypes.c_void_p(stream), ctypes.byref(status), ctypes.byref(cid), ctypes.byref(graph),
               ctypes.byref(deps), ctypes.byref(edges), ctypes.byref(n))
    else:
        f = _fn("cuStreamGetCaptureInfo_v2")
        if f is None:
            return None
        rc = f(ctypes.c_void_p(stream), ctypes.byref(status), ctypes.byref(cid), ctypes.byref(graph),
               ctypes.byref(deps), ctypes.byref(n))
    # CU_STREAM_CAPTURE_STATUS_ACTIVE is 1.
    return graph.value if rc == 0 and status.value == 1 and graph.value else None


def node_count(graph) -> int:
    """How many nodes the graph has now (-1 if the driver cannot say)."""
    n = ctypes.c_size_t(0)
    f = _fn("cuGraphGetNodes")
    if f is None or f(ctypes.c_void_p(graph), None, ctypes.byref(n)) != 0:
        return -1
    return int(n.value)


def nodes(graph) -> list:
    """The graph's node handles, in the driver's order (the order they were added)."""
    n = node_count(graph)
    if n <= 0:
        return []
    arr = (ctypes.c_void_p * n)()
    m = ctypes.c_size_t(n)
    if _fn("cuGraphGetNodes")(ctypes.c_void_p(graph), arr, ctypes.byref(m)) != 0:
        return []
    return [arr[i] for i in range(int(m.value))]


def _name(params: _KernelParams):
    out = ctypes.c_char_p()
    for handle, call in ((params.func, "cuFuncGetName"), (params.kern, "cuKernelGetName")):
        f = _fn(call)
        if handle and f is not None and f(ctypes.byref(out), ctypes.c_void_p(handle)) == 0 and out.value:
            return out.value.decode("utf-8", "replace")
    return None


def _deps(node, index: dict) -> list:
    # The _v2 call also reads edges that carry data (ports, programmatic launches), which the
    # first version refuses to list (CUDA_ERROR_LOSSY_QUERY): a node would look like a root.
    f2, f = _fn("cuGraphNodeGetDependencies_v2"), _fn("cuGraphNodeGetDependencies")
    n = ctypes.c_size_t(0)
    if f2 is not None:
        if f2(ctypes.c_void_p(node), None, None, ctypes.byref(n)) != 0 or not n.value:
            return []
        arr, edges = (ctypes.c_void_p * n.value)(), (ctypes.c_uint64 * n.value)()
        rc = f2(ctypes.c_void_p(node), arr, edges, ctypes.byref(n))
    elif f is not None:
        if f(ctypes.c_void_p(node), None, ctypes.byref(n)) != 0 or not n.value:
            return []
        arr = (ctypes.c_void_p * n.value)()
        rc = f(ctypes.c_void_p(node), arr, ctypes.byref(n))
    else:
        return []
    return sorted(index[a] for a in arr[:n.value] if a in index) if rc == 0 else []


def describe(node, index: dict) -> dict:
    """What one node is: ``kind``, and for a kernel its mangled ``name``, ``grid``, ``block`` and
    ``smem``; for a memset its ``bytes``; ``deps``: the indices of the nodes it waits for."""
    kind = ctypes.c_int(-1)
    f = _fn("cuGraphNodeGetType")
    if f is None or f(ctypes.c_void_p(node), ctypes.byref(kind)) != 0:
        return {"kind": "unknown", "deps": []}
    out: dict = {"kind": NODE_KINDS.get(kind.value, f"type {kind.value}")}
    if kind.value == 0:
        p = _KernelParams()
        g = _fn("cuGraphKernelNodeGetParams_v2") or _fn("cuGraphKernelNodeGetParams")
        if g is not None and g(ctypes.c_void_p(node), ctypes.byref(p)) == 0:
            out.update(name=_name(p), grid=list(p.grid), block=list(p.block), smem=int(p.smem))
    elif kind.value == 2:
        p = _MemsetParams()
        g = _fn("cuGraphMemsetNodeGetParams")
        if g is not None and g(ctypes.c_void_p(node), ctypes.byref(p)) == 0:
            out["bytes"] = int(p.width) * int(p.element_size) * max(int(p.height), 1)
    out["deps"] = _deps(node, index)
    return out


def exec_id(graph_exec) -> int | None:
    """The id CUPTI gives the instantiated graph (``graph id`` of its kernels), where the driver
    has ``cuGraphExecGetId`` (CUDA 13.1+); else ``None``."""
    f = _fn("cuGraphExecGetId")
    out = ctypes.c_uint(0)
    if f is None or not graph_exec or f(ctypes.c_void_p(graph_exec), ctypes.byref(out)) != 0:
        return None
    return int(out.value)
