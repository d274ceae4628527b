"""What a kernel's recorded name says about the variant it is: its dtype, operands, layout, split-K,
items per thread. ``names.unique_short_names`` shows the facets that differ where two kernels
would read the same ("elementwise add [bf16]" beside "elementwise add [fp32]"), in place of the
raw template tokens ("[4 BinaryFunctor c10]", "[CUDAFunctor 3ul]").
"""
from __future__ import annotations

import re

# C++ element types as the rest of the view spells them (as torch's dtype names do).
_DTYPES = (("c10::complex<c10::Half>", "complex32"), ("c10::complex<float>", "complex64"),
           ("c10::complex<double>", "complex128"), ("c10::BFloat16", "bf16"), ("c10::Half", "fp16"),
           ("__half", "fp16"), ("__nv_bfloat16", "bf16"), ("c10::Float8_e4m3fn", "fp8 e4m3"),
           ("c10::Float8_e5m2", "fp8 e5m2"), ("double", "fp64"), ("float", "fp32"), ("long", "int64"),
           ("int", "int32"), ("short", "int16"), ("unsigned char", "uint8"), ("signed char", "int8"),
           ("bool", "bool"))
_DTYPE = re.compile(r"(?<![\w:])(" + "|".join(re.escape(c) for c, _ in _DTYPES) + r")(?![\w])")
_DTYPE_NAME = dict(_DTYPES)
# cuBLAS nvjet's type triple (A/B, compute, C/D): hsh = fp16 in, fp32 accumulate, fp16 out.
_NVJET_TYPES = {"hsh": "fp16", "hss": "fp16 in, fp32 out", "bsb": "bf16", "bss": "bf16 in, fp32 out",
                "tst": "tf32", "sss": "fp32", "ddd": "fp64", "qsq": "fp8", "qsb": "fp8 in, bf16 out",
                "qsh": "fp8 in, fp16 out"}


def name_facets(name: str) -> dict:
    """The facets a kernel's recorded name states, each as a short phrase, in the order a reader
    wants them ({} for a name that states none that kernelscope reads).

    >>> name_facets("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
    ...             "c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    ...             "std::array<char*, 3ul>)")
    {'dtype': 'bf16', 'operands': 'tensor-tensor'}
    >>> name_facets("nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_splitK_NTT")["split"]
    'split-K'
    """
    if not isinstance(name, str):
        return {}
    if name.startswith("nvjet_"):
        return _nvjet(name)
    if "_xmma_" in name:
        return _xmma(name)
    m = re.match(r"(?:void )?at::native::(?:\(anonymous namespace\)::)?"
                 r"(vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel\w*|reduce_kernel)"
                 r"<(?:\(int\))?(\d+)(?:, (?:\(int\))?(\d+))?", name)
    return _aten(name, m) if m else {}


def _aten(name, m):
    out, rest = {}, name[m.end():]
    d = _DTYPE.search(rest)
    if d:
        out["dtype"] = _DTYPE_NAME[d.group(1)]
    if re.search(r"\b(?:AUnary|BUnary)Functor<|CUDAFunctorOnSelf_|CUDAFunctorOnOther_", rest):
        out["operands"] = "tensor-scalar"
    elif re.search(r"\bBinaryFunctor<|CUDAFunctor_\w+<", rest):
        out["operands"] = "tensor-tensor"
    arr = re.search(r"std::array<char\*, (\d+)ul>", rest)
    if arr and "operands" not in out:     # tensor-scalar has one input, tensor-tensor two
        k = int(arr.group(1)) - 1     # one pointer is the output
        out["inputs"] = f"{k} input" + ("s" if k != 1 else "")
    if "gpu_kernel_impl_nocast<" in rest:
        out["cast"] = "no cast"
    elif "gpu_kernel_impl<" in rest:
        out["cast"] = "casts"
    kind = m.group(1)
    if kind == "reduce_kernel":
        out["threads"] = f"{m.group(2)} threads"
        if m.group(3):
            out["vector"] = f"{m.group(3)} output{'s' if m.group(3) != '1' else ''}/thread"
    elif kind.startswith("elementwise_kernel") and m.group(3):
        out["per_thread"] = f"{m.group(3)} per thread"
    return out


def _nvjet(name):
    parts = name.split("_")
    out = {}
    t = next((p for p in parts[1:4] if p in _NVJET_TYPES), None)
    if t:
        out["dtype"] = _NVJET_TYPES[t]
    if re.fullmatch(r"[NT]{3}", parts[-1]):
        out["layout"] = parts[-1]
    out["split"] = "split-K" if "splitK" in parts else "no split-K"
    ep = [p for p in parts if re.fullmatch(r"(relu|gelu|silu)?bias|relu|gelu|dgelu|aux", p)]
    out["epilogue"] = " ".join(ep) if ep else "no epilogue"
    if "badd" in parts:
        out["beta"] = "adds C"
    elif "bz" in parts:
        out["beta"] = "beta 0"
    cl = next((p for p in parts[5:] if re.fullmatch(r"\d+x\d+", p)), None)
    if cl:
        out["cluster"] = f"cluster {cl}"
    st = re.search(r"_\d+x\d+_\d+x(\d+)_", name)
    if st:
        out["stages"] = f"{st.group(1)} stages"
    if "ssched" in parts:
        out["sched"] = "ssched"
    return out


def _xmma(name):
    # sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_..._execute_split_k_kernel
    out = {}
    lay = re.search(r"_([nt]{2})_[nt]_", name)
    if lay:
        out["layout"] = lay.group(1)
    out["split"] = ("split-K" if "split_k" in name else "segment-K" if "segment_k_on" in name
                    else "no split-K")
    tile = re.search(r"tilesize\d+x\d+x(\d+)", name)
    if tile:
        out["k_tile"] = f"K tile {tile.group(1)}"
    st = re.search(r"_stage(\d+)_", name)
    if st:
        out["stages"] = f"{st.group(1)} stages"
    w = re.search(r"warp(?:group)?size(\d+x\d+x\d+)", name)
    if w:
        out["warps"] = f"warps {w.group(1)}"
    for tag in ("indexed", "strided", "wo_smem"):
        if f"_{tag}_" in name:
            out[tag] = tag.replace("_", " ")
    return out
