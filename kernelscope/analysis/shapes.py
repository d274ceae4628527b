"""The launch-shapes table: each distinct launch shape once, with its occupancy and advice.

A launch shape is what the occupancy calculator reads: device, block (x, y, z), registers per
thread and shared memory per block. A 100k-launch trace has a few hundred. The calculator runs
once per shape; ``Report.kernels`` gets its columns through the ``shape`` code (the shape's row
here), and every view reads this table: the kernel table's occupancy column, the details panel's
breakdown and advice (``Occupancy.next_steps``) and its occupancy curves.

>>> rep = ks.load("mlp_train.pt.trace.json.gz")
>>> rep.shapes[["threads_per_block", "registers_per_thread", "theoretical_occupancy"]].head(3)
   threads_per_block  registers_per_thread  theoretical_occupancy
0                128                    32                 1.0000
1                384                   168                 0.1875
2                384                   168                 0.1875
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.archs import arch
from kernelscope.analysis.occupancy import UNLIMITED, occupancy, occupancy_curves, with_device

# The columns of a kernels table that make a launch shape, in the order of the code.
SHAPE_KEY = ("device_index", "block_x", "block_y", "block_z", "registers_per_thread", "shared_mem_bytes")
# The shared-memory carveout the driver chose, where Nsight Compute measured it (its "Shared Memory
# Configuration Size", merged as this column): part of the shape then, so that our block limits
# are Nsight Compute's (one shared-memory block limit per launch, in every panel).
CARVEOUT = "ncu_shared_memory_configuration_size_bytes"
# The launch-shapes table's columns (one row per shape; ``shape`` is the row's code).
SHAPE_COLUMNS = {
    "shape": "int64", "device_index": "Int64", "block_x": "Int64", "block_y": "Int64", "block_z": "Int64",
    "threads_per_block": "Int64", "registers_per_thread": "Int64", "shared_mem_bytes": "Int64",
    "shared_mem_config_bytes": "Int64",
    "compute_major": "Int64", "compute_minor": "Int64", "num_sms": "Int64",
    "launches": "int64", "total_us": "float64",
    "theoretical_occupancy": "float64", "occupancy_limiter": "object", "limiters": "object",
    "active_blocks_per_sm": "Int64", "block_limit_registers": "Int64", "block_limit_shared_mem": "Int64",
    "block_limit_warps": "Int64", "block_limit_blocks": "Int64", "block_limit_barriers": "Int64",
    "reason": "object", "advice": "object",
}


def shape_codes(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(code per launch, one row of :data:`SHAPE_KEY` values per code): codes number the
    distinct shapes in order of first launch; a missing or negative value is -1.

    >>> k = pd.DataFrame({c: [0, 0, 0] for c in SHAPE_KEY}).assign(block_x=[128, 256, 128])
    >>> shape_codes(k)[0].tolist()
    [0, 1, 0]
    """
    n = len(kernels)
    key = SHAPE_KEY + ((CARVEOUT,) if CARVEOUT in kernels.columns else ())
    if not n or not all(c in kernels.columns for c in SHAPE_KEY):
        return np.zeros(n, dtype=np.int64), np.full((1 if n else 0, len(key)), -1, dtype=np.int64)
    # missing values become -1, which no launch has (negative sizes are not modelled)
    arr = np.column_stack([pd.to_numeric(kernels[c], errors="coerce").astype("float64")
                           .to_numpy(na_value=np.nan) for c in key])
    arr = np.where(np.isfinite(arr) & (np.abs(arr) < 2**62), arr, -1).astype(np.int64)
    # one hash factorize per column, combined into one code per launch shape
    combined = np.zeros(n, dtype=np.int64)
    for j in range(arr.shape[1]):
        cj, uj = pd.factorize(arr[:, j])
        combined = pd.factorize(combined * len(uj) + cj)[0]    # stays below n
    _, first = np.unique(combined, return_index=True)
    return combined.astype(np.int64), arr[first]


