"""Roofline inputs: achieved FLOP/s and bytes/s of kernels whose CPU op lets us count them.

FLOPs come from the trace when torch.profiler recorded them (``with_flops``), else from the
op's recorded shapes (``record_shapes``) for matrix products (2*M*N*K). Bytes are what the op must
move at least: its tensor inputs read once plus its output written once, from shapes and dtypes.
Both are per CPU op, so an op's kernels are taken together. Peaks come from :mod:`kernelscope.analysis.peaks` (datasheet values).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import by_distinct
from kernelscope.analysis.peaks import attainable, device_peaks

# Bytes per element of the dtype names torch.profiler records in "Input type".
DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
    "long": 8, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}
# Precision of a matrix product by its input dtype (tensor-core peaks in the peaks table).
_MM_PRECISION = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64_tc",
                 "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "signed char": "int8"}
# Matrix products: op name -> index of the first matrix operand in the inputs.
_MATMUL = {"aten::mm": 0, "aten::addmm": 1, "aten::bmm": 0, "aten::baddbmm": 1, "aten::_scaled_mm": 0}
# Element-wise ops whose traffic is inputs + one output of the broadcast shape.
_ELEMENTWISE = {
    "add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "pow", "sigmoid",
    "tanh", "relu", "gelu", "silu", "clamp", "where", "maximum", "minimum", "threshold_backward",
    "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward", "_softmax",
    "_log_softmax", "fill_", "lerp", "addcmul", "addcdiv", "sign", "reciprocal", "sin", "cos",
}
# Ops that store values and compute nothing: bytes (the output written once), no FLOPs. An
# elementwise fill credited with one FLOP per element read 194% of its attainable roof.
_NO_FLOPS = {"fill_", "zero_", "zeros_like", "ones_like", "full_like"}
# Why a point sits above its roof (``roof_note``): counted bytes assume DRAM traffic and counted
# FLOPs assume the precision of the inputs; the measurement cannot beat the hardware.
ABOVE_MEMORY_ROOF = ("above the DRAM roof: its data stayed in L2 or another cache (the bytes counted from "
                     "its shapes assume every byte crosses DRAM); the point is an upper bound on DRAM traffic")
ABOVE_COMPUTE_ROOF = ("above the compute roof of its input precision: the kernel runs a faster path (e.g. "
                      "TF32 or reduced-precision tensor cores for fp32) or the FLOP count overstates its work")

def above_roof_note(bound, roof_share):
    """Why a point at ``roof_share`` of its attainable roof sits above it; None when it does not.

    >>> above_roof_note("memory", 1.96)[:19], above_roof_note("memory", 0.5)
    ('above the DRAM roof', None)
    """
    try:
        share = float(roof_share)
    except (TypeError, ValueError):
        return None
    if not share > 1.0 + 1e-9:
        return None
    return {"memory": ABOVE_MEMORY_ROOF, "compute": ABOVE_COMPUTE_ROOF}.get(bound)


ROOFLINE_COLUMNS = ["op", "op_index", "kernel", "short_name", "device", "precision", "kernels",
                    "duration_us", "flops", "bytes", "flops_source", "intensity",
                    "achieved_tflops", "achieved_gbps", "peak_tflops", "peak_gbps",
                    "attainable_tflops", "roof_share", "bound", "peaks_source", "roof_note"]


def _size(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2 ** 40


def op_counts(name: str, dims, types, trace_flops=None):
    """(flops, bytes, precision, source) of one CPU op from its recorded shapes; None if unknown.

    >>> op_counts("aten::mm", [[512, 1024], [1024, 4096]], ["c10::BFloat16", "c10::BFloat16"])
    (4294967296.0, 13631488.0, 'bf16', 'shapes')
    """
    if not isinstance(name, str) or not isinstance(dims, list) or not isinstance(types, list):
        return None
    # Recorded fields are input: a dtype is a name (not a list), a size a sane whole number.
    types = [t if isinstance(t, str) else None for t in types]
    dims = [d if isinstance(d, list) and all(_size(x) for x in d) else None for d in dims]
    # 0-dim entries are scalars (Python numbers wrapped as CPU tensors): no device traffic.
    tensors = [(d, t) for d, t in zip(dims, types) if d and t in DTYPE_BYTES]
    if not tensors:
        return None
    nbytes = float(sum(math.prod(d) * DTYPE_BYTES[t] for d, t in tensors))
    base = name.split("::")[-1]
    flops, precision = None, None
    if name in _MATMUL:
        i = _MATMUL[name]
        if len(dims) < i + 2 or not isinstance(dims[i], list) or not isinstance(dims[i + 1], list):
            return None
        a, b = dims[i], dims[i + 1]
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            return None
        batch = math.prod(a[:-2]) if len(a) > 2 else 1
        m, k, n = a[-2], a[-1], b[-1]
        flops = 2.0 * batch * m * n * k
        t = types[i] if i < len(types) else ""     # no type recorded: the defaults below
        precision = _MM_PRECISION.get(t)
        nbytes += batch * m * n * DTYPE_BYTES.get(t, 4)
    elif base == "copy_" and len(tensors) == 2:
        pass  # reads src, writes self: exactly the two inputs
    elif base in _NO_FLOPS:
        # Writes its output once (the tensor recorded as input is the one written, not read).
        nbytes = float(max(math.prod(d) * DTYPE_BYTES[t] for d, t in tensors))
    elif base.rstrip("_") in _ELEMENTWISE or base in _ELEMENTWISE:
        try:
            out = np.broadcast_shapes(*[tuple(d) for d, _ in tensors])
        except ValueError:
            return None
        size = max(DTYPE_BYTES[t] for _, t in tensors)
        nbytes += math.prod(out) * size
        flops = float(math.prod(out))  # one operation per output element: an estimate
        precision = "fp64" if any(t == "double" for _, t in tensors) else "fp32"
    else:
        return None
    source = "shapes"
    if trace_flops is not None and trace_flops == trace_flops and trace_flops > 0:
        flops, source = float(trace_flops), "trace"
    return flops, nbytes, precision, source


def roofline(report) -> pd.DataFrame:
    """One row per CPU op instance whose work we can count, with its kernels' total time, then
    one row per launch Nsight Compute measured (``flops_source`` "Nsight Compute").

    ``roof_share`` is achieved FLOP/s over the attainable peak min(peak, intensity x bandwidth);
    ``bound`` says which roof applies. Peaks of counted ops are datasheet values
    (``peaks_source``); measured launches carry the device peaks ncu read at their clocks.

    >>> rl = roofline(ks.load("mlp_train.pt.trace.json.gz"))
    >>> rl[["op", "achieved_tflops", "peak_tflops", "roof_share"]].head(3)
                op  achieved_tflops  peak_tflops  roof_share
    0  aten::copy_              NaN          NaN      0.0039
    1  aten::copy_              NaN          NaN      0.8578
    2  aten::copy_              NaN          NaN      0.3103
    """
    from kernelscope.analysis.ncu_kernels import roofline_rows
    counted = _counted_roofline(report)
    measured = roofline_rows(report)
    if not measured:
        return counted
    m = pd.DataFrame(measured, columns=ROOFLINE_COLUMNS)
    return m if not len(counted) else pd.concat([counted, m], ignore_index=True)


def _counted_roofline(report) -> pd.DataFrame:
    """The counted part of :func:`roofline`: a row per CPU op instance whose work
    :func:`op_counts` can count, with its kernels' time."""
    from kernelscope.analysis.backends import distinct_rows
    k = report.kernels
    ops = report.ops
    if not len(k) or not len(ops):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ROOFLINE_COLUMNS})
    timed = k["op_index"].notna() & k["duration_us"].notna()
    if not timed.any():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ROOFLINE_COLUMNS})
    dev_names = dict(zip(report.devices["index"].tolist(), report.devices["name"].tolist()))
    peaks_of = {i: device_peaks(n) for i, n in dev_names.items()}
    # One aggregation over the two columns it reads, and only the top kernel's columns taken:
    # a large trace has tens of thousands of op instances and hundreds of thousands of kernels.
    agg = k.loc[timed, ["op_index", "duration_us"]].groupby("op_index", sort=False)["duration_us"] \
        .agg(["sum", "size", "idxmax"])
    top_cols = [c for c in ("name", "device_index", "short_name", "device") if c in k.columns]
    tops = k.loc[agg["idxmax"], top_cols]
    i_all = agg.index.to_numpy()
    dur_all = agg["sum"].to_numpy(float)
    ok = (i_all >= 0) & (i_all < len(ops)) & (dur_all > 0)
    sel = np.flatnonzero(ok)
    if not len(sel):
        return pd.DataFrame([], columns=ROOFLINE_COLUMNS)
    i_sel = i_all[sel].astype(np.int64)
    name_sel = ops["name"].to_numpy(object)[i_sel]
    per, codes, first = _distinct_counts(ops, i_sel, name_sel)
    counted = np.array([c is not None for c in per], dtype=bool)[codes]
    if not counted.any():
        return pd.DataFrame([], columns=ROOFLINE_COLUMNS)
    per = [c if c is not None else (None, 0.0, None, None) for c in per]
    codes = codes[counted]
    rows = sel[counted]
    kname = tops["name"].to_numpy(object)[rows]
    # Devices as codes (their objects only where a peak is looked up).
    dev_codes, dev_uniq = pd.factorize(tops["device_index"], use_na_sentinel=False)
    dev_codes = dev_codes[rows]
    dev_uniq = np.asarray(dev_uniq.astype(object))
    precision, prec_code = _precisions(per, codes, first, name_sel, kname)
    # Peaks per distinct (device, precision).
    pk_codes, pk_first = distinct_rows([dev_codes, prec_code])
    got = []
    for j in pk_first.tolist():
        pk, p = peaks_of.get(dev_uniq[dev_codes[j]]), precision[j]
        got.append((pk.peak_tflops(p) if pk and p else None, pk.memory_gbps if pk else None,
                    pk.source if pk else None))
    t_short = tops["short_name"] if "short_name" in tops.columns else tops["name"]
    t_label = tops["device"] if "device" in tops.columns else tops["device_index"]
    cols = {"op": _as_rows(name_sel[counted]), "op_index": i_sel[counted], "kernel": pd.Series(kname, dtype=object),
            "short_name": pd.Series(t_short.to_numpy(object)[rows], dtype=object),
            "device": _as_rows(t_label.to_numpy(object)[rows]), "precision": _as_rows(precision),
            "kernels": agg["size"].to_numpy()[rows].astype(np.int64)}
    return _roofline_frame(cols, per, codes, got, pk_codes, dur_all[rows])


