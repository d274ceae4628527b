"""The Trace: one recording as columnar tables, before any analysis.

Times are microseconds (float64) relative to ``meta["time_origin_ns"]``, the start of the
recorded region, so that every table shares one clock.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

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
    "kernel_backend": "object",
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
    "sequence": "int64", "kernel_backend": "object",
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
DEVICE_COLUMNS = {
    "index": "int64", "name": "object", "device_type": "object",
    "compute_major": "int64", "compute_minor": "int64", "num_sms": "int64",
    "max_threads_per_sm": "int64", "max_threads_per_block": "int64",
    "regs_per_sm": "int64", "regs_per_block": "int64", "warp_size": "int64",
    "smem_per_sm": "int64", "smem_per_block": "int64", "smem_per_block_optin": "int64",
    "total_memory": "int64",
}
TABLES = {
    "kernels": KERNEL_COLUMNS, "copies": COPY_COLUMNS, "runtime": RUNTIME_COLUMNS,
    "ops": OP_COLUMNS, "frames": FRAME_COLUMNS, "syncs": SYNC_COLUMNS,
    "devices": DEVICE_COLUMNS,
}
# Integers use pandas' nullable Int64 so that "not recorded" stays distinct from 0.
_NULLABLE = {"int64": "Int64", "float64": "float64", "bool": "boolean", "object": "object"}


def frame(columns: dict, schema: dict) -> pd.DataFrame:
    """Build a table from column lists, adding missing columns of ``schema`` as empty.

    >>> frame({"name": ["k"]}, {"name": "object", "stream": "int64"}).dtypes["stream"]
    Int64Dtype()
    """
    n = len(next(iter(columns.values()))) if columns else 0
    out = {}
    for col, kind in schema.items():
        values = columns.get(col)
        dtype = _NULLABLE[kind]
        if values is None:
            out[col] = pd.Series([None] * n, dtype=dtype)
        else:
            out[col] = pd.Series(values, dtype=dtype) if kind != "object" else pd.Series(values, dtype=object)
    extra = {k: v for k, v in columns.items() if k not in schema}
    for col, values in extra.items():
        out[col] = pd.Series(values)
    return pd.DataFrame(out)


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

    def tables(self) -> dict:
        """The tables by name, in a fixed order."""
        return {name: getattr(self, name) for name in TABLES}

    @classmethod
    def empty(cls, meta=None) -> "Trace":
        """A trace with every table present and no rows."""
        return cls(**{name: frame({}, schema) for name, schema in TABLES.items()}, meta=dict(meta or {}))
