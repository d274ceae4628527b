"""What produced each kernel and with which knobs (analysis/producers.py), on real H200 recordings:
Inductor's launch events in a trace file, the compiled variants and autotuning candidates a live
capture kept (tests/data/tuning/, recorded by tests/gpu_tools/record_tuning.py), and library
kernels' names (tests/data/kernel_names.csv)."""
import csv
import dataclasses

import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.autotune import autotune_table
from kernelscope.analysis.producers import (
    AMBIGUOUS,
    DOCUMENTED,
    FROM_PROCESS,
    FROM_TRACE,
    FROM_TUNER,
    NO_MATCH,
    UNDOCUMENTED,
    annotate_producers,
    decode_name,
    producer_of,
)
from kernelscope.trace.model import VARIANT_COLUMNS, frame
from tests.conftest import DATA

TUNING = DATA / "tuning"


@pytest.fixture(scope="module")
def triton_rep():
    return ks.load(TUNING / "triton_tuning.ksreport.json.gz")


def test_inductor_knobs_from_the_trace_alone():
    # A saved Kineto trace: the launch events' args hold num_warps, num_stages and kernel_kwargs.
    rep = ks.load(TUNING / "inductor_run.pt.trace.json.gz")
    k = rep.kernels
    ind = k[k["producer"] == "Inductor"]
    assert len(ind) == 3 and set(ind["name"]) == {"triton_poi_fused_addmm_mul_relu_0"}
    assert ind["num_warps"].tolist() == [2, 2, 2] and ind["num_stages"].tolist() == [1, 1, 1]
    assert set(ind["config"]) == {"XBLOCK=128"} and set(ind["config_source"]) == {FROM_TRACE}
    assert set(ind["source_ops"]) == {"addmm_mul_relu (from the kernel name)"}
    assert ind["spills"].isna().all()          # a trace does not hold spills: only the process knows
    gemm = k[k["backend"] == "cuBLAS"]
    assert set(gemm["producer"]) == {"cuBLAS"} and gemm["config"].isna().all()
    assert gemm["decoded"].iloc[0].startswith("xmma: arch=sm80, operation=gemm")
    # The ops table keeps the args the kernels read them from
    ops = rep.ops[rep.ops["name"] == "triton_poi_fused_addmm_mul_relu_0"]
    assert ops["kernel_kwargs"].iloc[0] == "XBLOCK=128" and ops["kernel_hash"].iloc[0]


def test_older_compiled_recording_gets_its_configs():
    k = ks.load(DATA / "compiled.pt.trace.json.gz").kernels
    ind = k[k["producer"] == "Inductor"].drop_duplicates("name").set_index("name")
    assert ind.loc["triton_red_fused_gelu_sum_0", "config"] == "XBLOCK=2, R0_BLOCK=2048"
    assert ind.loc["triton_red_fused_gelu_sum_0", "num_warps"] == 16
    assert ind.loc["triton_per_fused_mean_2", "config"] == "XBLOCK=1"
    # cuBLAS launched a CUTLASS-built kernel there: backend and producer differ
    cut = k[k["name"].str.contains("cutlass_80_simt_sgemm", regex=False)]
    assert set(cut["backend"]) == {"cuBLAS"} and set(cut["producer"]) == {"CUTLASS"}


def test_inductor_spills_from_the_process_matched_by_the_trace_config():
    k = ks.load(TUNING / "inductor_run.ksreport.json.gz").kernels
    ind = k[k["producer"] == "Inductor"]
    # CUPTI says 16 registers, Inductor's launcher 10: matched by config and warps instead
    assert set(ind["registers_per_thread"]) == {16}
    assert ind["spills"].tolist() == [0, 0, 0] and set(ind["config"]) == {"XBLOCK=128"}


def test_fewer_than_16_registers_are_recorded_as_16():
    rep = ks.load(TUNING / "inductor_run.ksreport.json.gz")
    v = rep.trace.variants.copy()
    assert v["registers"].tolist() == [10]
    # without the trace's config (as for a user's Triton kernel), the launch's 16 registers match 10
    tr = dataclasses.replace(rep.trace, ops=rep.trace.ops.assign(kernel_kwargs=None, num_warps=pd.NA))
    k = ks.Report(tr).kernels
    ind = k[k["name"] == "triton_poi_fused_addmm_mul_relu_0"]
    assert set(ind["config"]) == {"XBLOCK=128"} and set(ind["config_source"]) == {FROM_PROCESS}
    assert set(ind["registers_per_thread"]) == {16}


