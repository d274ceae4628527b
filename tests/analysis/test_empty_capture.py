"""Empty captures said plainly. tests/data/counters/empty_other_subscriber.pt.trace.json.gz is a real
torch.profiler run on an H200 while Triton's Proton held CUPTI: Kineto logged
CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39) and recorded 0 kernels although the cell ran GPU work."""
import dataclasses

import kernelscope as ks
from kernelscope.reports.report import Report
from tests.conftest import DATA


def test_recorded_empty_capture_says_so_with_causes():
    rep = ks.load(DATA / "counters" / "empty_other_subscriber.pt.trace.json.gz")
    assert len(rep.kernels) == 0
    f = rep.findings[0]
    assert (f.kind, f.severity) == ("empty_capture", "high")
    assert "no GPU kernels" in f.title.replace("No", "no")
    assert "aten::mm" in f.detail and "NVIDIA H200" in f.detail
    assert "CUPTI subscriber" in f.detail and "Proton" in f.detail and "CUDA graph" in f.detail
    assert f.evidence["cpu_ops"] == 17
    from kernelscope.view.report import view_model
    assert view_model(rep)[0]["findings"][0]["kind"] == "empty_capture"


def test_live_path_runtime_calls_but_no_kernels():
    # What a live capture under another CUPTI client leaves: the host side (launch calls, CUDA
    # events' time) but no GPU activity. Built from a real recording with its GPU tables emptied.
    t = ks.load(DATA / "mlp_train.pt.trace.json.gz").trace
    empty = dataclasses.replace(t, kernels=t.kernels.iloc[:0], copies=t.copies.iloc[:0],
                                meta={**t.meta, "cuda_event_us": 1234.0})
    f = [x for x in Report(empty).findings if x.kind == "empty_capture"][0]
    assert f.evidence["launch_calls"] == int(t.runtime["name"].str.contains("Launch|Memcpy|Memset").sum()) > 0
    assert "launch/copy call(s)" in f.detail and "1.23 ms" in f.detail


def test_no_empty_capture_finding_when_kernels_were_recorded_or_there_was_no_gpu():
    assert not [f for f in ks.load(DATA / "mlp_train.pt.trace.json.gz").findings if f.kind == "empty_capture"]
    t = ks.load(DATA / "mlp_train.pt.trace.json.gz").trace
    none = dataclasses.replace(t, kernels=t.kernels.iloc[:0], copies=t.copies.iloc[:0], meta={**t.meta, "no_gpu": True})
    assert not [f for f in Report(none).findings if f.kind == "empty_capture"]
