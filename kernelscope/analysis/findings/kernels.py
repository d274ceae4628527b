"""Kernel-level findings: problems inside a kernel, or a chain of kernels, that the timeline does
not show. An fp32 GEMM on CUDA cores where TF32 would run it on tensor cores (``fp32_gemm``), a
grid of fewer blocks than the GPU has SMs (``tiny_grid``), and a chain of ATen elementwise kernels
that one fused kernel would replace (``unfused_elementwise``). The rules that read a Triton
kernel's compiled facts (uncoalesced loads, register spills) are in :mod:`.triton_variants`.

Each finding's ``cost_us`` is the kernel time a fix would save, priced from hardware facts (the
datasheet peaks of :mod:`kernelscope.analysis.peaks`, the device's SM count) and the recorded
shapes; where the figure is a bound the words say "up to". :func:`.find_all` keeps one finding per
kernel when a generic rule (roofline, a GEMM fallback, the autotuner's spills) names the same one.
"""
from __future__ import annotations

import math
import re

import numpy as np

from kernelscope.analysis.distinct import by_distinct
from kernelscope.analysis.findings.base import Finding, kernel_link, severity_for
from kernelscope.analysis.findings.gemm_fallback import GEMM_OPS
from kernelscope.analysis.peaks import device_peaks
from kernelscope.analysis.producers import compiled_variant
from kernelscope.analysis.roofline import DTYPE_BYTES, op_counts
from kernelscope.units import fmt_bytes, fmt_us

# A streaming kernel reaches about this share of the datasheet memory bandwidth: ATen's vectorized
# elementwise kernels reach 80-93% of the H200's 4.8 TB/s in tests/data/advice, as STREAM does on HBM.
ACHIEVABLE_BW_SHARE = 0.85
# A finding must cost at least this share of the GPU's active window (first to last GPU work):
# under it the fix moves a step by less than a step's run-to-run noise.
MIN_SHARE = 0.02
# Findings of one kind listed at most (the costliest): the kernel table holds the rest.
MAX_FINDINGS = 3


def devices_of(report) -> dict:
    """``{device index: (SM count or None, datasheet peaks or None)}`` of a report's devices.

    >>> devices_of(rep)[0][0], devices_of(rep)[0][1].model
    (132, 'H200 SXM')
    """
    d = report.devices
    out = {}
    for r in d.to_dict("records") if len(d) else []:
        sms = r.get("num_sms")
        sms = int(sms) if isinstance(sms, (int, np.integer, float)) and sms == sms and sms > 0 else None
        out[int(r["index"])] = (sms, device_peaks(r.get("name")))
    return out


def memory_us(nbytes, peaks) -> float:
    """Microseconds to move ``nbytes`` at the achievable share of a device's memory bandwidth (0
    where the device is unknown).

    >>> round(memory_us(134217728, devices_of(rep)[0][1]), 1)
    32.9
    """
    if peaks is None or not peaks.memory_gbps or not nbytes or nbytes != nbytes:
        return 0.0
    return float(nbytes) / (ACHIEVABLE_BW_SHARE * peaks.memory_gbps * 1e3)   # GB/s = 1e3 bytes/us


def window_of(report, tl) -> float:
    """The time shares are taken of: the GPU's active window, else the kernels' total time."""
    w = tl.window.get("active_us") if tl is not None else None
    return float(w) if w else float(report.kernels["duration_us"].sum())


def _ops_row(ops, i):
    return ops.iloc[int(i)] if i is not None and i == i and 0 <= int(i) < len(ops) else None


def op_tensors(dims, types) -> list:
    """(shape, bytes per element, dtype) of an op's recorded tensor inputs, from its ``input_dims``
    and ``input_types`` (scalars and empty ``out=`` tensors left out).

    >>> op_tensors([[4096, 4096], [], [0]], ["float", "Scalar", "float"])
    [((4096, 4096), 4, 'float')]
    """
    if not isinstance(dims, list) or not isinstance(types, list):
        return []
    return [(tuple(d), DTYPE_BYTES[t], t) for d, t in zip(dims, types)
            if isinstance(d, list) and d and all(isinstance(x, int) and x >= 0 for x in d)
            and math.prod(d) > 0 and t in DTYPE_BYTES]


