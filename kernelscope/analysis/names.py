"""Readable kernel names: templates, argument lists and namespaces folded away.

The full name stays in the ``name`` column; ``short_name`` is for tables and charts. Library
GEMM names (cuBLAS nvjet/xmma, CUTLASS, Tensile) are decoded into "<lib> GEMM <tile> (<arch>)",
ATen's elementwise/reduce templates into the op they apply, everything else folds to
``namespace::function``.
"""
from __future__ import annotations

import re
from functools import lru_cache

from kernelscope.analysis.name_facets import name_facets

_STD_OPS = {"plus": "add", "minus": "sub", "multiplies": "mul", "divides": "div",
            "maximum": "max", "minimum": "min", "logical_and": "and", "logical_or": "or"}
# Functor wrappers that carry the real op as a template argument.
_WRAPPERS = {"AUnary", "BUnary", "Binary", "Unary", "BinaryOpScalar", "BinaryOpScalarList", "BinaryOpList",
             "TernaryOpScalar", "TernaryOpList", "PointwiseOpScalar", "PointwiseOpScalarList",
             "PointwiseOpScalarTensor", "UnaryOp", "ZeroOp", "Copy", "BinaryOpScalarTensor",
             "TernaryOpScalarList", "TernaryOpListFunctor"}
# Namespaces that say nothing to a reader (PyTorch internals, CUB's versioned inline namespace).
_NOISE_NS = re.compile(r"^(at|at_cuda_detail|native|cuda|detail|impl|internal|c10|std|__\d+|_V\d+|\w*_NS|"
                       r"CUB_\d+\w*|THRUST_\d+\w*|cuda_cub|[a-z]+_internal|anonymous)$")
_ARCH = r"(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm\d+)"
# nsys prints "<unnamed>" and "(int)4" where CUPTI prints "(anonymous namespace)" and "4".
_ANON = r"(?:\(anonymous namespace\)::|<unnamed>::)?"


@lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """A readable name for a kernel; the recorded name stays available as ``name``.

    >>> short_name("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN")
    'cuBLAS GEMM 128x256 (sm90)'
    >>> short_name("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
    ...            "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >"
    ...            "(int, at::native::AUnaryFunctor<float, float, float, "
    ...            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)")
    'elementwise Mul (vectorized x4)'
    """
    if not isinstance(name, str) or not name.strip():
        return "" if name is None else str(name)
    name = demangle_if_mangled(name)   # a mangled symbol (Proton, Nsight Compute, cuDNN's CUTLASS kernels)
    if name.startswith("_Z"):          # one the C++ runtime rejects too: read what can be read
        return _undemangled(name)
    for decode in _DECODERS:
        out = decode(name)
        if out:
            return out
    return _fold(name)


# Tokens of a recorded name that can tell two kernels apart (template arguments, layouts, tiles).
_TOKEN = re.compile(r"[A-Za-z0-9]+")
# At most this many tokens go into a name to tell it from its namesakes.
MAX_TELL_TOKENS = 3


def unique_short_names(names) -> dict:
    """Readable names that are unique within a set of recorded names: where two kernels read the
    same, each says what tells it apart: what differs among the facets :func:`name_facets` reads
    (dtype, layout, split-K, operands, items per thread), else the tokens of its recorded name that
    its namesakes lack; failing both, a number in order of appearance.

    >>> u = unique_short_names(["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
    ...                         "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"])
    >>> sorted(u.values())
    ['cuBLAS GEMM 256x128 (sm90) [NNT]', 'cuBLAS GEMM 256x128 (sm90) [TNT]']
    """
    names = list(dict.fromkeys(str(n) for n in names))
    short = {n: short_name(n) for n in names}
    groups = {}
    for n in names:
        groups.setdefault(short[n], []).append(n)
    taken = set(short.values())
    for s, group in groups.items():
        if len(group) < 2:
            continue
        new = _told_by_facets(group) or _told_by_tokens(group)
        seen = {}
        for n in group:
            v = f"{s} [{new[n]}]" if new.get(n) else None
            if v is None or v in taken or [f"{s} [{x}]" for x in new.values()].count(v) > 1:
                i = seen.get(s, 0) + 1
                while f"{s} #{i}" in taken:
                    i += 1
                seen[s] = i
                v = f"{s} #{i}"
            taken.add(v)
            short[n] = v
    return short