def test_triton_launches_name_their_variant(triton_rep):
    k = triton_rep.kernels
    a = triton_rep.autotune
    mm = k[k["name"] == "matmul_kernel"]
    # every launch of the tuned matmul (the tuner's own and the three after) is one candidate
    assert set(mm["config_source"]) == {FROM_PROCESS}
    assert set(mm["config"]) == set(a[a["kernel"] == "matmul_kernel"]["config"])
    for (cfg, w, s), g in mm.groupby(["config", "num_warps", "num_stages"]):
        row = a[(a["config"] == cfg) & (a["num_warps"] == w) & (a["num_stages"] == s)]
        assert len(row) == 1
        assert set(g["registers_per_thread"]) == {row["registers"].iloc[0]}
        assert set(g["spills"]) == {row["spills"].iloc[0]}
    spill = mm[mm["spills"] > 0]
    assert set(spill["config"]) == {"BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, GROUP_M=8"} and set(spill["spills"]) == {674}
    # the kernel's definition line, where the process knew it
    assert mm["kernel_source"].iloc[0].endswith(".py:" + mm["kernel_source"].iloc[0].rsplit(":", 1)[1])
    assert set(k[k["name"] == "add_kernel"]["config"]) == {"BLOCK=128"}


def test_a_variant_that_cannot_be_told_is_said_so(triton_rep):
    # scale_kernel was compiled with NEG=False and NEG=True: same block, registers and shared memory
    k = triton_rep.kernels
    s = k[k["name"] == "scale_kernel"]
    v = triton_rep.trace.variants
    assert set(v[v["name"] == "scale_kernel"]["config"]) == {"BLOCK=1024, NEG=False", "BLOCK=1024, NEG=True"}
    assert len(s) == 2 and s["config"].isna().all() and s["num_warps"].isna().all()
    assert set(s["config_source"]) == {AMBIGUOUS}
    assert set(s["producer"]) == {"Triton"}


def test_no_matching_variant_is_said_so(triton_rep):
    tr = triton_rep.trace
    v = tr.variants[tr.variants["name"] == "add_kernel"].copy()
    v["registers"] = 99         # the launch used 22: no variant matches
    rep = ks.Report(dataclasses.replace(tr, variants=v.reset_index(drop=True)))
    add = rep.kernels[rep.kernels["name"] == "add_kernel"]
    # the tuner's candidate with 1 warp still names it, from the autotune table
    assert add["config_source"].iloc[0] == FROM_TUNER and add["config"].iloc[0] == "BLOCK=128"
    rep = ks.Report(dataclasses.replace(tr, variants=v.reset_index(drop=True), autotune=tr.autotune.iloc[:0]))
    add = rep.kernels[rep.kernels["name"] == "add_kernel"]
    assert add["config"].isna().all() and add["config_source"].iloc[0] == NO_MATCH


def test_helion_config_from_its_search():
    rep = ks.load(TUNING / "helion_tuning.ksreport.json.gz")
    k = rep.kernels[rep.kernels["producer"] == "Helion"]
    # Helion's knobs are module constants of its Triton kernel: the search's candidate names them
    assert dict(zip(k["block_x"], k["config"])) == {128: "block_sizes=[1024]", 256: "block_sizes=[4096]"}
    assert set(k["config_source"]) == {FROM_TUNER}
    a = rep.autotune
    assert set(a["producer"]) == {"Helion"} and a["winner"].sum() == 1
    assert a[a["winner"]]["p50_ms"].iloc[0] == a["p50_ms"].min() and a["rank"].iloc[0] == 1


def test_reports_without_the_in_process_tables():
    # an older report (no variants or autotune tables): the columns are there, empty
    rep = ks.load(DATA / "mixed_cell.ksreport.json.gz")
    for c in ("producer", "num_warps", "num_stages", "num_ctas", "config", "config_source", "spills", "source_ops"):
        assert c in rep.kernels.columns
    assert rep.kernels["producer"].notna().all()
    assert len(rep.autotune) == 0 and "theoretical_occupancy" in rep.autotune.columns


def test_damaged_variants_do_not_break_the_report(triton_rep):
    tr = triton_rep.trace
    bad = frame({"name": ["add_kernel", None, 3], "registers": [None, None, None], "num_warps": [None, 2, None],
                 "config": [None, "X=1", None]}, VARIANT_COLUMNS)
    k = annotate_producers(triton_rep.kernels.drop(columns=["producer"]), dataclasses.replace(tr, variants=bad))
    assert k["producer"].notna().all()