def _devices(devices: pd.DataFrame) -> dict:
    """{index: (compute capability, properties row, SMs)} of the devices the calculator models."""
    out = {}
    for row in devices.to_dict("records") if devices is not None and len(devices) else []:
        idx = row.get("index")
        if idx is None or idx is pd.NA:
            continue
        try:
            cc = (int(row["compute_major"]), int(row["compute_minor"]))
            with_device(arch(cc), row)
        except (TypeError, ValueError):
            continue    # not a CUDA device we can model (ROCm, unknown cc): occupancy unknown
        sms = row.get("num_sms")
        out[int(idx)] = (cc, row, None if sms is None or sms is pd.NA else int(sms))
    return out


def modelled_devices(devices: pd.DataFrame) -> dict:
    """{device index: (compute capability, properties row, SMs)} of the recorded devices the
    occupancy calculator models (CUDA devices of a known compute capability).

    >>> modelled_devices(ks.load("mlp_train.pt.trace.json.gz").devices)[0][0]   # doctest: +SKIP
    (9, 0)
    """
    return _devices(devices)


def _occupancy_of(key, dev):
    d, bx, by, bz, regs, smem = key[:6]
    config = key[6] if len(key) > 6 and key[6] > 0 else None    # the carveout ncu measured
    if any(v < 0 for v in key[:6]) or int(d) not in dev:
        return None
    cc, row, _ = dev[int(d)]
    try:
        return occupancy(cc, (int(bx), int(by), int(bz)), int(regs), int(smem), device=row,
                         shared_mem_config_bytes=None if config is None else int(config))
    except ValueError:      # a damaged trace's sizes: no occupancy rather than no report
        return None