def _row_tensors(row) -> list:
    return op_tensors(row["input_dims"], row["input_types"]) if row is not None and "input_dims" in row.index else []


# -- a Triton launch's compiled variant -------------------------------------------------------------
TRITON_PRODUCERS = ("Triton", "Inductor", "Helion")


def variant_of_row(trace, row) -> dict | None:
    """The compiled Triton variant one launch (a row of ``report.kernels``) ran, or None.

    >>> r = ks.load("advice/triton_gemm_spilling.before.ksreport.json.gz")
    >>> variant_of_row(r.trace, r.kernels.iloc[0])["spills"]
    790
    """
    if row.get("producer") not in TRITON_PRODUCERS or getattr(trace, "variants", None) is None:
        return None
    vals = [row.get(c) for c in ("block_x", "block_y", "block_z", "registers_per_thread", "shared_mem_bytes")]
    vals = [-1 if v is None or v != v else int(v) for v in vals]
    threads = max(vals[0], 1) * max(vals[1], 1) * max(vals[2], 1) if vals[0] > 0 else -1
    return compiled_variant(trace, str(row["name"]), threads, vals[3], vals[4])


# -- fp32 GEMMs on CUDA cores ------------------------------------------------------------------------
# cuBLAS/CUTLASS fp32 GEMMs on CUDA cores (FFMA, SIMT, sgemm) and the names of tensor-core ones
# (TF32 keeps f32 in the name: s1688/s16816 tensorop, tf32, nvjet); matrix-vector kernels (gemv) are
# memory-bound: a faster math unit does not shorten them.
FP32_SIMT_NAME = re.compile(r"sgemm|_ffma_|simt|gemm_f32f32_f32f32", re.IGNORECASE)
TENSOR_CORE_NAME = re.compile(r"tf32|s1688|s16816|tensorop|hmma|wgmma|nvjet|gemv", re.IGNORECASE)
GEMM_BACKENDS = ("cuBLAS", "CUTLASS")
# A GEMM launch's fixed part, which faster math does not shorten (launch to drain, prologue and
# epilogue): square fp32 GEMMs of 256..4096 on the H200 took 6.3/12.5/55/339/2670 us, with TF32
# 4.4/6.8/12.6/47/336 us (torch 2.11, kernel time, 20 runs each): 4 us plus the rest at the peak ratio
# reads them within 0.8-1.3x. The shortest tensor-core GEMMs in tests/data take 2.6-3.5 us.
GEMM_FIXED_US = 4.0


def _fp32_gemm_rows(k, ops) -> np.ndarray:
    """Which launches are fp32 GEMMs on CUDA cores: a GEMM op whose tensor inputs are all fp32 (or,
    with no op recorded, an fp32 SIMT name), on a cuBLAS/CUTLASS kernel not known to use tensor cores."""
    tc = k["tensor_cores"].fillna(False).astype(bool).to_numpy() if "tensor_cores" in k.columns else np.zeros(len(k), bool)
    lib = k["backend"].isin(GEMM_BACKENDS).to_numpy() & ~tc
    lib = lib & ~by_distinct(k["name"], lambda n: bool(TENSOR_CORE_NAME.search(str(n))), bool, False)
    simt = by_distinct(k["name"], lambda n: bool(FP32_SIMT_NAME.search(str(n))), bool, False)
    gemm_op = k["op"].isin(GEMM_OPS).to_numpy()
    fp32_op = by_distinct(k["op_index"].where(lib & gemm_op), lambda i: _all_fp32(_ops_row(ops, i)), bool, False)
    return lib & np.where(gemm_op, fp32_op, simt)


def _all_fp32(row) -> bool:
    t = _row_tensors(row)
    return bool(t) and all(dt == "float" for _, _, dt in t)