def _distinct_counts(ops, i_sel, name_sel) -> tuple[list, np.ndarray, np.ndarray]:
    """(:func:`op_counts` of each distinct op of the rows ``i_sel`` of ``ops``, each row's code
    into them, the first row of each)."""
    from kernelscope.analysis.backends import distinct_rows
    dims_sel = ops["input_dims"].to_numpy(object)[i_sel]
    types_sel = ops["input_types"].to_numpy(object)[i_sel]
    # Count each distinct op (name, shapes, dtypes, FLOPs) once: the same ops repeat every step.
    # Equal shapes share one decoded object (the reader decodes each distinct text once), so the
    # object's identity stands for its value here; NaN and None FLOPs are one key. FLOPs as
    # floats where the column is (the objects, one per row, only where it is not).
    floats = ops["flops"].dtype.kind == "f"
    if floats:
        fl_key = fl_sel = ops["flops"].to_numpy(float)[i_sel]
    else:
        fl_sel = ops["flops"].to_numpy(object)[i_sel]
        fl_key = np.array([None if f != f else f for f in fl_sel.tolist()], dtype=object)
    codes, first = distinct_rows([
        name_sel, np.fromiter(map(id, dims_sel), np.int64, len(i_sel)),
        np.fromiter(map(id, types_sel), np.int64, len(i_sel)), fl_key])
    # FLOPs as Python floats where read as floats (what the objects held).
    per = [op_counts(name_sel[j], dims_sel[j], types_sel[j], float(fl_sel[j]) if floats else fl_sel[j])
           for j in first.tolist()]
    return per, codes, first


