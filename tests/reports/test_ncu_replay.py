"""An Nsight Compute report is a replay, not a timeline (issue 28): on real H200 reports, no
"GPU busy", no wall time, findings priced in kernel time, durations named as Nsight Compute's,
an honest roofline axis, and only the tabs and tiles a replay can fill; text, HTML and the
view's payload say the same."""
import pytest

import kernelscope as ks
from kernelscope.view.report import view_model
from tests.conftest import DATA

TIMELINE_KINDS = {"host_bound", "launch_bound", "gpu_bound", "syncs", "pageable_copies", "serialized_copies", "streams",
                  "cuda_graphs", "empty_capture"}


@pytest.fixture(scope="module")
def csv_rep():
    return ks.load_ncu(DATA / "ncu_mlp_train.csv")


@pytest.fixture(scope="module")
def rep_full():
    pytest.importorskip("ncu_report")
    return ks.load_ncu(DATA / "ncu_rep" / "resnet50_full.ncu-rep.xz")


def test_csv_replay_has_no_busy_or_wall_time(csv_rep):
    assert csv_rep.wall_time_us is None
    assert csv_rep.time_base == (pytest.approx(csv_rep.gpu_time_us), "kernel time")
    # before: "[info] The GPU was busy 100% of its active window: the time is in the kernels"
    assert not any("busy" in f.title.lower() for f in csv_rep.findings)
    text = repr(csv_rep)
    assert "GPU busy" not in text and "wall time" not in text
    assert "Nsight Compute replay: 86 launches of 25 kernels" in text
    assert "measured by Nsight Compute under replay" in text
    html = csv_rep._repr_html_()
    assert "GPU busy" not in html and "wall time" not in html and "CPU ops" not in html
    hd = view_model(csv_rep)[0]
    caps = hd["capabilities"]
    assert caps["kind"] == "replay" and not caps["timeline"]
    assert "Timeline" not in caps["tabs"] and "CPU ops" not in caps["tabs"] and "Kernels" in caps["tabs"]
    assert "GPU busy" not in caps["tiles"] and "wall time" not in caps["tiles"]
    assert caps["duration_source"] == "Nsight Compute"
    assert hd["stats"]["gpu_busy"] is None and hd["stats"]["wall_us"] is None


def test_full_report_prices_findings_in_kernel_time(rep_full):
    fixes = rep_full.time_base
    assert fixes[1] == "kernel time"
    hd = view_model(rep_full)[0]
    assert hd["fixes"] and all(f["share_text"].endswith("of kernel time") for f in hd["fixes"] if f["cost_us"])
    total = sum(f["cost_us"] for f in hd["fixes"] if f["cost_us"])
    first = hd["fixes"][0]
    assert first["share_of_wall"] == pytest.approx(first["cost_us"] / rep_full.gpu_time_us)
    assert not {f.kind for f in rep_full.findings} & TIMELINE_KINDS
    text = repr(rep_full)
    assert "share of kernel time" in text and "of wall time" not in text
    assert f"{first['cost_text']}, {first['share_text']}" in text
    html = rep_full._repr_html_()
    assert first["share_text"] in html and "of wall time" not in html
    # the roofline axis says what the note says: measured, not counted from op shapes
    assert hd["roofline"]["x_label"] == "arithmetic intensity (FLOP/byte at DRAM, measured by Nsight Compute)"
    assert "measured by Nsight Compute" in hd["roofline"]["note"]
    assert total > 0


def test_a_run_keeps_its_timeline():
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    hd = view_model(rep)[0]
    assert hd["capabilities"]["kind"] == "run" and "Timeline" in hd["capabilities"]["tabs"]
    assert hd["capabilities"]["duration_source"] == "CUPTI"
    assert rep.time_base[1] == "wall time" and rep.wall_time_us
    assert hd["roofline"] is None or "op shapes" in hd["roofline"]["x_label"]
    # merged with a Kineto run, ncu's measurements do not make it a replay
    merged = ks.load_ncu(DATA / "ncu_mlp_train.csv", kernels_report=rep)
    assert view_model(merged)[0]["capabilities"]["kind"] == "run"
