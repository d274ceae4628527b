"""The kernel deep dive says one thing per fact (issue 28), on real H200 Nsight Compute reports:
one verdict per launch (a cuDNN conv's speed of light and its roofline agree), one peak per
precision in the roofline tab and the deep dive, one shared-memory block limit per launch in
every table, a rule's speedup and message from one launch, and occupancy advice only when it
changes the outcome."""
import re

import pytest

import kernelscope as ks
from kernelscope.analysis.kernel_detail import kernel_detail
from kernelscope.analysis.occupancy import occupancy
from kernelscope.render.kernel import kernel_detail_text
from kernelscope.view.report import view_model
from tests.conftest import DATA

ncu_report = pytest.importorskip("ncu_report")
CONV = 4       # sm90_xmma_fprop_image_first_layer_..., resnet50's first convolution
GEMM = 9       # nvjet_sm90_hsh_64x384_..., the other FP16 tensor launch


@pytest.fixture(scope="module")
def resnet():
    return ks.load_ncu(DATA / "ncu_rep" / "resnet50_full.ncu-rep.xz")


@pytest.fixture(scope="module")
def header(resnet):
    return view_model(resnet)[0]


def test_conv_has_one_verdict(resnet, header):
    e = header["kernel_detail"]["launches"][str(CONV)]
    assert e["kernel_name"].startswith("sm90_xmma_fprop")
    assert e["sol"]["bound"] == "memory" and e["sol"]["verdict"].startswith("memory-bound")
    roof = e["roofline"]
    # before: the roofline said "compute-bound at DRAM ... 22.2% of the attainable roof"
    assert roof["bound"] == "memory" and roof["dram_side"] == "compute"
    assert "compute-bound" not in roof["verdict"]
    assert "right of the ridge" in roof["verdict"]
    assert roof["verdict"].startswith("memory-bound (speed of light: memory at 69% of peak, L1/TEX the busiest at 85%)")
    assert "the DRAM roofline counts DRAM bytes only" in roof["verdict"]
    text = kernel_detail_text(resnet, top=10)
    conv = text.split("sm90_xmma_fprop")[1].split("\n\n")[0]
    assert "speed of light: memory-bound" in conv and roof["verdict"] in conv and "compute-bound" not in conv


@pytest.mark.parametrize("source", ["ncu_rep/resnet50_full.ncu-rep.xz", "trust/ncu_conv.ncu-rep.xz",
                                    "ncu_rep/torch_ops.ncu-rep.xz"])
def test_every_launch_has_one_bound(source):
    hd = view_model(ks.load_ncu(DATA / source))[0]
    peaks = {}
    for e in hd["kernel_detail"]["launches"].values():
        roof = e["roofline"]
        if not roof:
            continue
        assert roof["bound"] == (e["sol"]["bound"] or roof["dram_side"])
        other = {"compute": "memory", "memory": "compute"}.get(roof["bound"])
        assert not other or f"{other}-bound" not in roof["verdict"]
        peaks.setdefault(roof["precision"], set()).add(roof["peak_flops_per_s"])
    assert peaks and all(len(v) == 1 for v in peaks.values())      # one peak per precision


def test_one_peak_per_precision(header):
    tab = {c["label"]: c["peak_flops_per_s"] for c in header["roofline"]["ceilings"]}
    tensor = tab["cuda:0 FP16 tensor peak"]
    launches = header["kernel_detail"]["launches"]
    # before: 989 TFLOP/s in the Roofline tab, 965.54 in the conv's deep dive
    assert launches[str(CONV)]["roofline"]["peak_flops_per_s"] == pytest.approx(tensor)
    assert launches[str(GEMM)]["roofline"]["peak_flops_per_s"] == pytest.approx(tensor)
    assert 950e12 < tensor < 1020e12
    fp16 = [x["roofline"]["peak_flops_per_s"] for x in launches.values()
            if x["roofline"] and x["roofline"]["precision"] == "fp16"]
    assert len(fp16) > 2 and len(set(fp16)) == 1
    assert fp16[0] == pytest.approx(tab["cuda:0 FP16 (CUDA cores) peak"])