def _precisions(per, codes, first, name_sel, kname) -> tuple[np.ndarray, np.ndarray]:
    """(each counted row's precision, its code into the distinct ones): its op's, except that the
    tensor-core kernels of an fp32 matmul run TF32 (cuBLAS names them so)."""
    # Precision as a code per row into its distinct values (a few), the kernel names looked at
    # only where it matters.
    prec_uniq = _objects([c[2] for c in per] + ["tf32"])
    prec_code = np.arange(len(per))[codes]
    fp32_mm = np.array([c[2] == "fp32" and name_sel[j] in _MATMUL for c, j in zip(per, first.tolist())],
                       dtype=bool)[codes]
    if fp32_mm.any():
        at = np.flatnonzero(fp32_mm)
        tf32 = by_distinct(kname[at], lambda x: "tf32" in str(x).lower(), bool, False)
        prec_code[at[tf32]] = len(per)
    return prec_uniq[prec_code], prec_code


def _roofline_frame(cols: dict, per, codes, got, pk_codes, dur) -> pd.DataFrame:
    """The counted roofline's table: ``cols`` (the op, kernel and device columns), then each row's
    counts (``per[codes]``), peaks (``got[pk_codes]``: TFLOP/s, GB/s, source) and what they give
    over its time ``dur``."""
    flops_col = _as_values([c[0] for c in per], codes)                    # float, or None where unknown
    flops = np.array([np.nan if c[0] is None else c[0] for c in per], dtype=float)[codes]
    nbytes = np.array([c[1] for c in per], dtype=float)[codes]
    peak_t_col, peak_b_col = (_as_values([g[i] for g in got], pk_codes) for i in range(2))
    peak_src = _objects([g[2] for g in got])[pk_codes]
    peak_t = np.array([np.nan if g[0] is None else g[0] for g in got], dtype=float)[pk_codes]
    peak_b = np.array([np.nan if g[1] is None else g[1] for g in got], dtype=float)[pk_codes]
    sec = dur * 1e-6
    has_flops = ~np.isnan(flops)
    with np.errstate(divide="ignore", invalid="ignore"):
        ach_t = flops / sec / 1e12
        ach_b = nbytes / sec / 1e9
        inten = np.where(has_flops & (nbytes != 0), flops / nbytes, np.nan)
        by_roof = (peak_b > 0) & (peak_t > 0) & has_flops   # peaks of 0 or unknown give no roof
        attain, memory_roof = attainable(inten, peak_t, peak_b, per=1e3, words=False)   # TFLOP/s against GB/s
        attain = np.where(by_roof, attain, np.nan)
        share = np.where(by_roof, ach_t / attain, np.where(peak_b > 0, ach_b / peak_b, np.nan))
    # Labels as small codes into (None, "memory", "compute"): no text made per row.
    bound_code = np.where(by_roof, np.where(memory_roof, 1, 2), np.where(peak_b > 0, 1, 0))
    with np.errstate(invalid="ignore"):
        above = np.nan_to_num(share, nan=0.0) > 1.0 + 1e-9
    note_code = np.where(above, bound_code, 0)
    # Text as object arrays, computed numbers as float arrays, and the values taken as they are
    # (FLOPs, peaks: None where unknown) as lists: pandas types each column as it typed the rows
    # of dicts this table was once built from.
    # Kernel names stay objects: they are long (hundreds of bytes), and a text column would copy
    # every row's bytes (50k rows of a large trace) only to be read back as objects.
    return pd.DataFrame({
        **cols, "duration_us": dur,
        "flops": flops_col, "bytes": nbytes,
        "flops_source": _as_rows(_objects([c[3] for c in per])[codes]), "intensity": inten,
        "achieved_tflops": ach_t, "achieved_gbps": ach_b, "peak_tflops": peak_t_col,
        "attainable_tflops": attain,
        "peak_gbps": peak_b_col, "roof_share": share,
        "bound": _labels(bound_code, _BOUNDS), "peaks_source": _as_rows(peak_src),
        "roof_note": _labels(note_code, _NOTES),
    }, columns=ROOFLINE_COLUMNS, copy=False)   # the arrays are this table's own: not copied into blocks


