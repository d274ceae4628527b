"""What produced each kernel, and with which knobs.

``producer`` is the rung a user changes to change the kernel: ``Inductor`` (torch.compile's
generated Triton), ``Triton`` (a user's ``@triton.jit``), ``Helion``, ``CUTLASS`` (a kernel built
from CUTLASS, whoever launched it), ``cuBLAS``, ``cuDNN``, ``FlashAttention``, ``TensorRT``, ...
It differs from ``backend`` (the library that launched it): cuBLAS launches CUTLASS-built
kernels, Inductor's kernels run on Triton.

Where each knob comes from (``config_source``):

- the trace: Inductor's CPU-side launch event carries ``num_warps``, ``num_stages`` and
  ``kernel_kwargs`` (``XBLOCK=1``); a saved trace has them;
- the process (``kernelscope.capture.tuning``): the compiled variants Triton and Inductor held
  (``trace.variants``), matched to a launch by name, threads per block, registers and shared
  memory. Where several variants with different configs match, the launch's config is left
  empty and the column says so: never a guess;
- the kernel name: library kernels' names hold their tile, cluster, stages, layouts
  (``decoded``; CUTLASS 3's procedural names are documented, the rest are labelled "decoded
  from the kernel name").

What else its tuner tried (the autotuning candidates, ``rep.autotune``):
:mod:`kernelscope.analysis.autotune`.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

# The autotuning candidates' table moved to its own module; importers of these names here
# (the tuning watch, the Report) keep working.
from kernelscope.analysis.autotune import BENCH_RANGE as BENCH_RANGE
from kernelscope.analysis.autotune import FROM_VARIANT as FROM_VARIANT
from kernelscope.analysis.autotune import INDUCTOR_BENCH_RANGE as INDUCTOR_BENCH_RANGE
from kernelscope.analysis.autotune import NOT_BENCHMARKED as NOT_BENCHMARKED
from kernelscope.analysis.autotune import autotune_table as autotune_table
from kernelscope.analysis.distinct import factorize

# Inductor's kernel names: triton_<kind>_fused_<ops>_<n> (pointwise, reduction, persistent
# reduction, template, foreach, split scan, ...).
INDUCTOR_NAME = re.compile(r"^triton_(poi|red|per|tem|for|spl|mm|bmm|sort|scan|unk)_")
_CUTLASS_BUILT = re.compile(r"(^|[<\s])(cutlass3x_|cutlass_|fmha_cutlass)")
_TRT = re.compile(r"(_trt$|^trt_|_kernel_trt\b)")
# Labels of where a decoded name's fields come from.
DOCUMENTED = "the kernel name (CUTLASS's documented naming)"
UNDOCUMENTED = "decoded from the kernel name (naming not documented)"
MIN_RECORDED_REGISTERS = 16
# Where a kernel's config came from (the ``config_source`` column).
FROM_TRACE = "trace (Inductor's launch event)"
# An Inductor template's launch: warps and stages from its launch event, the tile from its
# compiled kernel's constexprs (the launch event carries none).
FROM_TRACE_AND_PROCESS = "trace (Inductor's launch event: warps, stages) and process (its compiled kernel: the tile)"
FROM_PROCESS = "process (compiled variant)"
FROM_TUNER = "process (its tuner's candidate with this launch's warps)"
AMBIGUOUS = "not identified: several compiled variants match this launch"
NO_MATCH = "not identified: no compiled variant matches this launch"

_TYPES = r"(?:f16|bf16|f32|tf32|f64|s8|u8|s4|u4|e4m3|e5m2|s32|void|c\d+|z\d+|\w+?)"
_CUTLASS3 = re.compile(
    r"cutlass3x_(?P<arch>sm\d+)_(?P<opclass>tensorop|simt|wmma)_(?P<instr>[a-z]?\d+x\d+x\d+)?(?P<op>gemm|conv\w*?)"
    r"_(?P<types>(?:[a-z0-9]+_){3,5}?)(?P<tile>\d+x\d+x\d+)_(?P<cluster>\d+x\d+x\d+)_(?P<stages>\d+)"
    r"_(?P<layout>[nt]{3})_align(?P<align>\d+)(?:_(?P<rest>\w+))?")
_CUTLASS2 = re.compile(
    r"cutlass_(?:(?P<arch>\d+)_)?(?P<opclass>tensorop|simt|wmma)_(?:(?P<prefix>[a-z0-9]+)_)?(?P<instr>[a-z]\d*)"
    r"(?P<op>gemm|fprop|dgrad|wgrad|conv\w*)(?:_(?P<extra>[a-z_]+?))?(?:_(?P<types>[a-z0-9]+))?"
    r"_(?P<tile>\d+x\d+)_(?P<k>\d+)x(?P<stages>\d+)_(?P<layout>[nt]{2}|nhwc)(?:_align(?P<align>\d+))?")
_XMMA = re.compile(
    r"(?P<arch>sm\d+)_xmma_(?P<op>gemm|fprop|dgrad|wgrad)\w*?_(?P<types>[a-z0-9]+_[a-z0-9]+_[a-z0-9]+)_"
    r"(?:(?P<layout>[nt]{2})_[nt]_|\w*?)tilesize(?P<tile>\d+x\d+x\d+)(?:_stage(?P<stages>\d+))?"
    r"(?:_cgasize(?P<cluster>\d+x\d+x\d+))?(?:_warpgroupsize(?P<warpgroups>\d+x\d+x\d+))?"
    r"(?:_warpsize(?P<warps>\d+x\d+x\d+))?")
_NVJET = re.compile(
    r"nvjet_(?:(?P<arch>sm\d+)_)?(?P<types>[a-z]{3})_(?:mma_)?(?P<tile>\d+x\d+(?:x\d+)?)_(?P<k>\d+)x(?P<stages>\d+)"
    r"_(?P<cluster>\d+x\d+)(?:_(?P<ctas>\d)cta)?(?:_(?P<raster>[vh]))?(?P<rest>(?:_[A-Za-z0-9]+)*?)_(?P<layout>[NT]{3,4})$")
_NVJET_TYPES = {"h": "f16", "s": "f32", "t": "tf32", "b": "bf16", "d": "f64", "e": "fp8", "i": "int8"}
_KNOB = re.compile(r"(?:engine|eng)[_]?(?P<engine>\d+)|knob_(?P<knob>\d+)")


def _short(name) -> str:
    """The innermost name of a demangled C++ kernel (``void cutlass::Kernel2<NAME>(...)`` -> NAME)."""
    n = str(name)
    m = re.search(r"Kernel2?<(\w+)>", n)
    return m[1] if m else n


def decode_name(name) -> dict | None:
    """The fields a library kernel's name holds, with ``decoded_from`` saying whose naming it is;
    None when the name is not one we can read.

    >>> d = decode_name("cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_tnn_align8_warpspecialized_pingpong_epi_tma")
    >>> d["arch"], d["cta_tile"], d["cluster"], d["schedule"], d["epilogue"]
    ('sm90', '128x128x64', '1x1x1', 'warpspecialized_pingpong', 'epi_tma')
    >>> decode_name("nvjet_tst_128x24_64x11_2x1_v_bz_TNT")["stages"]
    11
    """
    if not isinstance(name, str) or not name:
        return None
    n = _short(name)
    m = _CUTLASS3.search(n)
    if m:
        rest = (m["rest"] or "")
        epi = re.search(r"(epi\w*)$", rest)
        types = [t for t in m["types"].strip("_").split("_") if t]
        return {"family": "CUTLASS 3", "arch": m["arch"], "opclass": m["opclass"], "instruction": m["instr"],
                "operation": m["op"], "types": "_".join(types), "cta_tile": m["tile"], "cluster": m["cluster"],
                "stages": int(m["stages"]) or "auto", "layouts": m["layout"], "alignment": int(m["align"]),
                "schedule": (rest[:epi.start()].strip("_") if epi else rest) or None,
                "epilogue": epi[1] if epi else None, "decoded_from": DOCUMENTED}
    m = _CUTLASS2.search(n)
    if m:
        return {"family": "CUTLASS 2", "arch": f"sm{m['arch']}" if m["arch"] else None, "opclass": m["opclass"],
                "instruction": m["instr"], "operation": m["op"],
                "types": "_".join(x for x in (m["prefix"], m["types"]) if x) or None,
                "epilogue": m["extra"], "cta_tile": f"{m['tile']}x{m['k']}", "stages": int(m["stages"]),
                "layouts": m["layout"], "alignment": int(m["align"]) if m["align"] else None,
                "decoded_from": DOCUMENTED}
    m = _XMMA.search(n)
    if m:
        return {"family": "xmma", "arch": m["arch"], "operation": m["op"], "types": m["types"],
                "layouts": m["layout"], "cta_tile": m["tile"], "stages": int(m["stages"]) if m["stages"] else None,
                "cluster": m["cluster"], "warpgroups": m["warpgroups"], "warps": m["warps"],
                "built_for": "TensorRT" if n.endswith("_trt") else "cuDNN" if "cudnn" in n else "cuBLAS" if "cublas" in n else None,
                "decoded_from": UNDOCUMENTED}
    m = _NVJET.search(n)
    if m:
        flags = [f for f in (m["rest"] or "").split("_") if f]
        return {"family": "nvjet", "arch": m["arch"], "types": "/".join(_NVJET_TYPES.get(c, c) for c in m["types"]),
                "cta_tile": f"{m['tile']}x{m['k']}" if m["tile"].count("x") == 1 else m["tile"],
                "stages": int(m["stages"]), "cluster": m["cluster"], "ctas_per_mma": int(m["ctas"]) if m["ctas"] else None,
                "raster": {"v": "vertical", "h": "horizontal"}.get(m["raster"]), "flags": ", ".join(flags) or None,
                "layouts": m["layout"], "decoded_from": UNDOCUMENTED}
    if "cudnn" in n.lower() or "fort_native" in n or "sdpa" in n:
        k = _KNOB.search(n)
        if k:
            return {"family": "cuDNN", "engine": int(k["engine"]) if k["engine"] else None,
                    "knob": int(k["knob"]) if k["knob"] else None, "decoded_from": UNDOCUMENTED}
    return None


def describe_decoded(d: dict | None) -> str | None:
    """A decoded name as one line: ``sm90 tile 128x128x64 cluster 1x1x1 ...``.

    >>> describe_decoded({"family": "nvjet", "cta_tile": "64x8x64", "stages": 16, "decoded_from": "x"})
    'nvjet: cta_tile=64x8x64, stages=16'
    """
    if not d:
        return None
    parts = [f"{k}={v}" for k, v in d.items() if k not in ("family", "decoded_from") and v not in (None, "")]
    return f"{d.get('family')}: " + ", ".join(parts)


def producer_of(name, backend, inductor_launch=False, variant_producer=None) -> str:
    """The producer of one kernel from its name, its backend and what the trace and process say.

    >>> producer_of("triton_poi_fused_add_0", "Triton"), producer_of("matmul_kernel", "Triton")
    ('Inductor', 'Triton')
    >>> producer_of("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(T1::Params)", "cuBLAS")
    'CUTLASS'
    """
    n = str(name or "")
    if variant_producer in ("Inductor", "Helion"):
        return variant_producer
    if n.startswith("_helion_"):
        return "Helion"
    if inductor_launch or (backend == "Triton" and INDUCTOR_NAME.match(n)):
        return "Inductor"
    if variant_producer:
        return variant_producer
    if backend in ("TensorRT", "TensorRT-LLM") or _TRT.search(n):
        return backend if backend in ("TensorRT", "TensorRT-LLM") else "TensorRT"
    if backend != "FlashAttention" and _CUTLASS_BUILT.search(n):
        return "CUTLASS"
    return str(backend) if backend else "other"


def _kwargs_text(s) -> str | None:
    """Inductor's ``kernel_kwargs`` (``XBLOCK=2,R0_BLOCK=2048``) as a config: ``XBLOCK=2, R0_BLOCK=2048``."""
    if not isinstance(s, str) or not s.strip():
        return None
    return ", ".join(p.strip() for p in s.split(",") if p.strip())