def _told_by_facets(group) -> dict | None:
    """Each name's facets that differ within its group ("bf16, 2 inputs"), or None where they
    leave two alike."""
    facets = {n: name_facets(n) for n in group}
    keys = list(dict.fromkeys(k for f in facets.values() for k in f))
    differ = [k for k in keys if len({f.get(k, "") for f in facets.values()}) > 1]
    out = {n: ", ".join(v for k in differ if (v := facets[n].get(k))) for n in group}
    return out if differ and all(out.values()) and len(set(out.values())) == len(group) else None


def _told_by_tokens(group) -> dict:
    toks = {n: [t for t in _TOKEN.findall(_readable(n)) if not _NOISE_TOKEN.match(t)] for n in group}
    counts = {}
    for n in group:
        for t in set(toks[n]):
            counts[t] = counts.get(t, 0) + 1
    return {n: " ".join([t for t in dict.fromkeys(toks[n])
                         if counts[t] < len(group) and len(t) <= 24][:MAX_TELL_TOKENS]) for n in group}


# Tokens that tell no reader anything (namespaces, std::array's "3ul").
_NOISE_TOKEN = re.compile(r"^(c10|at|native|std|cuda|detail|\d+ul)$")


def _readable(n):
    s = demangle_if_mangled(n)
    if s.startswith("_Z"):
        from kernelscope.trace.demangle import mangled_words
        return " ".join(mangled_words(s))
    return s


_TOLD_APART = re.compile(r" (\[[^\]]*\]|#\d+)$")


def base_short_name(short) -> str:
    """A readable name without what :func:`unique_short_names` added to tell namesakes apart.

    >>> base_short_name("cuBLAS GEMM 256x128 (sm90) [NNT]"), base_short_name("CuPy copy #2")
    ('cuBLAS GEMM 256x128 (sm90)', 'CuPy copy')
    """
    return _TOLD_APART.sub("", short) if isinstance(short, str) else short


def demangle_if_mangled(name: str) -> str:
    """The demangled name of a ``_Z...`` symbol, else the name."""
    if isinstance(name, str) and name.startswith("_Z"):
        from kernelscope.trace.demangle import demangle
        return demangle(name)
    return name


# -- library GEMMs and other self-describing names --------------------------------------------
def _nvjet(n):
    m = re.match(r"nvjet_(?:(sm\d+)_)?[a-z]+_(?:mma_)?(\d+x\d+)", n)
    if m:
        return f"cuBLAS GEMM {m.group(2)}" + (f" ({m.group(1)})" if m.group(1) else "")
    return None


def _xmma(n):
    m = re.match(_ARCH + r"_xmma_(gemm|fprop|dgrad|wgrad)\w*?(?:tilesize|tile)(\d+x\d+)", n)
    if not m:
        return None
    arch, kind, tile = m.groups()
    lib = "cuBLAS" if "cublas" in n else "cuDNN" if ("cudnn" in n or kind != "gemm") else "xmma"
    what = "GEMM" if kind == "gemm" else f"conv {kind}"
    extra = ", ffma" if "ffma" in n else ""
    return f"{lib} {what} {tile} ({arch}{extra})"


def _arch_gemm(n):
    # ampere_sgemm_128x64_nn, ampere_bf16_s16816gemm_bf16_256x128_..., volta_s884cudnn_fp16_128x128_...
    m = re.match(_ARCH + r"_(\w*?)(gemm|cudnn)\w*?_(\d+x\d+)", n)
    if not m:
        return None
    arch, kind, lib, tile = m.groups()
    if lib == "cudnn":
        return f"cuDNN conv {tile} ({arch})"
    prec = re.match(r"(?:([a-z]+\d*)_)?([a-z]?)(\d*)", kind)
    label = "SGEMM" if kind == "s" else "DGEMM" if kind == "d" else "CGEMM" if kind == "c" else "GEMM"
    return f"cuBLAS {label} {tile} ({arch}" + (f", {prec.group(1)}" if prec and prec.group(1) else "") + ")"


def _cutlass(n):
    m = re.search(r"\b(cutlass(3x)?_(?:(\d+)_)?(?:(sm\d+)_)?\w+?)(?:\b|::)", n)
    if not m or not re.search(r"gemm|fprop|dgrad|wgrad|conv", m.group(1)):
        return None
    body = m.group(1)
    sm = m.group(4) or (f"sm{m.group(3)}" if m.group(3) else None)
    kind = re.search(r"(fprop|dgrad|wgrad)", body)
    what = f"conv {kind.group(1)}" if kind else "GEMM"
    tile = re.search(r"_(\d+x\d+)(?:x\d+)?_", body)
    path = "simt" if "_simt_" in body else "wmma" if "_wmma_" in body else None
    tail = ", ".join(x for x in (sm, path) if x)
    return f"CUTLASS {what}" + (f" {tile.group(1)}" if tile else "") + (f" ({tail})" if tail else "")


