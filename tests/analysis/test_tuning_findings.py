"""The autotuning findings (analysis/findings/tuning.py) on the H200 tuning recordings, and on
their candidates table with one column changed to make each rule's case."""
import dataclasses

import pytest

import kernelscope as ks
from kernelscope.analysis.findings.tuning import tuning_findings
from tests.conftest import DATA

TUNING = DATA / "tuning"


@pytest.fixture(scope="module")
def triton_rep():
    return ks.load(TUNING / "triton_tuning.ksreport.json.gz")


def _kinds(rep):
    return {f.kind: f for f in rep.findings if f.kind.startswith("autotune")}


def _with(rep, autotune):
    return ks.Report(dataclasses.replace(rep.trace, autotune=autotune))


def test_triton_recording(triton_rep):
    f = _kinds(triton_rep)
    occ = f["autotune_occupancy"]
    # the winner (128x128x64, 8 warps) runs at 25%; the capped losers are below it
    assert all(r["theoretical_occupancy"] < 0.25 for r in occ.evidence["capped"])
    assert {r["occupancy_limiter"] for r in occ.evidence["capped"]} <= {"registers", "shared_mem", "blocks",
                                                                         "registers+shared_mem"}
    assert occ.evidence["fastest_common"]["BLOCK_M"] == "128"
    sp = f["autotune_candidates_spill"]
    assert sp.evidence["spilling"][0]["spills"] == 674 and "2,696 bytes per thread" in sp.detail
    assert "more accumulators than 255 registers" in sp.detail        # 255 registers in use: at the cap
    key = f["autotune_sizeless_key"]
    assert key.evidence["kernel"] == "add_kernel" and key.evidence["cached"] is True
    assert "131072x1x1" in key.detail
    assert "autotune_winner_spills" not in f            # its winner does not spill
    assert all(x.cost_us == 0 for x in f.values())     # they advise the space: no GPU time is claimed


def test_inductor_chose_cublas():
    rep = ks.load(TUNING / "inductor_tuning.ksreport.json.gz")
    f = _kinds(rep)["autotune_inductor_choice"]
    assert f.title == "Inductor chose cuBLAS for mm: 1.36x faster than its best template"
    assert f.evidence["winner"] == "extern_kernels.mm" and f.evidence["ratio"] == pytest.approx(1.36, abs=0.005)


def test_candidates_spilling_under_the_register_cap_are_not_blamed_on_the_spills():
    """On the H200 max-autotune's 32x32x16 template on two warps spilled 2 registers with 48 in
    use and ran 5.2x the winner: the spills are the compiler's choice, not a tile too big for a
    thread's registers, and the finding does not say they explain the time."""
    rep = ks.load(DATA.parent.parent / "example_notebooks" / "recordings" / "08_compile_tuning.ksreport.json.gz")
    sp = _kinds(rep)["autotune_candidates_spill"]
    assert sp.evidence["spilling"][0]["spills"] == 2
    assert "fewer than 255 registers in use" in sp.detail and "accumulators" not in sp.detail


def test_winner_that_spills(triton_rep):
    a = triton_rep.trace.autotune.copy()
    a.loc[a["winner"] & (a["kernel"] == "matmul_kernel"), "spills"] = 12
    f = _kinds(_with(triton_rep, a))["autotune_winner_spills"]
    assert f.severity == "medium" and "48 bytes per thread" in f.title and f.evidence["spills"] == 12


def test_noisy_winner_and_narrow_spread(triton_rep):
    a = triton_rep.trace.autotune.copy()
    add = a["kernel"] == "add_kernel"
    f = _kinds(_with(triton_rep, a))
    assert "autotune_narrow_spread" not in f and "autotune_noisy_winner" not in f
    # the add kernel's four configs within 1% of each other, their p20-p80 overlapping
    a.loc[add, "p50_ms"] = [0.0040, 0.00401, 0.00402, 0.00403]
    a.loc[add, "p20_ms"] = 0.0039
    a.loc[add, "p80_ms"] = 0.0042
    f = _kinds(_with(triton_rep, a))
    assert f["autotune_narrow_spread"].evidence["kernel"] == "add_kernel"
    assert f["autotune_noisy_winner"].evidence["winner"] == "BLOCK=128"


def test_one_config_tried(triton_rep):
    a = triton_rep.trace.autotune
    one = a[(a["kernel"] == "add_kernel") & a["winner"]]
    f = _kinds(_with(triton_rep, one))
    assert f["autotune_one_config"].evidence == {"kernel": "add_kernel", "tuning": 1, "candidates": 1}


def test_no_candidates_no_findings():
    assert tuning_findings(ks.load(DATA / "mlp_train.pt.trace.json.gz")) == []
