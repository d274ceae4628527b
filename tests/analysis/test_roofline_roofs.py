"""Roofline points above the roof (issue 28), on real H200 traces: an op that computes nothing
(a fill) is credited with no FLOPs, and every dot above its roof says why."""
import pytest

import kernelscope as ks
from kernelscope.analysis.roofline import ABOVE_COMPUTE_ROOF, ABOVE_MEMORY_ROOF, op_counts
from kernelscope.view.report import view_model
from tests.conftest import DATA

WILD = DATA / "wild"


def test_fill_does_no_flops():
    flops, nbytes, _, _ = op_counts("aten::fill_", [[1024, 256], []], ["float", "Scalar"])
    assert flops is None and nbytes == 1024 * 256 * 4       # written once, not read
    rep = ks.load(WILD / "llama_train.pt.trace.json.gz", progress=False)
    rl = rep.roofline
    fill = rl[rl["op"] == "aten::fill_"]
    assert len(fill) and fill["flops"].isna().all() and (fill["bytes"] > 0).all()
    # before: "aten::fill_ ... 196% of attainable" on the chart
    pts = view_model(rep)[0]["roofline"]["points"]
    assert not [p for p in pts if p["op"] == "aten::fill_"]
    assert max(p["roof_share"] for p in pts) <= 1.0


def test_l2_resident_elementwise():
    # issue 28's recording: pow, mul and fill_ on a 16 MB fp32 tensor, which stays in the H200's L2
    rep = ks.load(DATA / "trust" / "l2_elementwise.pt.trace.json.gz", progress=False)
    rl = rep.roofline
    assert rl.loc[rl["op"] == "aten::fill_", "flops"].isna().all()
    pw = rl[rl["op"] == "aten::pow"]
    assert (pw["achieved_gbps"] > pw["peak_gbps"]).all() and (pw["roof_note"] == ABOVE_MEMORY_ROOF).all()
    pts = view_model(rep)[0]["roofline"]["points"]
    assert {p["op"] for p in pts} == {"aten::pow", "aten::mul"}
    assert all(p["note"] == ABOVE_MEMORY_ROOF for p in pts)


@pytest.mark.parametrize("name", ["wild/torch_libs", "wild/vit_compiled", "trust/l2_elementwise"])
def test_points_above_a_roof_say_why(name):
    rep = ks.load(DATA / f"{name}.pt.trace.json.gz", progress=False)
    roof = view_model(rep)[0]["roofline"]
    above = [p for p in roof["points"] if p["roof_share"] > 1]
    assert above, "these recordings have dots above their roof"
    for p in above:
        assert p["note"] == (ABOVE_MEMORY_ROOF if p["bound"] == "memory" else ABOVE_COMPUTE_ROOF)
    assert not [p for p in roof["points"] if p["roof_share"] <= 1 and p["note"]]
    assert f"{len(above)} dot(s) sit above their roof" in roof["note"]
    rl = rep.roofline
    hi = rl[rl["roof_share"] > 1]
    assert hi["roof_note"].notna().all()
