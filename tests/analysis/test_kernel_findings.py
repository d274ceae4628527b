"""The kernel rules (analysis/findings/kernels.py, triton_variants.py) on real H200 before/after
pairs of the advice benchmark (tests/data/advice, copied from benchmarks/advice/recordings; gains.json
holds each pair's realized gain: median unprofiled step time before minus after). Each rule's item
must exist on the before run, priced within 0.5x-1.5x of what the fix gave, and be gone after it."""
import dataclasses
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.findings import _one_per_kernel
from kernelscope.analysis.findings.base import Finding
from kernelscope.analysis.findings.kernels import (
    MIN_CHAIN_KERNELS,
    TINY_GRID_MIN_US,
    fp32_gemm_findings,
    tiny_grid_findings,
    unfused_elementwise_findings,
)
from kernelscope.analysis.findings.triton_variants import VARIANT_SOURCE
from tests.conftest import DATA

ADVICE = DATA / "advice"
GAINS = json.loads((ADVICE / "gains.json").read_text())
PAIRS = [("fp32_matmul", "fp32_gemm"), ("fp32_mlp", "fp32_gemm"),
         ("triton_four_programs", "tiny_grid"), ("triton_one_program_reduction", "tiny_grid"),
         ("triton_strided_read", "uncoalesced_access"), ("triton_column_gather", "uncoalesced_access"),
         ("triton_gemm_spilling", "register_spills"),
         ("elementwise_chain", "unfused_elementwise"), ("gelu_layernorm_by_hand", "unfused_elementwise")]


def load(name, variant):
    return ks.load(ADVICE / f"{name}.{variant}.ksreport.json.gz")


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_before_has_the_item_priced_near_the_realized_gain(name, kind):
    rep = load(name, "before")
    found = [f for f in rep.findings if f.kind == kind]
    assert len(found) == 1, [f.kind for f in rep.findings]
    f = found[0]
    gain_us = GAINS[name]["gain_ms"] * 1e3
    assert 0.5 <= gain_us / f.cost_us <= 1.5, (f.cost_us, gain_us)
    assert f.cause and f.fix and f.detail and f.title
    assert f.link["view"] == "kernels" and set(f.link["names"]) <= set(rep.kernels["name"])
    assert f.evidence["time_us"] > f.cost_us > 0
    # On the first screen with that price, and its kernels counted once: no roofline item for them.
    item = next(it for it in rep.what_to_fix().to_dict("records") if it["kind"] == kind)
    assert item["cost_us"] == pytest.approx(f.cost_us)
    assert not [g for g in rep.findings if g.kind == "roofline" and g.evidence["kernel"] in f.link["names"]]


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_after_the_fix_the_item_is_gone(name, kind):
    rep = load(name, "after")
    assert not [f for f in rep.findings if f.kind in (kind, "analysis_error")]


def test_items_name_their_figures():
    f = fp32_gemm_findings(load("fp32_matmul", "before"))[0]
    assert f.evidence["fp32_tflops"] == 67 and f.evidence["tf32_tflops"] == 494.7
    assert "allow_tf32 = True" in f.fix and "autocast" in f.fix
    f = tiny_grid_findings(load("triton_four_programs", "before"))[0]
    assert (f.evidence["blocks"], f.evidence["sms"]) == (4, 132) and "up to" in f.title
    f = next(x for x in load("triton_strided_read", "before").findings if x.kind == "uncoalesced_access")
    assert f.evidence["source"] == VARIANT_SOURCE and f.evidence["loads_scalar"] == 8
    assert f.evidence["loads_vector"] == 0 and f.evidence["achieved_gbps"] < 0.5 * f.evidence["peak_gbps"]
    f = next(x for x in load("triton_gemm_spilling", "before").findings if x.kind == "register_spills")
    assert (f.evidence["spills"], f.evidence["registers"], f.evidence["priced_by"]) == (790, 255, "tensor_core_roof")
    f = unfused_elementwise_findings(load("gelu_layernorm_by_hand", "before"))[0]
    # The row statistics ([8192, 1]) and the affine weights ([4096]) belong to the chain.
    assert f.evidence["kernels_per_chain"] == 19 and f.evidence["tensor_shape"] == [8192, 4096]
    assert "torch.compile" in f.fix


def test_no_tf32_item_where_tf32_is_no_faster():
    rep = load("fp32_matmul", "before")
    assert fp32_gemm_findings(rep)
    rep.devices.loc[:, "name"] = "NVIDIA GeForce RTX 4090"      # TF32 peak = fp32 peak on GeForce
    assert fp32_gemm_findings(rep) == []


def test_small_grids_of_short_kernels_are_no_item():
    """The bf16 casts of fp32_mlp's fix launch 2 and 8 blocks for ~1 us: tiny inputs, not tiny grids."""
    rep = load("fp32_mlp", "after")
    k = rep.kernels
    small = k[k["grid_x"] * k["grid_y"] * k["grid_z"] < 132]
    assert len(small) and (small["duration_us"] < TINY_GRID_MIN_US).all()
    assert tiny_grid_findings(rep) == []


def test_a_sync_between_launches_cuts_the_chain():
    """synchronize_per_iter: 40 tanh launches on one tensor; with a torch.cuda.synchronize() after
    each (before) no compiler fuses across them, without (after) they are one chain."""
    assert unfused_elementwise_findings(load("synchronize_per_iter", "before")) == []
    f = unfused_elementwise_findings(load("synchronize_per_iter", "after"))[0]
    assert f.evidence["kernels_per_chain"] == 40 >= MIN_CHAIN_KERNELS


def test_one_finding_per_kernel():
    """A roofline finding of a kernel a kernel rule prices, a fallback among fp32 GEMMs, a small grid
    whose cause another rule names, the autotuner's spilling winner, and our PTX-based uncoalesced
    finding where Nsight Compute measured the kernel are dropped; the rest stay."""
    def f(kind, kernel, **ev):
        return Finding(kind, "low", kind, "", {"kernel": kernel, **ev}, 1.0)
    kept = [f("fp32_gemm", "sgemm"), f("register_spills", "mm"), f("uncoalesced_access", "nc", source="ncu"),
            f("roofline", "other"), f("tiny_grid", "alone")]
    dropped = [f("roofline", "sgemm"), f("gemm_fallback", "sgemm"), f("tiny_grid", "mm"),
               f("autotune_winner_spills", "mm"), f("uncoalesced_access", "nc", source=VARIANT_SOURCE)]
    assert _one_per_kernel(kept + dropped) == kept
    chain = dataclasses.replace(f("unfused_elementwise", None), evidence={"kernels": ["a", "b"]})
    assert _one_per_kernel([chain, f("roofline", "b")]) == [chain]