def _tensile(n):
    m = re.match(r"(?:Custom_)?Cijk_\w*?_MT(\d+x\d+)x\d+(?:_MI(\d+x\d+x\d+))?", n)
    if m:
        lib = "hipBLASLt" if "UserArgs" in n else "rocBLAS"
        return f"{lib} GEMM {m.group(1)}" + (f" (MI{m.group(2)})" if m.group(2) else "")
    return None


def _nccl(n):
    m = re.match(r"(?:void )?nccl(?:Dev)?Kernel_(\w+)", n)
    if m:
        return "NCCL " + m.group(1).replace("_", " ")
    return None


INDUCTOR_KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template",
                  "for": "foreach", "unk": "unknown kind", "mm": "template", "bmm": "template"}
# ATen op names of several words, so that Inductor's "fused_" list splits at op boundaries.
_MULTI_WORD_OPS = sorted((
    "native_batch_norm_legit_no_training", "native_batch_norm_legit_functional", "native_batch_norm_legit",
    "native_layer_norm", "native_batch_norm", "native_group_norm", "layer_norm", "batch_norm", "group_norm",
    "rms_norm", "to_copy", "scaled_dot_product_cudnn_attention", "scaled_dot_product_flash_attention",
    "scaled_dot_product_efficient_attention", "prepare_softmax_online", "log_softmax", "constant_pad_nd",
    "max_pool2d_with_indices", "avg_pool2d", "index_put", "index_select", "embedding_dense_backward",
    "native_dropout", "threshold_backward", "convolution_backward", "native_batch_norm_backward",
    "native_layer_norm_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "unsafe_view", "all_reduce", "flex_attention_backward", "flex_attention", "new_zeros", "full_like",
    "zeros_like", "ones_like", "scatter_add", "index_add", "sum_to_size", "masked_fill", "where_self",
    "addmm", "bmm", "mm"), key=len, reverse=True)
# Words that end an ATen op's name and are no op alone (native_batch_norm_legit_no_training,
# max_pool2d_with_indices): one the list above lacks still joins the op before it.
_OP_TAILS = {"backward", "forward", "legit", "no", "training", "functional", "with", "indices", "nd",
             "like", "online", "default", "out", "grad", "input", "weight", "self", "scalar", "tensor"}


def inductor_ops(fused: str) -> list:
    """The ATen ops an Inductor kernel fuses, from its name's ``fused_`` part.

    >>> inductor_ops("_to_copy_add_native_layer_norm_transpose_view")
    ['to_copy', 'add', 'native_layer_norm', 'transpose', 'view']
    >>> inductor_ops("_native_batch_norm_legit_no_training_relu")
    ['native_batch_norm_legit_no_training', 'relu']
    """
    words, out, i = [w for w in fused.split("_") if w], [], 0
    while i < len(words):
        for op in _MULTI_WORD_OPS:
            parts = op.split("_")
            if words[i:i + len(parts)] == parts:
                out.append(op)
                i += len(parts)
                break
        else:
            if words[i] in _OP_TAILS and out:
                out[-1] += "_" + words[i]
            else:
                out.append(words[i])
            i += 1
    return out


# Triton's older launchers append the signature's specialization (_0d1d2de): no op either.
_INDUCTOR = re.compile(r"triton_(poi|red|per|tem|for|unk|mm|bmm)_(?:fused_?)?(\w*?)(?:_?(\d+))?(?:_(?:\d+[a-z]+)+)?$")


def _inductor(n):
    m = _INDUCTOR.match(n)
    if m:
        ops = inductor_ops(m.group(2))
        # The number tells kernels of one graph apart (and finds them in Inductor's output_code.py):
        # it goes before the op list, which a table cuts at its end.
        return (f"{INDUCTOR_KINDS[m.group(1)]}" + (f" _{m.group(3)}" if m.group(3) else "")
                + (f": {' + '.join(ops)}" if ops else "") + " (Triton)")
    return None


def _helion(n):
    m = re.match(r"_helion_(\w+)$", n)
    if m:
        return f"Helion {m.group(1)} (Triton)"
    return None