def _fused_ops_from_name(name: str) -> str | None:
    """Inductor names a kernel after the ops it fused (``triton_red_fused_gelu_sum_0``): the
    words between ``fused_`` and the index, as the name holds them."""
    m = re.match(r"^triton_\w+?_fused_(.+?)_\d+$", name)
    return m[1] if m else None


def annotate_producers(kernels: pd.DataFrame, trace) -> pd.DataFrame:
    """``kernels`` (analysis's own frame, changed in place) with ``producer``, ``num_warps``, ``num_stages``, ``num_ctas``,
    ``config``, ``config_source``, ``registers_source``, ``spills`` (local memory: Triton's
    n_spills), ``source_ops`` (Inductor's fused ATen ops), ``kernel_source`` (the Triton
    function's file:line) and ``decoded`` (a library name's fields, one line) added.

    >>> k = annotate_producers(rep.kernels, rep.trace)                 # doctest: +SKIP
    >>> k[["short_name", "producer", "config", "num_warps"]]           # doctest: +SKIP
    """
    k = kernels
    n = len(k)
    names = k["name"].astype(object).to_numpy()
    backend = k["backend"].astype(object).to_numpy() if "backend" in k.columns else np.full(n, None, object)
    op_name, op_kwargs, op_warps, op_stages = _op_knobs(k, trace.ops)
    # An Inductor launch event is the op named as the kernel it launches.
    name_codes, name_uniques = factorize(names, use_na_sentinel=True)   # by identity first: long names
    op_codes = pd.Index(name_uniques).get_indexer(op_name) if n else np.zeros(0, np.int64)
    ind = (op_codes == name_codes) & (name_codes >= 0)
    by_name, tuned = _variants_by_name(trace), _candidates_by_kernel(trace)
    bx = _ints(k, "block_x")
    threads = bx * _ints(k, "block_y", 1) * _ints(k, "block_z", 1)
    regs, smem = _ints(k, "registers_per_thread"), _ints(k, "shared_mem_bytes")
    # One answer per distinct (name, launch shape, launching op's knobs): a trace has millions
    # of launches of a few hundred such keys.
    kw_codes = pd.factorize(op_kwargs, use_na_sentinel=True)[0] if n else np.zeros(0, np.int64)
    back_codes = pd.factorize(backend, use_na_sentinel=True)[0] if n else np.zeros(0, np.int64)
    codes = _key_codes(name_codes, back_codes, kw_codes, op_warps, op_stages, ind, threads, regs, smem)
    firsts = np.unique(codes, return_index=True)[1]

    def opt(v):
        return None if v < 0 else int(v)
    answers = [_one(names[i], backend[i], bool(ind[i]), opt(op_warps[i]), opt(op_stages[i]), op_kwargs[i],
                    threads[i], regs[i], smem[i], by_name.get(names[i]), tuned.get(names[i])) for i in firsts.tolist()]
    _put_answers(k, answers, codes)
    layers = getattr(trace, "tensorrt_layers", None)
    if layers is not None and len(layers):
        _annotate_layers(k, names, layers)
    return k