def _tf32_us(g, ops, peaks, tf32) -> float:
    """The launches' time at the TF32 rate: each launch's fixed part (:data:`GEMM_FIXED_US`) plus
    the rest at the same share of the faster peak (x fp32 / tf32 peak), and no less than their op's
    FLOPs at the TF32 peak or its bytes at achievable bandwidth (a skinny GEMM is memory-bound once
    the math is fast)."""
    fp32 = peaks.peak_tflops("fp32")
    total = 0.0
    for i, s in g.groupby(g["op_index"].fillna(-1), sort=False)["duration_us"]:
        fixed = float(np.minimum(s.to_numpy(float), GEMM_FIXED_US).sum())
        t = fixed + (float(s.sum()) - fixed) * fp32 / tf32
        row = _ops_row(ops, None if i < 0 else i)
        c = op_counts(row["name"], row["input_dims"], row["input_types"]) if row is not None else None
        if c is not None:
            flops, nbytes = c[0] or 0.0, c[1] or 0.0
            t = max(t, flops / (tf32 * 1e6), memory_us(nbytes, peaks))   # TFLOP/s = 1e6 FLOP/us
        total += min(t, float(s.sum()))
    return total


def fp32_gemm_findings(report, tl=None) -> list:
    """fp32 GEMMs that ran on CUDA cores while the GPU has TF32 tensor cores (TF32 off): one
    finding per device, priced as their time minus their time at the TF32 rate.

    >>> f = fp32_gemm_findings(ks.load("advice/fp32_matmul.before.ksreport.json.gz"))[0]
    >>> f.kind, round(f.cost_us), f.fix[:44]
    ('fp32_gemm', 2323, 'torch.backends.cuda.matmul.allow_tf32 = True')
    """
    k = report.kernels
    if not len(k) or "backend" not in k.columns:
        return []
    g_all = k[_fp32_gemm_rows(k, report.ops)]
    window = window_of(report, tl)
    out = []
    for dev, g in g_all.groupby("device_index", sort=False):
        peaks = devices_of(report).get(int(dev), (None, None))[1]
        fp32 = peaks.peak_tflops("fp32") if peaks else None
        tf32 = peaks.peak_tflops("tf32") if peaks else None
        if not fp32 or not tf32 or tf32 <= fp32:
            continue       # no tensor-core TF32 on this GPU (or unknown): nothing faster to switch on
        dur = float(g["duration_us"].sum())
        fast = _tf32_us(g, report.ops, peaks, tf32)
        cost = dur - fast
        if cost < MIN_SHARE * window:
            continue
        names = list(dict.fromkeys(g["name"].astype(str)))
        ops = sorted({str(o) for o in g["op"].dropna()})
        what = ", ".join(ops) or "GEMMs"
        n = len(g)
        ev = {"kernels": names, "launches": n, "time_us": dur, "tf32_time_us": fast, "ops": ops,
              "fp32_tflops": fp32, "tf32_tflops": tf32, "peak_ratio": tf32 / fp32, "device": str(g["device"].iloc[0])}
        if len(names) == 1:
            ev["kernel"] = names[0]
        out.append(Finding(
            "fp32_gemm", severity_for(cost, window),
            f"fp32 GEMMs on CUDA cores: {n} launch{'es' * (n != 1)} of {what} took {fmt_us(dur)}; "
            f"TF32 tensor cores would take about {fmt_us(fast)}",
            f"{n} GEMM launch{'es' * (n != 1)} ({what}) with fp32 inputs ran on CUDA cores (FFMA) for "
            f"{fmt_us(dur)}: TF32 is off. This GPU ({peaks.model}) peaks at {fp32:g} TFLOP/s in fp32 on CUDA cores "
            f"and {tf32:g} TFLOP/s in TF32 on tensor cores ({tf32 / fp32:.1f}x, datasheet); with each launch's "
            f"first {GEMM_FIXED_US:g} us (launch to drain) as it is and the rest at the same share of the faster "
            f"peak (no faster than their FLOPs and bytes allow) they would take {fmt_us(fast)}. "
            "TF32 keeps fp32's range with a 10-bit mantissa, which training and most inference tolerate; "
            "bf16 autocast is faster again and halves the bytes (CuPy: CUPY_TF32=1; JAX: "
            "jax.default_matmul_precision(\"tensorfloat32\")). Time at stake: " + fmt_us(cost) + ".",
            ev, cost,
            cause=f"{n} fp32 GEMM launch{'es' * (n != 1)} ({what}) ran on CUDA cores: TF32 is off.",
            fix='torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision("high")), '
                'or run the model under torch.autocast("cuda", dtype=torch.bfloat16).',
            link=kernel_link(names, "the fp32 GEMM kernels")))
    return out


