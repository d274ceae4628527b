"""The completeness ledger (kernelscope/analysis/completeness.py) on real H200 recordings, whole and
edited to lose what a real recording loses: kernels (launches with no kernel), runtime calls (kernels
with no launch), events the reader must skip; and launches inside a stream capture, which build a
graph and are owed no kernel."""
import gzip
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.completeness import NOT_TOLD, completeness, profiler_said
from tests.conftest import DATA


def _doc(name="mlp_train.pt.trace.json.gz"):
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


def _load(doc, tmp_path, name="edited.pt.trace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return ks.load(path)


def _kinds(rep):
    return [f.kind for f in rep.findings]


@pytest.mark.parametrize("name", ["mlp_train.pt.trace.json.gz", "launch_bound.pt.trace.json.gz",
                                  "graphs.pt.trace.json.gz", "conv_net.pt.trace.json.gz",
                                  "copies_streams.pt.trace.json.gz"])
def test_complete_recordings_miss_nothing(name):
    rep = ks.load(DATA / name)
    c = rep.completeness
    assert c.complete and c.missing == []
    assert c.recorded["kernels"] == len(rep.kernels)
    assert c.recorded["copies"] + c.recorded["memsets"] == len(rep.copies)
    assert c.gap("launches_without_kernel").count == 0
    assert c.gap("gpu_records_without_launch").count == 0
    # A trace file keeps no profiler log: its drop counts are not told, not 0.
    assert c.gap("profiler_dropped").count is None and NOT_TOLD in c.line
    assert "incomplete_recording" not in _kinds(rep)


def test_conv_net_memsets_without_record_are_not_called_missing():
    # cuBLAS's zero-byte workspace memsets (0.6 us calls inside aten::addmm) enqueue nothing.
    c = ks.load(DATA / "conv_net.pt.trace.json.gz").completeness
    g = c.gap("copy_calls_without_record")
    assert g.count == 2 and not g.missing and "zero-byte" in g.meaning and c.complete


def test_dropped_kernels_are_launches_without_kernel(tmp_path):
    doc = _doc()
    kernels = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"]
    gone = set(kernels[10:15])
    doc["traceEvents"] = [e for i, e in enumerate(doc["traceEvents"]) if i not in gone]
    rep = _load(doc, tmp_path)
    c = rep.completeness
    assert len(rep.kernels) == 69 and not c.complete
    g = c.gap("launches_without_kernel")
    assert g.count == 5 and "5 of 74 kernel launches" in g.meaning and "undercount" in g.meaning
    assert "missing: 5 launches with no kernel" in c.line
    f = next(f for f in rep.findings if f.kind == "incomplete_recording")
    assert f.severity == "medium" and "5 launches with no kernel" in f.title
    assert "GPU busy time, kernel time and the kernel table undercount" in f.detail
    assert f.evidence["launches_without_kernel"] == 5


def test_dropped_runtime_calls_are_kernels_without_launch(tmp_path):
    doc = _doc()
    events = doc["traceEvents"]
    launches = [i for i, e in enumerate(events) if e.get("name") == "cudaLaunchKernel"]
    gone = set(launches[:3])
    doc["traceEvents"] = [e for i, e in enumerate(events) if i not in gone]
    rep = _load(doc, tmp_path)
    g = rep.completeness.gap("gpu_records_without_launch")
    assert g.count == 3 and "no CPU op" in g.meaning
    assert rep.completeness.gap("launches_without_kernel").count == 0
    f = next(f for f in rep.findings if f.kind == "incomplete_recording")
    assert f.severity == "low" and "3 kernels or copies with no launch" in f.title


def test_events_the_reader_skips_are_counted(tmp_path):
    doc = _doc()
    bad = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"][:4]
    for e in bad:
        e["ts"] = "garbled"
    rep = _load(doc, tmp_path)
    g = rep.completeness.gap("events_repaired")
    assert g.count == 4 and g.missing and not rep.completeness.complete
    assert "skipped 4 malformed event(s) of 909" in rep.notes


def test_launches_inside_a_stream_capture_owe_no_kernel(tmp_path):
    # A capture on the launching thread around some launches, whose kernels then never ran.
    doc = _doc("launch_bound.pt.trace.json.gz")
    events = doc["traceEvents"]
    launches = [e for e in events if e.get("name") == "cudaLaunchKernel"][100:110]
    corr = {e["args"]["correlation"] for e in launches}
    doc["traceEvents"] = [e for e in events if not (e.get("cat") == "kernel" and e["args"].get("correlation") in corr)]
    first, last = launches[0], launches[-1]
    for name, ts in (("cudaStreamBeginCapture", first["ts"] - 1.0), ("cudaStreamEndCapture", last["ts"] + last["dur"] + 0.1)):
        doc["traceEvents"].append({**first, "name": name, "ts": ts, "dur": 0.5,
                                   "args": {**first["args"], "correlation": 10**7 + int(ts)}})
    rep = _load(doc, tmp_path)
    c = rep.completeness
    assert len(rep.kernels) == 1990
    assert c.gap("launches_without_kernel").count == 0 and c.complete
    g = c.gap("launches_in_capture")
    assert g.count == 10 and not g.missing
    assert "incomplete_recording" not in _kinds(rep)


def test_the_profiler_log_of_a_foreign_subscriber():
    # Kineto's own lines, recorded on an H200 while Proton held CUPTI.
    log = (DATA / "counters" / "record_log.txt").read_text().splitlines()
    said = profiler_said(log)
    assert said["foreign_subscriber"] == 2 and said["dropped_records"] == 0
    assert any("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in ln for ln in said["lines"])
    assert profiler_said(["WARNING:2026 1:1 CuptiActivityApi.cpp:326] Dropped 12 activity records"])["dropped_records"] == 12


def test_a_live_capture_that_dropped_records_says_so():
    rep = ks.load(DATA / "counters" / "live_counters.ksreport.json.gz")
    assert rep.completeness.source == "live capture"
    rep.meta["profiler_said"] = profiler_said(["Dropped 7 activity records"])
    rep.__dict__.pop("completeness", None)
    rep.__dict__.pop("findings", None)
    g = rep.completeness.gap("profiler_dropped")
    assert g.count == 7 and "dropped 7 activity record" in g.meaning
    f = next(f for f in rep.findings if f.kind == "incomplete_recording")
    assert f.severity == "medium" and "every count and time may undercount" in f.detail
    rep.meta["profiler_said"] = profiler_said([])
    assert completeness(rep.trace).complete


def test_nsight_compute_tells_no_launches():
    rep = ks.load_ncu(DATA / "ncu_mlp_train.csv")
    c = rep.completeness
    assert c.source == "Nsight Compute replay"
    assert c.recorded["runtime_calls"] is None and c.recorded["cpu_ops"] is None
    assert c.gap("launches_without_kernel").count is None and c.complete
    assert f"launches and their GPU records: {NOT_TOLD}" in c.line


def test_a_saved_report_keeps_the_ledger(tmp_path):
    doc = _doc()
    kernels = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"]
    doc["traceEvents"] = [e for i, e in enumerate(doc["traceEvents"]) if i not in set(kernels[:2])]
    rep = _load(doc, tmp_path)
    back = ks.load(rep.save(tmp_path / "r.ksreport.json.gz"))
    assert back.completeness.to_dict() == rep.completeness.to_dict()
    assert back.completeness.gap("launches_without_kernel").count == 2


def test_every_output_shows_the_ledger_line(tmp_path):
    from kernelscope.view.report import view_model
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    line = rep.completeness.line
    assert f"recording: {line}" in repr(rep)
    assert line in rep.to_markdown()
    assert view_model(rep)[0]["completeness"]["line"] == line
    assert line.replace("'", "&#x27;") in rep._repr_html_()


def test_a_trace_file_with_kinetos_logged_warnings_tells_its_drops(tmp_path):
    # Kineto before pytorch/kineto#1460 wrote its logged warnings into the file ("WARNING").
    d = _doc()
    d["WARNING"] = ["Dropped 12 activity records"]
    p = tmp_path / "warned.pt.trace.json"
    p.write_text(json.dumps(d))
    gap = next(g for g in ks.load(str(p)).completeness.gaps if g.key == "profiler_dropped")
    assert gap.count == 12 and "dropped 12" in gap.meaning