def _op_knobs(k, ops) -> tuple:
    """Per launch of ``k``, its launching op's name, ``kernel_kwargs`` (None where there is no op
    or no value), ``num_warps`` and ``num_stages`` (-1 there): Inductor's launch events carry them."""
    n = len(k)
    # The launching op's knobs (Inductor's launch events), by the kernel's op row.
    rows = k["op_index"].to_numpy(dtype="float64", na_value=np.nan) if "op_index" in k.columns else np.full(n, np.nan)
    ok = np.isfinite(rows) & (rows >= 0) & (rows < len(ops))
    idx = np.where(ok, np.nan_to_num(rows), 0).astype(np.int64)

    def from_op(col):
        """The launching op's ``col`` per launch (None where there is none)."""
        out = np.full(n, None, dtype=object)
        if col in ops.columns and len(ops):
            vals = ops[col].to_numpy(dtype=object, na_value=None)
            out[ok] = vals[idx[ok]]
        return out

    def int_from_op(col):
        out = np.full(n, -1, dtype=np.int64)
        if col in ops.columns and len(ops):
            vals = ops[col].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
            out[ok] = vals[idx[ok]]
        return out
    return from_op("name"), from_op("kernel_kwargs"), int_from_op("num_warps"), int_from_op("num_stages")


