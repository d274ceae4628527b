"""Issue 45, item 2: names you can tell apart. On real names: cuDNN's CUTLASS convolutions that
no demangler takes (Holistic Trace Analysis's test traces), Inductor kernels of recorded compiled
models, ATen's elementwise kernels of recorded eager runs."""
import csv
import re

from kernelscope.analysis.names import short_name, unique_short_names
from tests.conftest import DATA


def _hta_names(word):
    with open(DATA / "hta" / "kernel_names.csv", newline="", encoding="utf-8") as f:
        return [r["name"] for r in csv.DictReader(f) if word in r["name"]]


def test_a_mangled_name_no_demangler_takes_is_read_as_far_as_it_can_be():
    names = _hta_names("ImplicitGemmConvolution")
    assert len(names) == 2 and all(len(n) > 1600 and n.startswith("_Z") for n in names)
    assert [short_name(n) for n in names] == ["CUTLASS conv wgrad 128x128 (tf32)",
                                              "CUTLASS conv wgrad 64x128 (tf32)"]
    assert sorted(unique_short_names(names).values()) == ["CUTLASS conv wgrad 128x128 (tf32)",
                                                          "CUTLASS conv wgrad 64x128 (tf32)"]


def _inductor_names(trace):
    import kernelscope as ks
    k = ks.load(DATA / trace).kernels
    return sorted(set(k.loc[k["name"].str.startswith("triton_"), "name"]))


def test_inductor_names_split_at_op_boundaries():
    """A compiled conv net's batch norms read as the one op they are, not 'legit + no + training'."""
    names = [n for n in _inductor_names("graphs/compiled_before_region.pt.trace.json.gz") if "legit" in n]
    assert names
    for n in names:
        s = short_name(n)
        assert "native_batch_norm_legit_no_training" in s and " no " not in s.replace("+", " "), s
    assert short_name("triton_poi_fused__native_batch_norm_legit_no_training_max_pool2d_with_indices_relu_3") == (
        "pointwise _3: native_batch_norm_legit_no_training + max_pool2d_with_indices + relu (Triton)")


def test_a_triton_signature_suffix_is_no_op():
    """kernel_names.csv (public sources): an older Triton's launcher names 'triton_poi_fused_gelu_6_0d1d'."""
    with open(DATA / "kernel_names.csv", newline="", encoding="utf-8") as f:
        names = [r["name"] for r in csv.DictReader(f) if r["name"].startswith("triton_")]
    assert "triton_poi_fused_gelu_6_0d1d" in names
    assert short_name("triton_poi_fused_gelu_6_0d1d") == "pointwise _6: gelu (Triton)"
    assert not [short_name(n) for n in names if re.search(r"\b\d+d\b|\+ \d+ ", short_name(n))]


def _shorts(trace):
    import kernelscope as ks
    k = ks.load(DATA / trace).kernels.drop_duplicates("name")
    return dict(zip(k["name"], k["short_name"]))


def test_suffixes_name_the_real_difference():
    """A Llama training step's ATen kernels that read alike say dtype, operands, casting and
    items per thread, not '[4 BinaryFunctor c10]' or '[CUDAFunctor 3ul]'."""
    shorts = _shorts("wild/llama_train.pt.trace.json.gz")
    told = [s for s in shorts.values() if s.startswith(("elementwise", "reduce")) and s.endswith("]")]
    assert len(told) >= 10
    assert not [s for s in told if re.search(r"Functor|\dul\b|\bc10\b|nocast|\[\d+\]", s)
                and "pow_tensor_scalar" not in s], told
    assert {"elementwise add (vectorized x4) [tensor-scalar]", "elementwise add (vectorized x4) [tensor-tensor]",
            "elementwise add [bf16, 4 per thread]", "elementwise add [fp32, 2 per thread]",
            "reduce sum [128 threads, 4 outputs/thread]", "reduce sum [512 threads, 1 output/thread]",
            "elementwise Mul [tensor-scalar, no cast, 2 per thread]",
            "elementwise Mul [tensor-tensor, casts, 4 per thread]"} <= set(told), told
    assert len(set(shorts.values())) == len(shorts)


def test_gemm_suffixes_say_split_k_and_layout():
    """A ResNet-50 step's cuBLAS GEMMs: the one pair that differed only by '_splitK_' read
    '#1' beside '[splitK]'; now 'no split-K' beside 'split-K'."""
    shorts = _shorts("wild/resnet50_train.pt.trace.json.gz")
    assert shorts["nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_splitK_NTT"] == "cuBLAS GEMM 64x64 (sm90) [split-K]"
    assert shorts["nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_NTT"] == "cuBLAS GEMM 64x64 (sm90) [no split-K]"
    assert shorts["nvjet_sm90_hsh_256x128_64x4_1x2_h_ssched_bz_coopA_TNT"] == "cuBLAS GEMM 256x128 (sm90) [TNT]"
    assert not [s for s in shorts.values() if s.startswith("cuBLAS GEMM") and "#" in s]


def test_what_tells_a_compiled_vits_kernels_apart_comes_first():
    """A compiled ViT's four 'persistent reduction: to_copy + add + native_layer_norm + trans…'
    rows were told apart only by '(Triton _14)'..'(Triton _17)' past where a table cuts them; the
    kernel number now follows the kind, so the first 30 characters of every name are unique."""
    shorts = list(_shorts("wild/vit_compiled.pt.trace.json.gz").values())
    ln = [s for s in shorts if "native_layer_norm + transpose + view" in s and s.startswith("persistent")]
    assert len(ln) >= 4
    assert len({s[:30] for s in shorts}) == len(shorts)
