"""Collectives of one rank: which ones ran, how many bytes, which algorithm, what bandwidth.

Two kinds of record hold them:

- NCCL (and RCCL) kernels, on the GPU. The name says the collective, reduction, data type,
  algorithm and protocol (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``); torch also writes the
  metadata of the call on the kernel and on its ``record_param_comms`` op (``Collective name``,
  ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group Name``),
  which the reader keeps in the ``comm`` column.
- Host-side calls of the other backends (gloo, MPI, UCC): the ``gloo:all_reduce`` annotation
  spans the call on the backend's worker thread, with its input shapes and types. A gloo call
  on CUDA tensors also waits for the tensor's stream and stages through host memory, so its
  span is longer than the transfer.

Bandwidth follows nccl-tests (its doc/PERFORMANCE.md): ``algbw = bytes / time`` with bytes the
larger of the input and output buffer, and ``busbw = algbw * factor`` with the factor of the
collective (``2(n-1)/n`` for AllReduce, ``(n-1)/n`` for AllGather, ReduceScatter and AllToAll,
``1`` for Broadcast, Reduce and point-to-point), which makes busbw comparable with the link's
rate whatever the collective and the group size.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

# The collectives' names in one vocabulary (NCCL's), from torch's names for them.
KINDS = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AllToAll", "SendRecv",
         "Send", "Recv", "Gather", "Scatter", "Barrier")
_TORCH_KINDS = {
    "allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
    "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AllToAll", "alltoallv": "AllToAll",
    "send": "Send", "recv": "Recv", "sendrecv": "SendRecv", "gather": "Gather", "scatter": "Scatter",
    "barrier": "Barrier", "allgatherv": "AllGather",
}
# Bus bandwidth factors (nccl-tests doc/PERFORMANCE.md), by kind, for a group of n ranks.
_BUS_FACTOR = {
    "AllReduce": lambda n: 2 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
    "ReduceScatter": lambda n: (n - 1) / n, "AllToAll": lambda n: (n - 1) / n,
    "Gather": lambda n: (n - 1) / n, "Scatter": lambda n: (n - 1) / n,
    "Broadcast": lambda n: 1.0, "Reduce": lambda n: 1.0, "Send": lambda n: 1.0,
    "Recv": lambda n: 1.0, "SendRecv": lambda n: 1.0,
}
# Bytes per element, by the names torch (c10::ScalarType, record_param_comms' dtype), the
# profiler's input types (C++ type names) and NCCL kernel names use.
DTYPE_BYTES = {
    "float": 4, "float32": 4, "f32": 4, "double": 8, "float64": 8, "f64": 8, "half": 2,
    "float16": 2, "f16": 2, "c10::half": 2, "bfloat16": 2, "bf16": 2, "c10::bfloat16": 2,
    "long": 8, "long int": 8, "int64": 8, "i64": 8, "u64": 8, "uint64": 8, "int": 4, "int32": 4,
    "i32": 4, "u32": 4, "uint32": 4, "short": 2, "short int": 2, "int16": 2, "uint16": 2,
    "char": 1, "signed char": 1, "int8": 1, "i8": 1, "byte": 1, "unsigned char": 1, "uint8": 1,
    "u8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1,
    "complexfloat": 8, "complexdouble": 16, "complexhalf": 4,
}
ALGORITHMS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT")
PROTOCOLS = ("LL128", "LL", "SIMPLE")
_NCCL_KERNEL = re.compile(r"^(?:void )?(?:nccl|rccl)(Sym)?(?:Dev)?Kernel_(\w+?)(?:\(|<|$)")
_HOST_CALL = re.compile(r"^(gloo|nccl|mpi|ucc|xccl):(\w+)$")
_ALGO = re.compile(r"(?:^|_)(" + "|".join(ALGORITHMS) + r")(?=_|$)")
_PROTO = re.compile(r"_(" + "|".join(PROTOCOLS) + r")(?=_|$)")
_DTYPE_TOKEN = re.compile(r"_(bf16|f8e4m3|f8e5m2|f16|f32|f64|i8|u8|i32|u32|i64|u64|float|half|double|"
                          r"bfloat16|int8|uint8|int32|uint32|int64|uint64)(?=_|$)", re.I)

COLUMNS = ["kind", "backend", "source", "name", "start_us", "duration_us", "end_us", "launch_us", "stream", "tid",
           "dtype", "elem_bytes", "in_nelems", "out_nelems", "bytes", "group_size", "process_group",
           "seq", "algorithm", "protocol", "algbw_gbps", "busbw_factor", "busbw_gbps"]


def collective_kind(name) -> str | None:
    """The collective a torch name or an NCCL kernel name stands for, in NCCL's words.

    >>> collective_kind("all_reduce"), collective_kind("_reduce_scatter_base"), collective_kind("allgather_into_tensor_coalesced")
    ('AllReduce', 'ReduceScatter', 'AllGather')
    >>> collective_kind("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    'AllGather'
    """
    if not isinstance(name, str) or not name:
        return None
    k = parse_nccl_kernel(name)
    if k is not None:
        return k["kind"]
    n = name.lower().lstrip("_")
    for suffix in ("_coalesced", "_into_tensor", "_tensor", "_base"):
        n = n.replace(suffix, "")
    return _TORCH_KINDS.get(n.replace("_", ""))


def parse_nccl_kernel(name) -> dict | None:
    """Collective, reduction, data type, algorithm and protocol of an NCCL kernel, from its name
    (both NCCL 2.19+'s ``ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>`` and the older
    ``ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<type>``); None for other kernels.

    >>> k = parse_nccl_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    >>> k["kind"], k["dtype"], k["algorithm"], k["protocol"]
    ('AllReduce', 'bf16', 'RING', 'LL')
    >>> parse_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")["dtype"]
    'float'
    >>> parse_nccl_kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)")["kind"]
    'SendRecv'
    """
    if not isinstance(name, str):
        return None
    m = _NCCL_KERNEL.match(name)
    if not m:
        return None
    body = m.group(2)
    head = body.split("_", 1)[0]
    kind = {"AllGatherV": "AllGather", "AlltoAll": "AllToAll"}.get(head, head)
    if kind not in KINDS:
        kind = collective_kind(head) or head
    algo = _ALGO.search(body)
    proto = _PROTO.search(body)
    dtype = _DTYPE_TOKEN.search(body)
    return {"kind": kind, "algorithm": algo.group(1) if algo else ("symmetric" if m.group(1) else None),
            "protocol": proto.group(1) if proto else None, "dtype": dtype.group(1) if dtype else None}


def elem_bytes(dtype) -> int | None:
    """Bytes per element of a data type as torch, the profiler or NCCL names it.

    >>> elem_bytes("BFloat16"), elem_bytes("float"), elem_bytes("f32"), elem_bytes("c10::Half")
    (2, 4, 4, 2)
    """
    return DTYPE_BYTES.get(dtype.strip().lower()) if isinstance(dtype, str) else None


def bus_factor(kind, group_size) -> float | None:
    """nccl-tests' bus bandwidth factor of a collective over ``group_size`` ranks.

    >>> bus_factor("AllReduce", 8), bus_factor("AllGather", 4), bus_factor("Broadcast", 2)
    (1.75, 0.75, 1.0)
    """
    f = _BUS_FACTOR.get(kind)
    n = group_size
    if f is None or not isinstance(n, (int, np.integer)) or n < 1:
        return None
    return float(f(int(n)))


def collectives(rep, group_size=None) -> pd.DataFrame:
    """One row per collective call of one rank (:data:`COLUMNS`), in time order.

    ``group_size`` is used where the records do not say (a gloo call; the default process
    group's size from the trace header is the default).

    >>> c = collectives(ks.load("ranks/rank1.pt.trace.json.gz"))
    >>> c.groupby("kind")["bytes"].sum()
    kind
    AllReduce    213983232
    Broadcast     12582912
    Name: bytes, dtype: int64
    """
    if group_size is None:
        group_size = _default_group_size(rep.meta)
    k = rep.kernels
    nccl = k[k["name"].map(lambda n: parse_nccl_kernel(n) is not None)] if len(k) else k
    parts = [_kernel_rows(nccl, rep.ops, group_size)] if len(nccl) else []
    ops = rep.ops
    if len(ops):
        m = ops["name"].str.match(_HOST_CALL.pattern).fillna(False).to_numpy(dtype=bool)
        host = ops[m]
        if len(nccl):
            # NCCL's host-side annotations stand for the kernels already counted.
            host = host[~host["name"].str.startswith("nccl:")]
        if len(host):
            parts.append(_host_rows(host, group_size))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    out = pd.concat(parts, ignore_index=True)
    out["end_us"] = out["start_us"] + out["duration_us"]
    size = out["bytes"].astype("float64")
    dur = out["duration_us"].astype("float64")
    # bytes per us is MB/s: / 1e3 gives GB/s.
    out["algbw_gbps"] = np.where((dur > 0) & size.notna(), size / dur.where(dur > 0) / 1e3, np.nan)
    out["busbw_factor"] = [bus_factor(kd, g) for kd, g in zip(out["kind"], out["group_size"])]
    out["busbw_factor"] = out["busbw_factor"].astype("float64")
    out["busbw_gbps"] = out["algbw_gbps"] * out["busbw_factor"]
    return out[COLUMNS].sort_values("start_us", kind="stable").reset_index(drop=True)


def _default_group_size(meta) -> int | None:
    d = meta.get("distributed") if isinstance(meta, dict) else None
    if not isinstance(d, dict):
        return None
    for pg in d.get("process_groups") or []:
        if pg.get("desc") == "default_pg" and pg.get("size"):
            return pg["size"]
    return d.get("world_size")


def _kernel_rows(k, ops, group_size) -> pd.DataFrame:
    rows = []
    op_comm = ops["comm"].to_numpy() if len(ops) and "comm" in ops.columns else None
    for name, start, dur, launch, stream, comm, op_index in zip(
            k["name"], k["start_us"], k["duration_us"], k["launch_start_us"], k["stream"], k["comm"], k["op_index"]):
        parsed = parse_nccl_kernel(name)
        assert parsed is not None    # collectives() picked these rows by it
        if not isinstance(comm, dict) and op_comm is not None and op_index is not pd.NA:
            c = op_comm[int(op_index)] if 0 <= int(op_index) < len(op_comm) else None
            comm = c if isinstance(c, dict) else None
        comm = comm or {}
        kind = collective_kind(comm.get("collective")) or parsed["kind"]
        dtype = comm.get("dtype") or parsed["dtype"]
        rows.append(_row(kind, "NCCL", "kernel", name, start, dur, stream, None, dtype,
                         comm.get("in_nelems"), comm.get("out_nelems"), comm.get("group_size") or group_size,
                         comm.get("pg_desc") or comm.get("pg_name"), comm.get("seq"),
                         parsed["algorithm"], parsed["protocol"], launch))
    return pd.DataFrame(rows)


def _host_rows(host, group_size) -> pd.DataFrame:
    rows = []
    for name, start, dur, tid, dims, types, comm in zip(
            host["name"], host["start_us"], host["duration_us"], host["tid"], host["input_dims"],
            host["input_types"], host["comm"]):
        m = _HOST_CALL.match(name)
        assert m is not None         # collectives() picked these rows by it
        backend, call = m.groups()
        kind = collective_kind(call) or call
        comm = comm if isinstance(comm, dict) else {}
        n = comm.get("group_size") or group_size
        nel = comm.get("in_nelems")
        if nel is None:
            nel = _numel(dims)
        out_nel = comm.get("out_nelems")
        if out_nel is None and nel is not None:
            out_nel = nel * n if kind == "AllGather" and n else (nel // n if kind == "ReduceScatter" and n else nel)
        dtype = comm.get("dtype") or (types[0] if isinstance(types, list) and types and isinstance(types[0], str) else None)
        rows.append(_row(kind, "NCCL" if backend == "nccl" else backend, "host", name, start, dur, None, tid,
                         dtype, nel, out_nel, n, comm.get("pg_desc") or comm.get("pg_name"), comm.get("seq"),
                         None, None, start))
    return pd.DataFrame(rows)


def _numel(dims) -> int | None:
    """Elements of the first tensor input (a list of sizes; a tensor list is nested once more)."""
    if not isinstance(dims, list) or not dims:
        return None
    first = dims[0]
    if isinstance(first, list) and first and isinstance(first[0], list):
        first = first[0]
    if not isinstance(first, list) or not all(isinstance(x, int) and x >= 0 for x in first):
        return None
    return math.prod(first) if first else 1


def _row(kind, backend, source, name, start, dur, stream, tid, dtype, nel, out_nel, group, pg, seq, algo, proto,
         launch):
    eb = elem_bytes(dtype)
    big = max([x for x in (nel, out_nel) if isinstance(x, int) and x >= 0], default=None)
    return {"kind": kind, "backend": backend, "source": source, "name": name, "start_us": float(start),
            "duration_us": float(dur), "launch_us": float(launch) if launch is not None and launch == launch else float(start),
            "stream": stream, "tid": None if tid is None else str(tid),
            "dtype": dtype, "elem_bytes": eb, "in_nelems": nel, "out_nelems": out_nel,
            "bytes": big * eb if big is not None and eb else None,
            "group_size": group if isinstance(group, int) and not isinstance(group, bool) else None,
            "process_group": pg, "seq": seq, "algorithm": algo, "protocol": proto}