def launch_shapes(kernels: pd.DataFrame, devices: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """(the ``shape`` code of each launch, the launch-shapes table: one row per code).

    Table columns (:data:`SHAPE_COLUMNS`): the shape, its device's compute capability and SMs,
    ``launches`` and ``total_us`` (its launches' summed duration), and the calculator's answer:
    ``theoretical_occupancy``, ``occupancy_limiter``, ``limiters``, ``active_blocks_per_sm``,
    the ``block_limit_*``, ``reason`` (why a launch is impossible) and ``advice`` (the texts of
    :meth:`~kernelscope.analysis.occupancy.Occupancy.next_steps`). Unknown where the device or
    the launch parameters are not recorded.

    >>> codes, shapes = launch_shapes(rep.trace.kernels, rep.devices)
    """
    codes, keys = shape_codes(kernels)
    dev = _devices(devices)
    m = len(keys)
    cols: dict[str, list] = {c: [None] * m for c in SHAPE_COLUMNS}
    cols["shape"] = list(range(m))
    dur = kernels["duration_us"].astype(float).to_numpy() if m else np.zeros(0)
    cols["launches"] = np.bincount(codes, minlength=m).tolist() if m else []
    cols["total_us"] = np.bincount(codes, weights=np.nan_to_num(dur), minlength=m).tolist() if m else []
    for j, key in enumerate(keys.tolist()):
        for c, v in zip(SHAPE_KEY, key):
            cols[c][j] = None if v < 0 else v
        if len(key) > len(SHAPE_KEY) and key[len(SHAPE_KEY)] > 0:
            cols["shared_mem_config_bytes"][j] = key[len(SHAPE_KEY)]
        bx, by, bz = key[1:4]
        if min(bx, by, bz) >= 0 and bx * by * bz < 2**62:     # hostile sizes stay unknown
            cols["threads_per_block"][j] = bx * by * bz
        if key[0] >= 0 and key[0] in dev:
            (major, minor), _, sms = dev[key[0]]
            cols["compute_major"][j], cols["compute_minor"][j], cols["num_sms"][j] = major, minor, sms
        o = _occupancy_of(key, dev)
        if o is None:
            continue
        cols["theoretical_occupancy"][j] = o.occupancy
        cols["occupancy_limiter"][j] = o.limiter
        cols["limiters"][j] = tuple(o.limiters)
        cols["active_blocks_per_sm"][j] = o.active_blocks_per_sm
        cols["block_limit_registers"][j] = min(o.block_limit_registers, UNLIMITED)
        cols["block_limit_shared_mem"][j] = min(o.block_limit_shared_mem, UNLIMITED)
        cols["block_limit_warps"][j] = o.block_limit_warps
        cols["block_limit_blocks"][j] = o.block_limit_blocks
        cols["block_limit_barriers"][j] = o.block_limit_barriers
        cols["reason"][j] = o.reason
        cols["advice"][j] = o.advice()
    table = pd.DataFrame({c: _column(cols[c], kind) for c, kind in SHAPE_COLUMNS.items()})
    return codes, table


def _column(values, kind):
    if kind == "object":
        return pd.Series(values, dtype=object)
    if kind == "float64":
        return pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    return pd.Series(pd.array(values, dtype=kind))


def shape_curves(shape: dict, devices: pd.DataFrame) -> pd.DataFrame | None:
    """Occupancy curves (:func:`~kernelscope.analysis.occupancy.occupancy_curves`) of one row
    of the launch-shapes table, on its recorded device; None where occupancy is unknown.

    >>> shape_curves(rep.shapes.iloc[0].to_dict(), rep.devices)[["vary", "value", "occupancy"]].head(3)
                    vary  value  occupancy
    0  threads_per_block     32     0.5000
    1  threads_per_block     64     1.0000
    2  threads_per_block     96     0.9844
    """
    if shape.get("theoretical_occupancy") is None or shape["theoretical_occupancy"] != shape["theoretical_occupancy"]:
        return None
    dev = _devices(devices).get(int(shape["device_index"]))
    if dev is None:
        return None
    cc, row, _ = dev
    try:
        # The calculator's carveout, not the one ncu saw: at another shared-memory size the
        # driver would choose another carveout.
        return occupancy_curves(cc, int(shape["threads_per_block"]), int(shape["registers_per_thread"]),
                                int(shape["shared_mem_bytes"]), device=row)
    except ValueError:
        return None


# -- a report's kernels -------------------------------------------------------------------
ANNOTATION_COLUMNS = ("theoretical_occupancy", "occupancy_limiter", "waves", "active_blocks_per_sm",
                      "block_limit_registers", "block_limit_shared_mem", "block_limit_warps",
                      "block_limit_blocks")

def annotate_occupancy(kernels: pd.DataFrame, devices: pd.DataFrame, shapes=None) -> pd.DataFrame:
    """Add theoretical occupancy columns to a kernels table (in place; returns it).

    Columns: ``theoretical_occupancy`` (0..1), ``occupancy_limiter`` (e.g. ``"registers"``,
    ``"registers+shared_mem"``), ``waves``, ``active_blocks_per_sm``, the four
    ``block_limit_*`` and ``shape`` (the launch's row in the launch-shapes table,
    :func:`kernelscope.analysis.shapes.launch_shapes`, which computes each distinct shape once;
    pass its result as ``shapes`` if it is already at hand). Each kernel uses its device's
    compute capability and recorded properties (``device_index`` joins ``devices.index``).
    Launches whose device or launch parameters are unknown get NaN / None.

    >>> k = annotate_occupancy(rep.trace.kernels.copy(), rep.devices)
    """
    k = kernels
    codes, table = launch_shapes(k, devices) if shapes is None else shapes
    n = len(k)
    if not n:
        for c in ANNOTATION_COLUMNS:
            k[c] = pd.Series([], dtype=object if c == "occupancy_limiter" else "float64", index=k.index)
        for c in ANNOTATION_COLUMNS[3:]:
            k[c] = k[c].astype("Int64")
        k["shape"] = pd.Series([], dtype="int64", index=k.index)
        return k
    rows = np.asarray(codes)
    k["theoretical_occupancy"] = table["theoretical_occupancy"].to_numpy(float)[rows]
    k["occupancy_limiter"] = table["occupancy_limiter"].to_numpy(object)[rows]
    active = table["active_blocks_per_sm"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)[rows]
    sms = table["num_sms"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)[rows]
    grid = (k["grid_x"].astype("Float64") * k["grid_y"].astype("Float64")
            * k["grid_z"].astype("Float64")).to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = grid / (active * sms)
    k["waves"] = np.where(active > 0, w, np.nan)
    for c in ANNOTATION_COLUMNS[3:]:
        v = table[c].astype("Float64").to_numpy(dtype=float, na_value=np.nan)[rows]
        miss = np.isnan(v)
        k[c] = pd.Series(pd.arrays.IntegerArray(np.where(miss, 0, v).astype(np.int64), miss), index=k.index)
    k["shape"] = rows
    return k