def _variants_by_name(trace) -> dict:
    """``{kernel name: [compiled variant]}`` of ``trace.variants``, each variant a dict with None
    for a missing value."""
    variants = getattr(trace, "variants", None)
    by_name: dict = {}
    if variants is not None and len(variants):
        for v in variants.to_dict("records"):
            by_name.setdefault(v["name"], []).append({c: (None if x is pd.NA or (isinstance(x, float) and np.isnan(x)) else x)
                                                      for c, x in v.items()})
    return by_name


def compiled_variant(trace, name, threads, registers, shared_mem) -> dict | None:
    """The compiled variant (a row of ``trace.variants`` as a dict) that a launch of ``name`` with
    this block size, registers and shared memory ran, matched as the ``config`` column is; None
    where none or several with different configs match (the kernel rules read its PTX facts).

    >>> r = ks.load("advice/triton_strided_read.before.ksreport.json.gz")
    >>> compiled_variant(r.trace, "scale_strided", 128, 30, 0)["loads_scalar"]
    8
    """
    return _variant_of(_variants_by_name(trace).get(name), int(threads), int(registers), int(shared_mem))[0]


def _candidates_by_kernel(trace) -> dict:
    """``{kernel name: [autotuning candidate]}`` of ``trace.autotune`` (config, warps, registers)."""
    tuned: dict = {}
    at = getattr(trace, "autotune", None)
    if at is not None and len(at):
        for r in at[["kernel", "config", "num_warps", "registers"]].to_dict("records"):
            tuned.setdefault(r["kernel"], []).append(r)
    return tuned