def describe(name: str, backend: str | None = None) -> str:
    """What a kernel is, in words, for the details panel ("" when the name says no more than itself).

    >>> describe("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0")[:72]
    'Inductor-generated Triton kernel: a persistent reduction (each row reduc'
    """
    if not isinstance(name, str):
        return ""
    m = _INDUCTOR.match(name)
    if m:
        kind = m.group(1)
        what = {"poi": "a pointwise kernel (one output element per thread, no reduction)",
                "red": "a reduction kernel (loops over the reduced dimension in blocks)",
                "per": "a persistent reduction (each row reduced in one block, held in registers)",
                "tem": "a template kernel (a GEMM or attention template, autotuned)",
                "for": "a foreach kernel (one launch over a list of tensors)",
                "unk": "a kernel of unknown kind"}.get(kind, "a template kernel (a GEMM template, autotuned)")
        ops = inductor_ops(m.group(2))
        fused = f" fusing {', '.join(ops[:-1]) + ' and ' + ops[-1] if len(ops) > 1 else ops[0]}" if ops else ""
        return f"Inductor-generated Triton kernel: {what}{fused}."
    if name.startswith("_helion_"):
        return (f"A Helion kernel (@helion.kernel {name[len('_helion_'):]}): Helion compiles it to Triton and "
                "launches it through Triton's launcher, so it reports as a Triton kernel would.")
    if backend == "XLA":
        return "An XLA-generated kernel (named after its HLO fusion)."
    return ""


def _cudnn_sdpa(n):
    m = re.search(r"sdpa_(sm\d+)_flash_(fprop|bprop)", n)
    if m:
        return f"cuDNN flash attention {m.group(2)} ({m.group(1)})"
    return None


def _numba(n):
    m = re.match(r"(?:void )?cudapy::(?:[\w.]+::)*(\w+?)(?:\$\d+)?(?:\(|$)", n)
    if m:
        return f"Numba {m.group(1)}"
    return None


def _wrapped(n):
    # cutlass::Kernel2<X>, cutlass::device_kernel<flash::enable_sm90_or_later<X>>: X is the kernel.
    m = re.match(r"(?:void )?cutlass\w*::(?:Kernel2?|device_kernel)<(.*)>(?:\(.*\))?$", n)
    if not m:
        return None
    inner = m.group(1).strip()
    while True:
        w = re.match(r"[\w:]*enable_sm\w*<(.*)>$", inner)
        if not w:
            break
        inner = w.group(1).strip()
    return short_name(inner) if inner else None


def _cupy(n):
    m = re.match(r"cupyx?_(\w+?)(?:__\w+)?$", n)
    if m:
        return f"CuPy {m.group(1)}"
    return None


# cutlass::half_t and kin: the element type of a CUTLASS template, as the rest of the view spells it.
_CUTLASS_TYPES = {"tfloat32_t": "tf32", "half_t": "fp16", "bfloat16_t": "bf16", "float_e4m3_t": "fp8 e4m3",
                  "float_e5m2_t": "fp8 e5m2", "int4b_t": "int4"}


def _undemangled(n):
    """A mangled name that no demangler takes (cuDNN's 1,700-character CUTLASS convolutions):
    its leading namespace::function, or for CUTLASS the conv kind, threadblock tile and type."""
    from kernelscope.trace.demangle import mangled_words
    words = mangled_words(n)
    if not words:
        return n
    if "cutlass" in words[0].lower():
        kind = next((f"conv {m.group(1).lower()}" for w in words
                     for m in [re.match(r"Conv[23]d(Fprop|Dgrad|Wgrad)", w)] if m), None)
        kind = kind or ("conv" if "ImplicitGemmConvolution" in words else "GEMM")
        i = words.index("GemmShape") if "GemmShape" in words else -1
        tile = "x".join(words[i + 1:i + 3]) if i >= 0 and all(w.isdigit() for w in words[i + 1:i + 3]) else ""
        extra = [x for x in (next((w.lower() for w in words if re.fullmatch(r"Sm\d+", w)), None),
                             next((_CUTLASS_TYPES[w] for w in words if w in _CUTLASS_TYPES), None)) if x]
        return f"CUTLASS {kind}" + (f" {tile}" if tile else "") + (f" ({', '.join(extra)})" if extra else "")
    head = re.match(r"_ZN?((?:\d+[A-Za-z_]\w*?)+)(?=[^0-9A-Za-z_]|[A-Z]|$)", n)
    k = len(re.findall(r"\d+", head.group(1))) if head else 1
    return _fold("::".join(words[:k]))