# -- grids smaller than the GPU ----------------------------------------------------------------------
# A launch must run at least this long to count: shorter ones are tiny inputs (Torch sizes small
# grids for them on purpose), where a kernel's fixed launch-and-drain latency, a few us, is most of
# its time and more blocks would not shorten it.
TINY_GRID_MIN_US = 20.0
_COMM_BACKENDS = ("NCCL", "RCCL", "gloo", "NVSHMEM")


def tiny_grid_findings(report, tl=None) -> list:
    """Kernels launched on fewer blocks than the GPU has SMs, running long enough to matter: the
    SMs they leave idle, priced as time x (1 - blocks / SMs), "up to" (the work spread evenly over
    every SM, and no faster than its bytes allow where a Triton variant records them).

    >>> f = tiny_grid_findings(ks.load("advice/triton_four_programs.before.ksreport.json.gz"))[0]
    >>> f.kind, f.evidence["blocks"], f.evidence["sms"], round(f.cost_us)
    ('tiny_grid', 4, 132, 1824)
    """
    k = report.kernels
    if not len(k) or "grid_x" not in k.columns:
        return []
    devs = devices_of(report)
    dev = k["device_index"].astype(float).fillna(-1).astype(int).to_numpy()
    sms = np.full(len(k), np.nan)
    for d, (n, _) in devs.items():
        sms[dev == d] = n or np.nan
    blocks = np.ones(len(k))
    for c in ("grid_x", "grid_y", "grid_z"):
        blocks *= k[c].astype(float).fillna(1.0).to_numpy()
    comm = k["comm"].notna().to_numpy() if "comm" in k.columns else np.zeros(len(k), bool)
    comm = comm | k["backend"].isin(_COMM_BACKENDS).to_numpy() | by_distinct(k["name"], lambda n: "nccl" in str(n).lower(), bool, False)
    dur = k["duration_us"].to_numpy(float)
    pos = np.flatnonzero((blocks > 0) & (blocks < sms) & (dur >= TINY_GRID_MIN_US) & ~comm)
    window = window_of(report, tl)
    out = []
    for name, p in k["name"].iloc[pos].groupby(k["name"].iloc[pos], sort=False).indices.items():
        at = pos[p]
        b, s, d = blocks[at], sms[at], dur[at]
        first = k.iloc[at[0]]
        v = variant_of_row(report.trace, first)
        floor = memory_us(v.get("arg_bytes"), devs.get(int(dev[at[0]]), (None, None))[1]) if v else 0.0
        cost = float(np.maximum(d - np.maximum(d * b / s, floor), 0.0).sum())
        if cost < MIN_SHARE * window:
            continue
        out.append(_tiny_grid_finding(name, k.iloc[at], int(b.max()), int(s[0]), cost, float(d.sum()), window))
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS]