def _as_rows(values: np.ndarray):
    """An object column typed as pandas types it (its text dtype where every value is text or
    missing, else the objects as they are), inferred from its distinct values only: pandas'
    own inference converts every row (a large trace's roofline has 100k rows of a few names).

    >>> _as_rows(np.array(["a", None, "a"], dtype=object)).tolist()
    ['a', nan, 'a']
    """
    codes, uniq = pd.factorize(values)
    typed = pd.Series(uniq)
    if typed.dtype == object:
        return values
    return typed.array.take(codes, allow_fill=True)


_BOUNDS = np.array([None, "memory", "compute"], dtype=object)
_NOTES = np.array([None, ABOVE_MEMORY_ROOF, ABOVE_COMPUTE_ROOF], dtype=object)


def _labels(codes: np.ndarray, labels: np.ndarray):
    """``_as_rows(labels[codes])`` made from the codes: typed from the labels that occur.

    >>> _labels(np.array([1, 0, 1]), _BOUNDS).tolist()
    ['memory', nan, 'memory']
    """
    present = np.flatnonzero(np.bincount(codes, minlength=len(labels)))
    values = [labels[i] for i in present.tolist() if labels[i] is not None]
    typed = pd.Series(_objects(values))
    if typed.dtype == object:
        return labels[codes]
    where = np.full(len(labels), -1, np.int64)
    where[[i for i in present.tolist() if labels[i] is not None]] = np.arange(len(values))
    return typed.array.take(where[codes], allow_fill=True)