# -- ATen's templates ---------------------------------------------------------------------------
def _aten_op(args: str) -> str | None:
    """The op an ATen elementwise/reduce kernel applies, from its template arguments."""
    m = re.search(r"Functor(?:OnSelf|OnOther)?_(\w+?)<", args)
    if m:
        return m.group(1)
    for f in re.findall(r"(\w+?)Functor<", args)[::-1]:
        if f not in _WRAPPERS:
            return f.split("::")[-1]
    m = re.search(r"(\w+?)CUDAKernelImpl\b", args) or re.search(r"(\w+?)_kernel_cuda\b", args)
    if m:
        return m.group(1)
    m = re.search(r"(\w+?)_kernel_impl\b", args)
    if m and not m.group(1).startswith("gpu"):
        return m.group(1)
    m = re.search(r"std::(plus|minus|multiplies|divides|maximum|minimum|logical_and|logical_or)<", args)
    if m:
        return _STD_OPS[m.group(1)]
    m = re.search(r"(\w+?)_functor<", args) or re.search(r"::(\w+?)Ops<", args)
    if m:
        return m.group(1)
    m = re.search(r"launch_(\w+?)\(", args) or re.search(r"(\w+?)_kernel\w*\(", args)
    return m.group(1) if m else None


def _aten_elementwise(n):
    m = re.match(r"(?:void )?at::native::" + _ANON +
                 r"(vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel\w*)<(?:\(int\))?(\d+)?", n)
    if not m:
        return None
    op = _aten_op(n[m.end():]) or "op"
    if m.group(1).startswith("vectorized"):
        how = f" (vectorized x{m.group(2)})" if m.group(2) else " (vectorized)"
    elif m.group(1).startswith("unrolled"):
        how = " (unrolled)"
    else:
        how = ""
    return f"elementwise {op}{how}"


def _aten_reduce(n):
    m = re.match(r"(?:void )?at::native::" + _ANON + r"reduce_kernel<", n)
    if m:
        return f"reduce {_aten_op(n[m.end():]) or 'op'}"
    return None


def _aten_foreach(n):
    m = re.match(r"(?:void )?at::native::" + _ANON + r"multi_tensor_apply_kernel<", n)
    if not m:
        return None
    args = _top_args(n[m.end() - 1:])
    op = None
    if len(args) >= 3:
        leaf = re.sub(r"<.*", "", args[2]).split("::")[-1]
        op = _STD_OPS.get(leaf, re.sub(r"Functor$", "", leaf)) or None
        # Pointwise functors apply a*b (or a/b) added to a tensor: addcmul / addcdiv.
        if op in ("mul", "div") and re.sub(r"<.*", "", args[1]).split("::")[-1].startswith("PointwiseOp"):
            op = "addc" + op
    return f"foreach {op or _aten_op(n[m.end():]) or 'op'} (multi-tensor)"


_DECODERS = (_nvjet, _xmma, _arch_gemm, _tensile, _nccl, _inductor, _helion, _cudnn_sdpa, _numba, _cupy,
             _aten_elementwise, _aten_reduce, _aten_foreach, _wrapped, _cutlass)


# -- generic C++ folding --------------------------------------------------------------------------
def _top_args(s: str) -> list:
    """Split '<a, b<c, d>, e>' into top-level ['a', 'b<c, d>', 'e'] (s starts at the '<')."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch == "<":
            depth += 1
            if depth == 1:
                continue
        elif ch == ">":
            depth -= 1
            if depth == 0:
                out.append("".join(cur).strip())
                return out
        elif ch == "," and depth == 1:
            out.append("".join(cur).strip())
            cur = []
            continue
        if depth >= 1:
            cur.append(ch)
    return out


def _fold(name: str) -> str:
    """Drop return type, argument list, template arguments and noise namespaces."""
    s = re.sub(r"\(anonymous namespace\)::|\{anonymous\}::|`anonymous namespace'::|<unnamed>::", "", name.strip())
    s = re.sub(r"^void\s+", "", s)
    top, depth_a = [], 0
    for i, ch in enumerate(s):
        if ch == "<" and not s[max(0, i - 8):i].endswith("operator"):
            depth_a += 1
            continue
        if ch == ">" and depth_a:
            depth_a -= 1
            continue
        if depth_a:
            continue
        if ch == "(" and not s[max(0, i - 8):i].endswith("operator"):
            break
        top.append(ch)
    s = "".join(top).strip() or name
    s = re.sub(r"\.kd$", "", s)
    parts = [p for p in s.split("::") if p]
    if len(parts) <= 1:
        return s
    leaf = parts[-1]
    ns = [p for p in parts[:-1] if not _NOISE_NS.match(p)]
    return f"{ns[0]}::{leaf}" if ns else leaf