KNOWN = {
    "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_tnn_align8_warpspecialized_pingpong_epi_tma":
        {"family": "CUTLASS 3", "arch": "sm90", "opclass": "tensorop", "instruction": "s64x128x16", "operation": "gemm",
         "types": "bf16_bf16_f32_void_bf16", "cta_tile": "128x128x64", "cluster": "1x1x1", "stages": "auto",
         "layouts": "tnn", "alignment": 8, "schedule": "warpspecialized_pingpong", "epilogue": "epi_tma",
         "decoded_from": DOCUMENTED},
    "cutlass3x_sm90_tensorop_s64x256x16gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma":
        {"cta_tile": "128x256x64", "cluster": "2x1x1", "schedule": "warpspecialized_cooperative"},
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8::Params)":
        {"family": "CUTLASS 2", "arch": "sm80", "instruction": "s16816", "cta_tile": "128x64x64", "stages": 3,
         "layouts": "tn", "alignment": 8, "epilogue": "relu"},
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)":
        {"family": "CUTLASS 2", "opclass": "simt", "cta_tile": "256x128x8", "stages": 4, "alignment": 1},
    "nvjet_tst_192x16_64x8_2x2_2cta_h_bz_TNT":
        {"family": "nvjet", "types": "tf32/f32/tf32", "cta_tile": "192x16x64", "stages": 8, "cluster": "2x2",
         "ctas_per_mma": 2, "raster": "horizontal", "flags": "bz", "layouts": "TNT", "decoded_from": UNDOCUMENTED},
    "nvjet_tst_64x8_64x16_1x4_h_bz_splitK_bias_TNT": {"flags": "bz, splitK, bias", "stages": 16},
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas":
        {"family": "xmma", "arch": "sm90", "types": "bf16bf16_bf16f32_f32", "layouts": "tn", "cta_tile": "64x64x64",
         "warpgroups": "1x1x1", "built_for": "cuBLAS", "decoded_from": UNDOCUMENTED},
    "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_stage3_warpsize4x1x1_g1_tensor16x8x16_execute_kernel__5x_cudnn":
        {"operation": "fprop", "cta_tile": "256x64x32", "stages": 3, "warps": "4x1x1", "built_for": "cuDNN"},
}


@pytest.mark.parametrize("name", list(KNOWN), ids=lambda n: n[:40])
def test_library_names_decoded(name):
    got = decode_name(name)
    assert got is not None
    for key, want in KNOWN[name].items():
        assert got[key] == want, (key, got)


def test_names_that_say_nothing_are_not_decoded():
    for name in ("add_kernel", "void at::native::vectorized_elementwise_kernel<4>", "", None, 5,
                 "nvjet_but_not_really", "cutlass_garbage_name"):
        assert decode_name(name) is None


def test_the_recorded_corpus_producers():
    with open(DATA / "kernel_names.csv") as f:
        rows = list(csv.DictReader(f))
    got = {r["name"]: producer_of(r["name"], r["backend"]) for r in rows}
    cut = [n for n, r in zip(got, rows) if "cutlass_80_" in n and r["backend"] == "cuBLAS"]
    assert cut and all(got[n] == "CUTLASS" for n in cut)     # CUTLASS-built, launched by cuBLAS
    assert all(got[n] == "cuBLAS" for n in got if n.startswith("nvjet_"))
    assert all(got[n] == "TensorRT" for n in got if n.endswith("_trt"))
    assert all(got[r["name"]] == "FlashAttention" for r in rows if r["backend"] == "FlashAttention")
    # every name a library rule gave gets a producer from the one vocabulary, or Inductor
    from kernelscope.analysis.backend_rules import BACKENDS
    assert set(got.values()) <= set(BACKENDS) | {"Inductor"}


def test_autotune_table_on_thousands_of_candidates(triton_rep):
    a = triton_rep.trace.autotune
    many = pd.concat([a.assign(tuning=a["tuning"] + 2 * i) for i in range(250)], ignore_index=True)
    t = autotune_table(dataclasses.replace(triton_rep.trace, autotune=many))
    assert len(t) == 4000                      # every candidate kept
    first = t[t["tuning"] == 0]
    assert first["rank"].tolist() == sorted(first["rank"].tolist()) and first["rank"].iloc[0] == 1
    assert first["winner"].iloc[0]             # the fastest first, and it is the winner
