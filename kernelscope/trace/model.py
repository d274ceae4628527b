"""The Trace: one recording as columnar tables, before any analysis.

Times are microseconds (float64) relative to ``meta["time_origin_ns"]``, the start of the
recorded region, so that every table shares one clock.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported where a table is made: the reader's worker processes (split.py) build
# typed columns with numpy alone (int_column, float_column), and start faster without it.

# Columns of each table, in order. Readers must produce at least these (empty tables too),
# so that analysis never has to ask whether a column exists.
KERNEL_COLUMNS = {
    "name": "object", "device_index": "int64", "stream": "int64",
    "start_us": "float64", "duration_us": "float64", "correlation": "int64",
    "external_id": "int64",
    "grid_x": "int64", "grid_y": "int64", "grid_z": "int64",
    "block_x": "int64", "block_y": "int64", "block_z": "int64",
    "registers_per_thread": "int64", "shared_mem_bytes": "int64",
    "kineto_est_occupancy": "float64",
    "launch_api": "object", "launch_start_us": "float64", "launch_duration_us": "float64",
    "launch_tid": "object", "graph_launch": "bool",
    "op": "object", "op_index": "int64", "source": "object",
    "kernel_backend": "object", "comm": "object",
}
COPY_COLUMNS = {
    "kind": "object", "name": "object", "copy_kind": "object",
    "src_memory": "object", "dst_memory": "object",
    "device_index": "int64", "stream": "int64", "start_us": "float64",
    "duration_us": "float64", "bytes": "int64", "bandwidth_gbps": "float64",
    "correlation": "int64", "external_id": "int64",
    "launch_api": "object", "launch_start_us": "float64", "launch_duration_us": "float64",
    "launch_tid": "object", "op": "object", "op_index": "int64",
}
RUNTIME_COLUMNS = {
    "name": "object", "cat": "object", "pid": "object", "tid": "object",
    "start_us": "float64", "duration_us": "float64", "correlation": "int64",
    "external_id": "int64", "cbid": "int64",
}
OP_COLUMNS = {
    "name": "object", "cat": "object", "pid": "object", "tid": "object",
    "start_us": "float64", "duration_us": "float64", "external_id": "int64",
    "input_dims": "object", "input_types": "object", "flops": "float64",
    "sequence": "int64", "kernel_backend": "object", "comm": "object",
    # Inductor's launch events' knobs of the kernel they launch (kernelscope.analysis.producers).
    "num_warps": "int64", "num_stages": "int64", "kernel_kwargs": "object", "kernel_hash": "object",
}
FRAME_COLUMNS = {
    "name": "object", "tid": "object", "start_us": "float64", "duration_us": "float64",
    "python_id": "int64", "parent_id": "int64",
}
SYNC_COLUMNS = {
    "name": "object", "kind": "object", "tid": "object", "start_us": "float64",
    "duration_us": "float64", "correlation": "int64", "external_id": "int64",
    "op": "object", "stream": "int64", "device_index": "int64",
}
# The allocator's events (torch.profiler's profile_memory "[memory]" instant events), one row per
# allocation (``bytes`` > 0) or free (< 0): ``address`` of the block, the allocator's totals after
# it, the device (``device_type``: torch's DeviceType, 0 CPU, 1 CUDA), and the CPU op on that
# thread whose range holds it (``op``, ``op_index``) with its Python line (``source``); an
# instant: ``duration_us`` is 0.
MEMORY_COLUMNS = {
    "name": "object", "device_type": "int64", "device_index": "int64", "tid": "object",
    "start_us": "float64", "duration_us": "float64", "bytes": "int64", "address": "int64",
    "total_allocated": "int64", "total_reserved": "int64",
    "op": "object", "op_index": "int64", "source": "object",
}
DEVICE_COLUMNS = {
    "index": "int64", "name": "object", "device_type": "object",
    "compute_major": "int64", "compute_minor": "int64", "num_sms": "int64",
    "max_threads_per_sm": "int64", "max_threads_per_block": "int64",
    "regs_per_sm": "int64", "regs_per_block": "int64", "warp_size": "int64",
    "smem_per_sm": "int64", "smem_per_block": "int64", "smem_per_block_optin": "int64",
    "total_memory": "int64",
}
# Hardware-counter samples (kernelscope.trace.counters): one row per PM sample; raw metrics
# follow as extra columns named by their CUPTI metric.
COUNTER_COLUMNS = {
    "device_index": "int64", "start_us": "float64", "duration_us": "float64",
    "sm_active_pct": "float64", "tensor_pct": "float64", "dram_pct": "float64", "dram_gbps": "float64",
}
# Warp-stall samples (kernelscope.analysis.stalls.stall_shares), per launch (``launch``: its ncu id)
# or per kernel name (Proton); one share column per reason follows as extra columns.
STALL_COLUMNS = {
    "name": "object", "launch": "int64", "source": "object", "samples": "float64", "top_stall": "object",
    "launches": "int64",
}
# Autotuning candidates seen in the process while the region ran (kernelscope.capture.tuning):
# one row per candidate of each tuning (``tuning`` numbers them), ``cached`` where it was measured
# before the region. Times are the tuner's own (ms).
AUTOTUNE_COLUMNS = {
    "kernel": "object", "producer": "object", "tuner": "object", "tuning": "int64", "op": "object",
    "shape_key": "object", "choice": "object", "config": "object", "description": "object",
    "num_warps": "int64", "num_stages": "int64", "num_ctas": "int64",
    "p50_ms": "float64", "p20_ms": "float64", "p80_ms": "float64",
    "registers": "int64", "spills": "int64", "shared_mem_bytes": "int64",
    "resources_source": "object",
    "winner": "bool", "cached": "bool", "note": "object",
    # Inductor's choices: the profiler range its benchmark ran in, the compiled kernels that run the winner
    "benchmark_range": "object", "compiled_kernel": "object",
}
# Compiled kernels the process held (Triton's device caches, Inductor's launchers): what a
# launch's name, block, registers and shared memory identify (kernelscope.analysis.producers).
VARIANT_COLUMNS = {
    "name": "object", "function": "object", "producer": "object", "config": "object",
    "num_warps": "int64", "num_stages": "int64", "num_ctas": "int64",
    "registers": "int64", "spills": "int64", "shared_mem_bytes": "int64",
    "hash": "object", "source": "object", "source_ops": "object", "device_index": "int64",
    # What the rules read of a compiled kernel's code and first launch (capture/tuning/variants):
    # its global loads by width (PTX ``ld.global`` with and without ``.v2``/``.v4``), whether it
    # uses the tensor cores (``mma``/``wgmma``), and the bytes of the tensors its function was
    # first launched with in the region (what a memory-bound launch must at least move).
    "loads_scalar": "int64", "loads_vector": "int64", "tensor_core": "object", "arg_bytes": "int64",
}
# A TensorRT engine's layers, from its inspector JSON (``ks.load(..., tensorrt_layers=path)``,
# kernelscope.trace.tensorrt): one row per layer in the engine's order, its tactic (the kernel it
# runs) where the engine was built with detailed profiling verbosity.
TENSORRT_LAYER_COLUMNS = {
    "index": "int64", "name": "object", "layer_type": "object", "tactic": "object",
    "tactic_value": "object", "source": "object",
}
TABLES = {
    "kernels": KERNEL_COLUMNS, "copies": COPY_COLUMNS, "runtime": RUNTIME_COLUMNS,
    "ops": OP_COLUMNS, "frames": FRAME_COLUMNS, "syncs": SYNC_COLUMNS,
    "devices": DEVICE_COLUMNS, "counters": COUNTER_COLUMNS, "stalls": STALL_COLUMNS,
    "autotune": AUTOTUNE_COLUMNS, "variants": VARIANT_COLUMNS, "tensorrt_layers": TENSORRT_LAYER_COLUMNS,
    "memory": MEMORY_COLUMNS,
}
# Integers use pandas' nullable Int64 so that "not recorded" stays distinct from 0.

# Host-blocking synchronization calls, by runtime/driver API name, and the kind of each: the
# host calls of the ``syncs`` table (the rest of it are GPU-side sync records).
SYNC_CALLS = {
    "cudaDeviceSynchronize": "device", "cudaStreamSynchronize": "stream",
    "cudaEventSynchronize": "event", "cuCtxSynchronize": "device",
    "cuStreamSynchronize": "stream", "cuEventSynchronize": "event",
    "hipDeviceSynchronize": "device", "hipStreamSynchronize": "stream",
    "hipEventSynchronize": "event",
}
# Launch calls that replay a CUDA graph (``graph_launch`` of the kernels they launched).
GRAPH_LAUNCH_CALLS = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
# Calls that open and close a stream capture: launches between them on that thread build a
# graph's nodes and run nothing, so they have no kernel of their own.
CAPTURE_BEGIN_CALLS = ("cudaStreamBeginCapture", "cudaStreamBeginCaptureToGraph", "cuStreamBeginCapture",
                       "cuStreamBeginCapture_v2", "cuStreamBeginCaptureToGraph", "hipStreamBeginCapture")
CAPTURE_END_CALLS = ("cudaStreamEndCapture", "cuStreamEndCapture", "hipStreamEndCapture")


def frame(columns: dict, schema: dict) -> pd.DataFrame:
    """Build a table from column lists, adding missing columns of ``schema`` as empty.

    >>> frame({"name": ["k"]}, {"name": "object", "stream": "int64"}).dtypes["stream"]
    Int64Dtype()
    """
    import pandas as pd
    n = len(next(iter(columns.values()))) if columns else 0
    out = {}
    for col, kind in schema.items():
        values = columns.get(col)
        out[col] = _column([None] * n if values is None else values, kind)
    for col, values in columns.items():
        if col not in schema:
            out[col] = pd.Series(values)
    return pd.DataFrame(out, copy=False)


_EXACT_FLOAT_INT = 2.0 ** 53


def _column(values, kind):
    """A typed column from a list that may hold None (missing)."""
    import pandas as pd
    if kind == "object":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        # Explicit object dtype: pandas 3 would otherwise infer (slowly) its Arrow string dtype.
        return pd.Series(arr, dtype=object, copy=False)
    if kind == "float64":
        return float_column(values)
    if kind == "bool":
        return pd.array(values, dtype="boolean")
    return pd.arrays.IntegerArray(*int_column(values))


def float_column(values) -> np.ndarray:
    """A float64 column from a list that may hold None (NaN).

    >>> float_column([1, None]).tolist()
    [1.0, nan]
    """
    # None becomes NaN; building through numpy is several times faster than pandas' casts.
    if isinstance(values, list) and values and values[0] is None and values.count(None) == len(values):
        return np.full(len(values), np.nan)    # not recorded: no per-value conversion
    return np.array(values, dtype=np.float64)


def float_values(col: pd.Series) -> np.ndarray:
    """A table column's numbers as float64, NaN where missing or not a number: what
    ``pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)`` gives, without
    its pass over a column that is numeric already (a few ms a million rows, at every use).

    >>> float_values(pd.Series([1, None, 3], dtype="Int64")).tolist(), float_values(pd.Series(["2", "x"])).tolist()
    ([1.0, nan, 3.0], [2.0, nan])
    """
    import pandas as pd
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan)
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def int_column(values) -> tuple:
    """``(values, missing)`` of a nullable integer column (pandas' IntegerArray holds the two)
    from a list that may hold None; values that are not integers or do not fit in int64 (a
    hostile file's) count as missing.

    >>> [a.tolist() for a in int_column([3, None, 2 ** 70])]
    [[3, 0, 0], [False, True, True]]
    """
    try:
        if isinstance(values, np.ndarray) and values.dtype.kind == "i":
            return values.astype(np.int64, copy=False), np.zeros(len(values), bool)
        if not isinstance(values, list):
            values = list(values)
        n = len(values)
        # The common case first: every value an integer (fromiter stops at the first that is
        # not, where numpy's array() of a list holding None costs several times a full pass).
        if n and values[0] is not None:
            try:
                return np.fromiter(values, np.int64, n), np.zeros(n, bool)
            except TypeError:
                pass    # a None (or not a number): the paths below
            except (ValueError, OverflowError):
                if None not in values:
                    raise    # not integers, or too large: the exact path (below)
        missing = values.count(None)
        if missing == n:
            return np.zeros(n, np.int64), np.ones(n, bool)
        # Through float64 (None -> NaN, in C): exact for integers below 2**53, which ids,
        # counts and sizes are; larger ones take the exact path below.
        f = np.array(values, dtype=np.float64)
        mask = np.isnan(f)
        if np.abs(f[~mask]).max() < _EXACT_FLOAT_INT:
            data = np.where(mask, 0.0, f).astype(np.int64)
        else:
            filled = np.empty(n, dtype=object)
            filled[:] = values
            filled[mask] = 0
            data = np.array(filled.tolist(), dtype=np.int64)
        return data, mask
    except (OverflowError, TypeError, ValueError):
        # Out-of-range or non-integer values from a hostile file: keep what fits, drop the rest.
        ok = [isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 for v in values]
        return (np.array([v if k else 0 for v, k in zip(values, ok)], dtype=np.int64),
                ~np.array(ok, dtype=bool))


@dataclass
class Trace:
    """One recording as tables. Build it with a reader (``kernelscope.trace.kineto``)."""

    kernels: pd.DataFrame
    copies: pd.DataFrame
    runtime: pd.DataFrame
    ops: pd.DataFrame
    frames: pd.DataFrame
    syncs: pd.DataFrame
    devices: pd.DataFrame
    meta: dict = field(default_factory=dict)
    # Optional tables: readers that know nothing of counters or stalls leave them empty.
    counters: pd.DataFrame = field(default_factory=lambda: frame({}, COUNTER_COLUMNS))
    stalls: pd.DataFrame = field(default_factory=lambda: frame({}, STALL_COLUMNS))
    autotune: pd.DataFrame = field(default_factory=lambda: frame({}, AUTOTUNE_COLUMNS))
    variants: pd.DataFrame = field(default_factory=lambda: frame({}, VARIANT_COLUMNS))
    tensorrt_layers: pd.DataFrame = field(default_factory=lambda: frame({}, TENSORRT_LAYER_COLUMNS))
    memory: pd.DataFrame = field(default_factory=lambda: frame({}, MEMORY_COLUMNS))

    def tables(self) -> dict:
        """The tables by name, in a fixed order."""
        return {name: getattr(self, name) for name in TABLES}

    @classmethod
    def empty(cls, meta=None) -> Trace:
        """A trace with every table present and no rows."""
        return cls(**{name: frame({}, schema) for name, schema in TABLES.items()}, meta=dict(meta or {}))