def _key_codes(name_codes, back_codes, kw_codes, op_warps, op_stages, ind, threads, regs, smem) -> np.ndarray:
    """A code per launch, equal for launches of one (name, backend, launching op's knobs,
    launch shape): the launches that get one answer."""
    if not len(name_codes):
        return np.zeros(0, np.int64)

    # Three int64 keys, each packing several small fields (clipped: a damaged trace's absurd
    # values only share an answer with each other): fewer columns to group by is most of the speed.
    def field(v, bits):
        return np.clip(v, -1, (1 << bits) - 2) + 1
    keys = pd.DataFrame({
        "who": (field(name_codes, 40) << 20) | field(back_codes, 20),
        "op": (field(kw_codes, 40) << 21) | (field(op_warps, 10) << 11) | (field(op_stages, 10) << 1) | ind,
        "shape": (field(threads, 21) << 42) | (field(regs, 10) << 32) | field(smem, 32)})
    return keys.groupby(["who", "op", "shape"], sort=False).ngroup().to_numpy()


def _put_answers(k, answers, codes) -> None:
    """Each answer's columns (:func:`_one`) written to the launches of its code, in place:
    knobs as nullable integers, the rest as objects."""
    n = len(k)
    for c in ("producer", "num_warps", "num_stages", "num_ctas", "config", "config_source", "spills",
              "source_ops", "kernel_source", "decoded"):
        if c in ("num_warps", "num_stages", "num_ctas", "spills"):
            per = np.array([-1 if a[c] is None or a[c] is pd.NA else int(a[c]) for a in answers], dtype=np.int64)
            vals = per[codes] if n else np.empty(0, np.int64)
            k[c] = pd.arrays.IntegerArray(np.maximum(vals, 0), vals < 0)
        else:
            per = np.empty(len(answers), dtype=object)
            per[:] = [a[c] for a in answers]
            k[c] = pd.Series(per[codes] if n else np.empty(0, dtype=object), dtype=object, index=k.index)


def tactic_layers(names, layers) -> dict:
    """``{kernel name: [layer rows]}``: the engine's layers whose tactic (``TacticName``) is the
    kernel, by name: the name itself, or the tactic followed by a suffix or inside a
    demangled name (the longest tactic that fits wins, so a tactic that is a prefix of another
    does not take the other's kernels).

    >>> import pandas as pd
    >>> layers = pd.DataFrame({"name": ["Conv_0", "Conv_5"], "layer_type": ["CaskConvolution"] * 2,
    ...                        "tactic": ["sm80_xmma_fprop_a", "sm80_xmma_fprop_a_aACCESS"]})
    >>> {n: [r["name"] for r in rows] for n, rows in tactic_layers(["sm80_xmma_fprop_a_aACCESS"], layers).items()}
    {'sm80_xmma_fprop_a_aACCESS': ['Conv_5']}
    """
    by_tactic = {}
    for r in layers.to_dict("records"):
        t = r.get("tactic")
        if isinstance(t, str) and t:
            by_tactic.setdefault(t, []).append(r)
    tactics = sorted(by_tactic, key=len, reverse=True)
    out = {}
    for n in dict.fromkeys(str(x) for x in names if isinstance(x, str) and x):
        for t in tactics:
            at = n.find(t)
            # a whole identifier: nothing of a longer name before it, no letter or digit after
            while at >= 0 and ((at and (n[at - 1].isalnum() or n[at - 1] == "_")) or
                               (at + len(t) < len(n) and n[at + len(t)].isalnum())):
                at = n.find(t, at + 1)
            if at >= 0:
                out[n] = by_tactic[t]
                break
    return out