@pytest.mark.parametrize("source", ["ncu_rep/resnet50_full.ncu-rep.xz", "ncu_mlp_train.csv"])
def test_one_shared_memory_block_limit(source):
    rep = ks.load_ncu(DATA / source)
    k = rep.kernels
    # before: 228 (the calculator's largest carveout) beside Nsight Compute's 32
    assert (k["block_limit_shared_mem"] == k["ncu_block_limit_shared_mem_blocks"]).all()
    assert (abs(k["theoretical_occupancy"] * 100 - k["ncu_theoretical_occupancy_pct"]) < 0.01).all()
    hd = view_model(rep)[0]
    configs = {c["shape"]: c for c in hd["shapes"]}
    for row in k.to_dict("records"):
        assert configs[row["shape"]]["block_limit_shared_mem"] == row["ncu_block_limit_shared_mem_blocks"]
    detail = kernel_detail(rep)
    for e in (detail or {"launches": {}})["launches"].values():
        assert e["occupancy"]["limits"]["shared_mem"] == e["occupancy"]["ncu_limits"]["shared_mem"]
        row = k[k["ncu_id"] == e["id"]].iloc[0]
        assert configs[row["shape"]]["block_limit_shared_mem"] == e["occupancy"]["limits"]["shared_mem"]


def test_rule_speedup_and_message_from_one_launch(resnet):
    rules = resnet.ncu_detail["rules"]
    multi = [f for f in resnet.findings if f.kind == "nsight_compute" and f.evidence["launches"] > 1]
    assert multi
    for f in multi:
        lid = f.evidence["launch"]
        mine = rules[(rules["id"] == lid) & (rules["rule"] == f.evidence["rule"])].iloc[0]
        assert f.evidence["estimated_speedup_pct"] == pytest.approx(float(mine["speedup_pct"]))
        assert f.detail == mine["message"]        # that launch's words (its own occupancy figures)
        ids = sorted(resnet.ncu.loc[resnet.ncu["kernel_name"] == f.evidence["kernel"], "id"].astype(int))
        nth = ids.index(lid) + 1
        assert f.evidence["launch_of_kernel"] == nth
        assert f"launch {nth} of {f.evidence['launches']}, Nsight Compute ID {lid})" in f.title


def test_launch_named_by_its_place_among_the_kernels_launches():
    # ncu_conv: the two nchwToNhwc launches are IDs 0 and 1 of five; "launch 0 of 2" before.
    conv = ks.load_ncu(DATA / "trust" / "ncu_conv.ncu-rep.xz")
    titles = [f.title for f in conv.findings if f.kind == "nsight_compute" and f.evidence["launches"] > 1]
    assert titles
    for t in titles:
        n, m = (int(x) for x in re.search(r"launch (\d+) of (\d+)", t).groups())
        assert 1 <= n <= m, t
    assert any("launch 2 of 2, Nsight Compute ID 1)" in t for t in titles)


def test_advice_only_when_it_changes_the_outcome():
    # bert_infer's 96-thread, 32-register kernels: 21 blocks already; 24 registers give 21 too
    o = occupancy((9, 0), 96, 32, 0)
    assert o.active_blocks_per_sm == 21 and "registers" in o.limiters
    assert not any(t.startswith("registers") for t in o.advice())
    rep = ks.load(DATA / "wild" / "bert_infer.pt.trace.json.gz", progress=False)
    s = rep.shapes
    hit = s[(s["threads_per_block"] == 96) & (s["registers_per_thread"] == 32)]
    assert len(hit)
    for r in s.dropna(subset=["theoretical_occupancy"]).to_dict("records"):
        o = occupancy((int(r["compute_major"]), int(r["compute_minor"])), int(r["threads_per_block"]),
                      int(r["registers_per_thread"]), int(r["shared_mem_bytes"]))
        for step in o.next_steps():
            if step["limiter"] in ("registers", "shared_mem") and step["target_occupancy"] is not None:
                assert step["target_occupancy"] > o.occupancy, step["text"]
    # a step that does change it stays
    assert occupancy((9, 0), 256, 128, 0).advice()[0].startswith("registers: 128/thread allow 2 blocks")