def _as_values(distinct: list, codes: np.ndarray):
    """The column ``[distinct[c] for c in codes]`` as pandas would type that list, typed from the
    distinct values (the same types give the same dtype): numbers (None as NaN) as an array, any
    other mix as the list.

    >>> _as_values([2.0, None], np.array([0, 1, 0]))
    array([ 2., nan,  2.])
    """
    typed = pd.Series(distinct, dtype=None) if distinct else pd.Series([], dtype=object)
    if typed.dtype.kind in "fiu" and len(distinct):
        return typed.to_numpy()[codes]
    return _objects(distinct)[codes].tolist()


def _objects(values) -> np.ndarray:
    """A 1-d object array of ``values`` (numpy would make a list of tuples 2-d)."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def same_dots_once(pts: pd.DataFrame) -> pd.DataFrame:
    """Op instances that would draw the same dot (same kernel, op, precision and intensity: a loop's
    2,000 identical adds) as one dot: their time summed, FLOP/s and roof share time-weighted, and
    ``count`` saying how many. The chart sizes dots by time, so nothing it shows changes but bytes.

    >>> pts = roofline(ks.load("launch_bound.pt.trace.json.gz"))
    >>> len(pts), len(same_dots_once(pts)), int(same_dots_once(pts)["count"].sum()) == len(pts)
    (2000, 2, True)
    """
    keys = ["kernel", "short_name", "op", "precision", "intensity", "device"]
    keys = [c for c in keys if c in pts.columns]
    if not len(pts) or not keys:
        return pts.assign(count=1)
    from kernelscope.analysis.backends import distinct_rows
    # Grouped by one integer code per distinct key (pandas would hash every row's kernel name).
    codes, first = distinct_rows([pts[c].to_numpy() for c in keys])
    d = pts["duration_us"].astype(float).fillna(0.0)
    w = pts.drop(columns=keys).assign(_fl=pts["achieved_tflops"].astype(float) * d,
                                      _rs=pts["roof_share"].astype(float) * d, _d=d)
    g = w.groupby(codes, sort=False)
    # first() is each group's first non-missing value: its first row's where that has one (the
    # rows of ``first``), the groupby's only for the columns with a missing value to skip.
    out = w.iloc[first].set_axis(pd.RangeIndex(len(first)))
    for c in [c for c in w.columns if out[c].isna().any()]:     # a first row missing the value
        # Grouped over the rows that can give it: those of such groups that hold one, and each
        # such group's first row (a group with none gets what first() gives a group with none).
        miss = out[c].isna().to_numpy()
        rows = w[c].notna().to_numpy() & miss[codes]
        rows[first[miss]] = True
        got = w[c][rows].groupby(codes[rows], sort=True).first()   # the groups of ``miss``, in order
        col = out[c].array.copy()
        col[np.flatnonzero(miss)] = got.array
        out[c] = col
    tot = g["_d"].sum()
    out["duration_us"] = tot
    with np.errstate(invalid="ignore", divide="ignore"):
        # The mean only for groups of no time (np.where would take the sum's share elsewhere).
        none = not (tot > 0).all()
        out["achieved_tflops"] = np.where(tot > 0, g["_fl"].sum() / tot,
                                          g["achieved_tflops"].mean() if none else np.nan)
        out["roof_share"] = np.where(tot > 0, g["_rs"].sum(min_count=1) / tot, g["roof_share"].mean() if none else np.nan)
    out["count"] = g.size()
    for c in reversed(keys):          # the keys first, typed as a groupby's index levels are
        codes_c, uniq = pd.factorize(pts[c].to_numpy()[first])
        out.insert(0, c, pd.Index(uniq).array.take(codes_c, allow_fill=True))
    return out.reset_index(drop=True).drop(columns=["_fl", "_rs", "_d"])