BY_TACTIC = "its tactic's name (no other layer runs it)"
BY_ORDER = "the engine's layer order (a whole pass of its tactics, in order, on one stream)"


def _annotate_layers(k, names, layers) -> None:
    """``trt_layer`` (the layer the launch ran), ``trt_layer_type``, ``trt_layers`` (how many
    layers use its tactic; 0 for a kernel no layer names) and ``trt_layer_source``. A tactic
    that one layer runs names it. One that several layers share names none by itself: a launch
    is given one of them only inside a whole pass of the engine, every tactic layer's kernel in
    the inspector's layer order on one stream, where its position says which; elsewhere it stays
    empty (not guessed), with the type where all those layers have one. A launch that a layer's
    tactic names is TensorRT's."""
    found = tactic_layers(names, layers)
    one = {n: rows[0]["name"] if len(rows) == 1 else None for n, rows in found.items()}
    kind = {n: (rows[0]["layer_type"] if len({r["layer_type"] for r in rows}) == 1 else None)
            for n, rows in found.items()}
    as_text = pd.Series(names, dtype=object, index=k.index)
    known = as_text.isin(list(found))
    layer = as_text.map(one).astype(object).where(known, None)
    ltype = as_text.map(kind).astype(object).where(known, None)
    # (np.array(None): None as numpy's type stubs take it; an object array either way)
    source = pd.Series(np.where(layer.notna(), BY_TACTIC, np.array(None)), dtype=object, index=k.index)
    for i, row in _by_engine_order(k, names, found, layers).items():
        if pd.isna(layer.iat[i]):       # a unique tactic's layer is already known by name
            layer.iat[i], ltype.iat[i], source.iat[i] = row["name"], row["layer_type"], BY_ORDER
    k["trt_layer"], k["trt_layer_type"], k["trt_layer_source"] = (
        c.astype(object).where(c.notna(), None) for c in (layer, ltype, source))
    k["trt_layers"] = as_text.map({n: len(rows) for n, rows in found.items()}).fillna(0).astype("Int64")
    hit = (k["trt_layers"] > 0).to_numpy(dtype=bool)
    if hit.any():
        k.loc[hit, "producer"] = "TensorRT"


def _by_engine_order(k, names, found, layers) -> dict:
    """``{launch position: layer row}`` for the launches inside whole passes of the engine: on
    one stream, in start order, the kernels that name a tactic are exactly the tactic layers'
    kernels in the engine's layer order. Only needed where a tactic is shared."""
    plan = [r for r in layers.sort_values("index").to_dict("records") if isinstance(r.get("tactic"), str) and r["tactic"]]
    if not plan or all(len(rows) == 1 for rows in found.values()):
        return {}
    # Each launch's tactic (the one its name matched), and the plan as tactics.
    tactic_of = {n: rows[0]["tactic"] for n, rows in found.items()}
    want = [r["tactic"] for r in plan]
    m = len(want)
    out = {}
    order = pd.DataFrame({"pos": np.arange(len(k)), "tactic": [tactic_of.get(n) for n in names],
                          "stream": k["stream"].to_numpy() if "stream" in k.columns else 0,
                          "device": k["device_index"].to_numpy() if "device_index" in k.columns else 0,
                          "start": k["start_us"].to_numpy() if "start_us" in k.columns else np.arange(len(k))})
    order = order[order["tactic"].notna()]
    for _, g in order.sort_values("start", kind="stable").groupby(["device", "stream"], sort=False, dropna=False):
        seq, pos = g["tactic"].tolist(), g["pos"].tolist()
        i = 0
        while i + m <= len(seq):
            if seq[i:i + m] == want:
                out.update({pos[i + j]: plan[j] for j in range(m)})
                i += m
            else:
                i += 1
    return out


def _ints(k, col, default=-1) -> np.ndarray:
    if col not in k.columns:
        return np.full(len(k), default, np.int64)
    return k[col].astype("Int64").fillna(default).to_numpy(dtype=np.int64)