def _tiny_grid_finding(name, g, blocks, sms, cost, dur, window) -> Finding:
    short = str(g["short_name"].iloc[0]) if "short_name" in g.columns else str(name)
    n = len(g)
    threads = int(g["block_x"].fillna(1).iloc[0] * g["block_y"].fillna(1).iloc[0] * g["block_z"].fillna(1).iloc[0])
    return Finding(
        "tiny_grid", severity_for(cost, window),
        f"{short} runs on {blocks} block{'s' * (blocks != 1)}, fewer than the GPU's {sms} SMs: up to {fmt_us(cost)} at stake",
        f"{n} launch{'es' * (n != 1)} of {short} took {fmt_us(dur)} with a grid of at most {blocks} block"
        f"{'s' * (blocks != 1)} of {threads} threads: each block runs on one SM, so at least {sms - blocks} of the "
        f"GPU's {sms} SMs sat idle the whole time. Spread over every SM the same work would take about "
        f"{blocks}/{sms} of its time (no less than its bytes at achievable bandwidth, where recorded): up to "
        f"{fmt_us(cost)} at stake. Launch at least one block per SM: in a kernel of your own, a grid over the "
        "data (one program per block of the input) rather than a loop over it inside a few programs; a "
        "library sizes its grid to the problem, so give each call more parallel work (batch the calls).",
        {"kernel": str(name), "launches": n, "time_us": dur, "blocks": blocks, "sms": sms,
         "threads_per_block": threads, "idle_sm_share": 1.0 - blocks / sms},
        cost,
        cause=f"{short} launches {blocks} block{'s' * (blocks != 1)} on a {sms}-SM GPU: {sms - blocks} SMs idle.",
        fix=f"Launch at least {sms} blocks: one program per block of the input, not a loop inside a few programs "
            "(a library's kernel: batch the calls).",
        link=kernel_link([name], short))


# -- unfused elementwise chains ------------------------------------------------------------------------
# ATen's own elementwise and reduction kernels (TensorIterator's loops): each reads its inputs from
# memory and writes its output back, so a chain of them moves the tensor once per op.
ATEN_ELEMENTWISE_NAME = re.compile(
    r"at::native::(?:vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel|reduce_kernel)<")
_REDUCE_NAME = re.compile(r"at::native::reduce_kernel<")
# A chain is at least this many kernels in a row: fusing two saves one pass over memory at most;
# from three on it is the chain torch.compile fuses and eager code leaves apart.
MIN_CHAIN_KERNELS = 3
# The chain's largest tensor must be at least this big: below it each kernel's fixed latency (~2 us)
# outweighs its traffic (8 MiB moves in ~2 us at 4 TB/s), and the launch-bound rule speaks for it.
MIN_FUSE_BYTES = 8 << 20


def _shape_of(tensors) -> tuple:
    """The broadcast shape of an op's tensors (its output's, for an elementwise op), else its largest."""
    try:
        return tuple(np.broadcast_shapes(*[s for s, _, _ in tensors]))
    except ValueError:
        return max((s for s, _, _ in tensors), key=math.prod)


def _joins(chain_shape, shape) -> bool:
    """Whether an op over ``shape`` works on the chain's tensor: one broadcasts to the other (a
    row statistic, a bias), or the same elements in another view."""
    if math.prod(chain_shape) == math.prod(shape):
        return True
    try:
        return tuple(np.broadcast_shapes(chain_shape, shape)) in (tuple(chain_shape), tuple(shape))
    except ValueError:
        return False


