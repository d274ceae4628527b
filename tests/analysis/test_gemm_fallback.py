"""The GEMM-fallback finding on a real H200 recording: GPT-2's LM head (vocabulary 50257) ran as
cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1 (tests/data/wild/gpt2_infer)."""
import glob

import pytest

import kernelscope as ks
from kernelscope.analysis.findings.gemm_fallback import _gemm_dims
from tests.conftest import DATA


def test_gpt2_lm_head_fallback_names_op_shapes_fix_and_time():
    rep = ks.load(DATA / "wild" / "gpt2_infer.pt.trace.json.gz")
    f = [x for x in rep.findings if x.kind == "gemm_fallback"]
    assert len(f) == 1
    f = f[0]
    k = rep.kernels
    lm = k[k["name"].str.contains("cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1")]
    assert f.evidence["op"] == "aten::mm" and f.evidence["input_dims"] == [[512, 768], [768, 50257]]
    assert f.evidence["odd_dims"] == {"N": 50257} and f.evidence["built_for_sm"] == 75
    assert f.evidence["device_sm"] == 90 and f.evidence["alignment"] == 1
    assert f.evidence["time_us"] == pytest.approx(lm["duration_us"].sum())
    assert f.evidence["share"] == pytest.approx(lm["duration_us"].sum() / k["duration_us"].sum())
    assert 0 < f.cost_us < f.evidence["time_us"]          # above the roofline's ideal
    assert "pad N to 50304" in f.detail and "vocabulary" in f.detail and "multiple of 8" in f.detail
    assert "[512, 768] x [768, 50257]" in f.title
    # one finding for the kernel: the plain roofline one for it is dropped
    assert not [x for x in rep.findings if x.kind == "roofline" and "sm75" in x.title]


def test_no_fallback_finding_on_aligned_or_cuda_core_gemms():
    # fp32 SIMT sgemm kernels are alignment-1 by design; aligned shapes are not the cause
    for p in sorted(glob.glob(str(DATA / "**" / "*trace.json.gz"), recursive=True)):
        if "gpt2_infer" in p:
            continue
        assert not [f for f in ks.load(p).findings if f.kind in ("gemm_fallback", "analysis_error")], p


def test_gemm_dims():
    assert _gemm_dims("aten::mm", [[512, 768], [768, 50257]]) == (512, 768, 50257)
    assert _gemm_dims("aten::addmm", [[50257], [512, 768], [768, 50257]]) == (512, 768, 50257)
    assert _gemm_dims("aten::linear", [[4, 128, 768], [50257, 768], []]) == (512, 768, 50257)
    assert _gemm_dims("aten::mm", [[3]]) is None