def _one(name, backend, inductor_launch, warps, stages, kwargs, threads, regs, smem, variants, tuned=None) -> dict:
    out: dict = {"producer": None, "num_warps": None, "num_stages": None, "num_ctas": None, "config": None,
           "config_source": None, "spills": None, "source_ops": None, "kernel_source": None, "decoded": None}
    if inductor_launch and kwargs is not None and variants:
        # The trace names Inductor's config; its launcher (registers as ptxas reported them, which
        # CUPTI may report otherwise) is the one of that config and warps.
        v, why = _variant_of([x for x in variants if x.get("config") == _kwargs_text(kwargs)
                              and x.get("num_warps") == warps], threads, -1, smem)
    else:
        v, why = _variant_of(variants, threads, regs, smem)
    out["producer"] = producer_of(name, backend, inductor_launch, v["producer"] if v else
                                  (variants[0]["producer"] if variants else None))
    if inductor_launch and (warps is not None or kwargs is not None):
        out.update(num_warps=warps, num_stages=stages, config=_kwargs_text(kwargs), config_source=FROM_TRACE)
    if v is not None:
        for c in ("num_warps", "num_stages", "num_ctas"):
            if out[c] is None:
                out[c] = v.get(c)
        if out["config"] is None:
            out["config"] = _as_tuned(v, tuned) or v.get("config") or None
            if out["config"] and out["config_source"] == FROM_TRACE:
                out["config_source"] = FROM_TRACE_AND_PROCESS
        out["config_source"] = out["config_source"] or FROM_PROCESS
        out["spills"] = v.get("spills")
        out["kernel_source"] = v.get("source")
    elif why and out["config_source"] is None:
        out["config_source"] = why
    if out["config"] is None and tuned and why != AMBIGUOUS:
        # A kernel whose variants do not hold its knobs (Helion's are module constants): the
        # tuner's candidate with these warps (and registers, where known), when only one has them.
        hits = {r["config"] for r in tuned if r.get("config") and r.get("num_warps") is not None
                and r["num_warps"] is not pd.NA and int(r["num_warps"]) * 32 == threads
                and (r.get("registers") is None or r["registers"] is pd.NA or regs < 0 or int(r["registers"]) == regs)}
        if len(hits) == 1:
            out["config"], out["config_source"] = hits.pop(), FROM_TUNER
            out["num_warps"] = out["num_warps"] if out["num_warps"] is not None else threads // 32
    ops = next((x.get("source_ops") for x in variants or [] if x.get("source_ops")), None)
    if ops:
        out["source_ops"] = ops
    elif out["producer"] == "Inductor":
        frag = _fused_ops_from_name(str(name))
        out["source_ops"] = f"{frag} (from the kernel name)" if frag else None
    if out["producer"] not in ("Inductor", "Triton", "Helion"):
        out["decoded"] = describe_decoded(decode_name(name))
    return out


def _as_tuned(v, tuned) -> str | None:
    """The tuner's own text of a compiled variant's config (``BLOCK_M=64, ...``), where one of
    its candidates has the variant's warps and every knob among the variant's constants (which
    also hold Triton's specializations, such as a stride equal to 1)."""
    have = {p.strip() for p in str(v.get("config") or "").split(",")}
    hits = {r["config"] for r in tuned or [] if r.get("config") and r.get("num_warps") is not pd.NA
            and r.get("num_warps") == v.get("num_warps")
            and {p.strip() for p in r["config"].split(",")} <= have}
    return hits.pop() if len(hits) == 1 else None


def _variant_of(variants, threads, regs, smem):
    """(the one compiled variant a launch matches, or None with why not)."""
    if not variants:
        return None, None
    hits = []
    for v in variants:
        w = v.get("num_warps")
        if w is not None and threads > 0 and int(w) * 32 * int(v.get("num_ctas") or 1) != threads and int(w) * 32 != threads:
            continue
        r = v.get("registers")
        # CUPTI records at least 16 registers per thread: Triton's n_regs of 10 and 14 were
        # recorded as 16 on the H200 (tests/data/tuning/inductor_run).
        if r is not None and regs >= 0 and max(int(r), MIN_RECORDED_REGISTERS) != max(regs, MIN_RECORDED_REGISTERS):
            continue
        s = v.get("shared_mem_bytes")
        if s is not None and smem >= 0 and int(s) != smem:
            continue
        hits.append(v)
    if not hits:
        return None, NO_MATCH
    configs = {(h.get("config"), h.get("num_warps"), h.get("num_stages")) for h in hits}
    if len(configs) > 1:
        return None, AMBIGUOUS
    return hits[0], None