def _runs(k, syncs) -> list:
    """Positions of ``k`` in stream order, cut into runs of ATen elementwise kernels with an op
    (anything else on the stream ends a run, and so does a host synchronization between two
    launches: the host needed a value before it launched the next op, so no compiler fuses across
    it), runs of at least :data:`MIN_CHAIN_KERNELS` only."""
    ew = by_distinct(k["name"], lambda n: bool(ATEN_ELEMENTWISE_NAME.search(str(n))), bool, False)
    ew = ew & k["op_index"].notna().to_numpy()
    if ew.sum() < MIN_CHAIN_KERNELS:
        return []
    dev = k["device_index"].astype(float).fillna(-1).to_numpy()
    stream = k["stream"].astype(float).fillna(-1).to_numpy()
    order = np.lexsort((k["start_us"].to_numpy(float), stream, dev))
    lane = (dev * 1e9 + stream)[order]
    flag = ew[order]
    # Host-blocking calls before each launch, counted: a run breaks where the count changes.
    sync_at = np.sort(syncs["start_us"].to_numpy(float)) if syncs is not None and len(syncs) else np.zeros(0)
    launched = k["launch_start_us"].to_numpy(float)[order] if "launch_start_us" in k.columns else np.full(len(k), np.nan)
    waited = np.where(np.isnan(launched), -1, np.searchsorted(sync_at, np.nan_to_num(launched)))
    # A launch continues the run of the one before it on its stream, else starts one.
    cont = np.zeros(len(order), bool)
    cont[1:] = flag[1:] & flag[:-1] & (lane[1:] == lane[:-1]) & ((waited[1:] == waited[:-1]) | (waited[1:] < 0))
    starts = np.flatnonzero(flag & ~cont)
    ends = np.append(starts[1:], len(order))
    runs = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        n = a + 1 + (int(np.argmin(cont[a + 1:b])) if b > a + 1 and not cont[a + 1:b].all() else b - a - 1)
        if n - a >= MIN_CHAIN_KERNELS:
            runs.append(order[a:n].tolist())
    return runs


def _op_facts(dims, types):
    """(shape, input bytes, output bytes, largest tensor's bytes) of one op's tensors, or None."""
    t = op_tensors(dims, types)
    if not t:
        return None
    s = _shape_of(t)
    sizes = [math.prod(x) * e for x, e, _ in t]
    return s, float(sum(sizes)), float(math.prod(s) * max(e for _, e, _ in t)), float(max(sizes))


def _facts_of(i, dims, types, cache):
    """:func:`_op_facts` of op row ``i`` (-1: none), cached by the objects' identity first (the
    reader shares one list per distinct shape: a 1M-event trace has ~80 among 200k ops, and
    printing each op's lists for a text key cost 0.3 s), then by their text."""
    if not 0 <= i < len(dims):
        return None
    d, t = dims[i], types[i]
    ident = (id(d), id(t))      # the objects live in ``dims`` and ``types`` while the cache does
    if ident in cache:
        return cache[ident]
    key = f"{d}|{t}"
    f = cache[key] if key in cache else cache.setdefault(key, _op_facts(d, t))
    cache[ident] = f
    return f


def _chains(run, facts) -> list:
    """A run cut into chains over one tensor: each a list of (position, shape, input bytes, output
    bytes, largest tensor's bytes). ``facts``: each launch's op row (-1: none), the ops' dims and
    types, whether the launch is a reduction, and a cache of :func:`_op_facts` by the ops' text
    (a step's ops repeat with the same shapes)."""
    op_row, dims, types, reduce, cache = facts
    out: list = []
    cur: list = []
    shape: tuple = ()
    for p in run:
        i = op_row[p]
        f = _facts_of(i, dims, types, cache)
        if f is None:
            out.append(cur)
            cur, shape = [], ()
            continue
        s = f[0]
        item = (p, s, f[1], 0.0 if reduce[p] else f[2], f[3])
        if cur and _joins(shape, s):
            cur.append(item)
            shape = s if math.prod(s) > math.prod(shape) else shape
        else:
            out.append(cur)
            cur, shape = [item], s
    out.append(cur)
    return [c for c in out if len(c) >= MIN_CHAIN_KERNELS and max(x[4] for x in c) >= MIN_FUSE_BYTES]


