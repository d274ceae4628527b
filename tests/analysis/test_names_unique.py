"""Issue 28: a readable name is unique within a report, keeps what tells kernels apart, and no
mangled name is shown raw; on real names from H200 recordings."""
import glob

import pytest

import kernelscope as ks
from kernelscope.analysis.names import base_short_name, short_name, unique_short_names
from tests.conftest import DATA

# Real mangled names from tests/data/ncu_rep and tests/data/trust (Nsight Compute names kernels so).
MANGLED = ["_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE",
           "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nt_align1EEvNT_6ParamsE",
           "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunctor_addIN3c107"
           "complexINS4_4HalfEEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
           "_ZN14xmma__5x_cudnn13implicit_gemm24cuda_reorder_hmma_filterENS0_26Reorder_imma_filter_paramsE"]


@pytest.mark.parametrize("name", MANGLED)
def test_mangled_names_are_demangled(name):
    s = short_name(name)
    assert not s.startswith("_Z") and "::" not in s[:2], s


def test_cutlass_layouts_are_told_apart():
    u = unique_short_names(MANGLED[:2])
    assert u[MANGLED[0]] == "CUTLASS GEMM 64x64 (sm80, simt) [nn]"
    assert u[MANGLED[1]] == "CUTLASS GEMM 64x64 (sm80, simt) [nt]"


def test_inductor_kernels_keep_their_number():
    assert short_name("triton_per_fused__to_copy_add_native_layer_norm_transpose_view_14").startswith(
        "persistent reduction _14: ")
    names = [f"triton_poi_fused_add_mul_{i}" for i in (14, 15, 16, 17)]
    assert len(set(unique_short_names(names).values())) == 4


def test_mlp_gemms_and_muls_are_told_apart():
    """mlp_train: two cuBLAS GEMMs that read "cuBLAS GEMM 128x128 (sm90)" (layouts NNT and TNT,
    one with a bias epilogue) and two vectorized muls (a unary functor with a scalar, a binary one)."""
    k = ks.load(DATA / "mlp_train.pt.trace.json.gz").kernels.drop_duplicates("name")
    shorts = set(k["short_name"])
    assert {"cuBLAS GEMM 128x128 (sm90) [NNT, no epilogue]", "cuBLAS GEMM 128x128 (sm90) [TNT, bias]",
            "elementwise Mul (vectorized x4) [tensor-scalar]",
            "elementwise Mul (vectorized x4) [tensor-tensor]"} <= shorts
    assert base_short_name("cuBLAS GEMM 128x128 (sm90) [NNT]") == "cuBLAS GEMM 128x128 (sm90)"


@pytest.mark.parametrize("path", sorted(glob.glob(str(DATA / "**" / "*.pt.trace.json.gz"), recursive=True))
                         + sorted(glob.glob("/work/shared/fixtures/traces/*.pt.trace.json.gz")),
                         ids=lambda p: p.split("/")[-1])
def test_readable_names_are_unique_in_every_recording(path):
    k = ks.load(path).kernels.drop_duplicates("name")
    per_short = k.groupby("short_name")["name"].nunique()
    assert (per_short == 1).all(), per_short[per_short > 1].index.tolist()[:3]
    assert not k["short_name"].astype(str).str.startswith("_Z").any()