def unfused_elementwise_findings(report, tl=None) -> list:
    """Chains of ATen elementwise kernels in a row over one large tensor, each a full pass over
    memory: their time minus one fused pass (the most any one of them reads plus the chain's
    output, at achievable bandwidth). Chains that repeat (a step's layers) are one finding.

    >>> f = unfused_elementwise_findings(ks.load("advice/elementwise_chain.before.ksreport.json.gz"))[0]
    >>> f.kind, f.evidence["kernels_per_chain"], round(f.cost_us)
    ('unfused_elementwise', 18, 654)
    """
    k, ops = report.kernels, report.ops
    if not len(k) or not len(ops) or "input_dims" not in ops.columns:
        return []
    devs = devices_of(report)
    dur = k["duration_us"].to_numpy(float)
    groups: dict = {}
    facts = (k["op_index"].astype(float).fillna(-1).to_numpy().astype(np.int64), ops["input_dims"].to_numpy(object),
             ops["input_types"].to_numpy(object),
             by_distinct(k["name"], lambda n: bool(_REDUCE_NAME.search(str(n))), bool, False), {})
    for run in _runs(k, getattr(report, "syncs", None)):
        for c in _chains(run, facts):
            pos = [x[0] for x in c]
            peaks = devs.get(int(k["device_index"].iloc[pos[0]]), (None, None))[1]
            fused_bytes = max(x[2] for x in c) + c[-1][3]
            fused = max(memory_us(fused_bytes, peaks), float(dur[pos].min()))
            main = max(c, key=lambda x: x[4])
            key = (str(k["device"].iloc[pos[0]]), tuple(str(o) for o in k["op"].iloc[pos]), main[1])
            g = groups.setdefault(key, {"pos": [], "chains": 0, "time": 0.0, "fused": 0.0,
                                        "bytes": fused_bytes, "tensor_bytes": main[4], "peaks": peaks})
            g["pos"].extend(pos)
            g["chains"] += 1
            g["time"] += float(dur[pos].sum())
            g["fused"] += fused
    window = window_of(report, tl)
    out = [_unfused_finding(k, key, g, window) for key, g in groups.items()
           if g["time"] - g["fused"] >= MIN_SHARE * window]
    out.sort(key=lambda f: -f.cost_us)
    return out[:MAX_FINDINGS]


def _unfused_finding(k, key, g, window) -> Finding:
    device, ops, shape = key
    n, reps = len(ops), g["chains"]
    cost = g["time"] - g["fused"]
    names = list(dict.fromkeys(k["name"].iloc[g["pos"]].astype(str)))
    seq = ", ".join(dict.fromkeys(o.split("::")[-1] for o in ops))
    shape_txt = "[" + ", ".join(str(x) for x in shape) + "]"
    peaks = g["peaks"]
    bw = (f" at {ACHIEVABLE_BW_SHARE:.0%} of the {peaks.memory_gbps:g} GB/s datasheet bandwidth" if peaks else "")
    times = f" ({reps} such chains)" if reps > 1 else ""
    return Finding(
        "unfused_elementwise", severity_for(cost, window),
        f"{n} unfused elementwise kernels in a row over a {shape_txt} tensor took {fmt_us(g['time'])}{times}; "
        f"one fused kernel would take about {fmt_us(g['fused'])}",
        f"{n} ATen elementwise/reduction kernels ran one after another ({seq}), each reading its inputs "
        f"from memory and writing its output back: the {shape_txt} tensor ({fmt_bytes(g['tensor_bytes'])}) "
        f"crosses memory once per op{times}. One fused kernel reads the inputs once and writes the result "
        f"once: about {fmt_bytes(g['bytes'])} per chain (the most any one of these kernels reads, plus the "
        f"output){bw}, {fmt_us(g['fused'])} in all. Time at stake: {fmt_us(cost)}. torch.compile fuses such "
        "chains into one kernel.",
        {"kernels": names, "ops": list(ops), "chains": reps, "kernels_per_chain": n,
         "time_us": g["time"], "fused_us": g["fused"], "fused_bytes_per_chain": g["bytes"],
         "tensor_shape": list(shape), "tensor_bytes": g["tensor_bytes"], "device": device},
        cost,
        cause=f"{n} elementwise ops over a {fmt_bytes(g['tensor_bytes'])} tensor ran as {n} kernels, each a full pass over memory.",
        fix="torch.compile the function that holds them (Inductor fuses the chain into one kernel), "
            "or write the fused kernel by hand (Triton).",
        link=kernel_link(names, f"the {n} kernels of the chain"))
