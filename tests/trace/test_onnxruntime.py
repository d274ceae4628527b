"""ONNX Runtime profiles (kernelscope.trace.onnxruntime) on the CPU recordings of
benchmarks/onnxruntime/record.py: every number checked against the raw JSON read with json."""
import gzip
import json
import re
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.jupyter.server import file_pattern, report_payload
from kernelscope.trace.onnxruntime import looks_like_onnxruntime, read_onnxruntime
from kernelscope.view.codec import read_payload

DATA = Path(__file__).parents[1] / "data" / "onnxruntime"
NAMES = ("mlp", "convnet", "mixed")


def _path(name):
    return DATA / f"{name}_cpu.onnxruntime_profile.json.gz"


def _raw(name):
    return json.loads(gzip.decompress(_path(name).read_bytes()))


def _nodes(events):
    return [e for e in events if e["cat"] == "Node" and "provider" in e["args"]]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return _raw(request.param), ks.load(_path(request.param), progress=False)


def test_every_node_run_is_a_kernel_row_with_its_time_provider_and_shapes(pair):
    raw, rep = pair
    nodes = _nodes(raw)
    k = rep.kernels
    assert len(k) == len(nodes) and len(rep.copies) == 0
    assert k["name"].tolist() == [e["name"].removesuffix("_kernel_time") for e in nodes]
    assert k["op"].tolist() == [e["args"]["op_name"] for e in nodes]
    assert k["start_us"].tolist() == [float(e["ts"]) for e in nodes]
    assert k["duration_us"].tolist() == [float(e["dur"]) for e in nodes]
    assert set(k["kernel_backend"]) == {"CPUExecutionProvider"} == {e["args"]["provider"] for e in nodes}
    assert set(k["backend"]) == {"ORT CPU"} and set(k["device"]) == {"cpu:0"}
    want = [[next(iter(s.values())) for s in e["args"]["input_type_shape"]] for e in nodes]
    assert k["input_dims"].tolist() == want
    assert k["output_dims"].tolist() == [[next(iter(s.values())) for s in e["args"]["output_type_shape"]]
                                         for e in nodes]
    pool = [1 + sum(1 for s in e["args"]["thread_scheduling_stats"]["sub_threads"].values() if s["num_run"] > 0)
            for e in nodes]
    assert k["pool_threads"].tolist() == pool


def test_summary_and_backends_add_up_to_the_raw_durations(pair):
    raw, rep = pair
    nodes = _nodes(raw)
    totals = {}
    for e in nodes:
        n = e["name"].removesuffix("_kernel_time")
        totals[n] = totals.get(n, 0) + e["dur"]
    s = rep.summary().set_index("name")
    assert s["total_us"].to_dict() == pytest.approx(totals)
    b = rep.backends
    assert b[["device", "backend", "launches"]].values.tolist() == [["CPU", "ORT CPU", len(nodes)]]
    assert b["gpu_time_us"].iloc[0] == sum(e["dur"] for e in nodes)


def test_sessions_and_runs_are_annotations_and_each_node_knows_its_run(pair):
    raw, rep = pair
    sessions = [e for e in raw if e["cat"] == "Session"]
    ops = rep.ops
    assert set(ops["cat"]) == {"user_annotation"}
    assert sorted(zip(ops["name"], ops["start_us"], ops["duration_us"])) == sorted(
        (e["name"], float(e["ts"]), float(e["dur"])) for e in sessions)
    runs = sorted((e["ts"], e["ts"] + e["dur"], str(e["tid"])) for e in sessions if e["name"] == "model_run")
    assert rep.meta["onnxruntime_runs"] == len(runs) == 10
    for (_, row) in rep.kernels.iterrows():
        start, end, tid = runs[int(row["run"])]
        assert start <= row["start_us"] <= end and tid == row["launch_tid"]


def test_threads_of_a_session_served_from_two_threads():
    raw = _raw("mixed")
    rep = ks.load(_path("mixed"), progress=False)
    tids = {str(e["tid"]) for e in _nodes(raw)}
    assert len(tids) == 2 and set(rep.kernels["launch_tid"]) == tids
    assert sorted(rep.kernels["stream"].unique()) == [0, 1]
    per_tid = rep.kernels.groupby("launch_tid")["run"].nunique().to_dict()
    assert per_tid == dict.fromkeys(tids, 5)


def test_views_work_on_a_profile():
    rep = ks.load(_path("convnet"), progress=False)
    bundle = rep._repr_mimebundle_()
    assert "application/vnd.kernelscope.report.v1+json" in bundle
    assert "ORT CPU" in bundle["text/plain"] and "devices: CPU" in bundle["text/plain"]
    header = read_payload(report_payload(str(_path("convnet"))))[0]
    assert header["capabilities"]["duration_source"] == "ONNX Runtime's profiler"
    assert [f.kind for f in rep.findings] == ["provider_share"]


def test_compare_two_profiles_node_for_node():
    a, b = (ks.load(_path(n), progress=False) for n in ("mlp", "mlp"))
    c = ks.compare(a, b)
    assert sorted(c.kernels["name"]) == sorted(a.summary()["name"])
    assert set(c.kernels["status"]) == {"same"} and set(c.kernels["backend"]) == {"ORT CPU"}
    assert "application/vnd.kernelscope.report.v1+json" in ks.compare(a, ks.load(_path("mixed"), progress=False)
                                                                    )._repr_mimebundle_()


def test_a_node_name_is_escaped_in_html(tmp_path):
    text = gzip.decompress(_path("mlp").read_bytes()).decode().replace("fc3_kernel_time", "<script>x</script>_kernel_time")
    p = tmp_path / "onnxruntime_profile_hostile.json"
    p.write_text(text)
    rep = ks.load(p, progress=False)
    assert "<script>x</script>" in set(rep.kernels["name"])
    html = rep._repr_html_()
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_truncated_and_foreign_files_are_trace_errors(tmp_path):
    raw = gzip.decompress(_path("mlp").read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ks.TraceError, match=r"cut\.json: the ONNX Runtime profile ends early"):
        ks.load(cut, progress=False)
    cutgz = tmp_path / "cut.json.gz"
    cutgz.write_bytes(_path("mlp").read_bytes()[:1500])
    with pytest.raises(ks.TraceError, match="cut.json.gz"):
        ks.load(cutgz, progress=False)
    foreign = tmp_path / "foreign.json"
    foreign.write_text('[{"cat": "Node", "name": "x", "args": {"op_name": 5}}]')
    with pytest.raises(ks.TraceError, match="not an ONNX Runtime profile: it holds no Session or Node event"):
        ks.load(foreign, progress=False)
    with pytest.raises(ks.TraceError):
        read_onnxruntime({"cat": "Node"}, "x", [])
    assert not looks_like_onnxruntime(b'[{"ph": "X", "name": "aten::mm", "cat": "cpu_op"}]')


def test_odd_fields_are_left_empty_not_fatal():
    events = _raw("mlp")
    node = _nodes(events)[0]
    node["args"]["input_type_shape"] = "not a list"
    node["args"]["thread_scheduling_stats"] = 7
    node["args"]["provider"] = ["x"]
    node["name"] = 12
    events.append({"cat": "Node", "ph": "X", "ts": "soon", "dur": 1, "name": "late", "args": {}})
    notes = []
    t = read_onnxruntime(events, "odd", notes)
    row = t.kernels.iloc[0]
    assert row["input_dims"] is None and row["pool_threads"] is pd_na() and row["kernel_backend"] is None
    assert row["device_type"] == "unknown"
    assert any("skipped 1 event" in n for n in notes)


def pd_na():
    import pandas as pd
    return pd.NA


def test_the_file_browser_opens_onnxruntime_names():
    assert re.search(file_pattern(), "onnxruntime_profile__2026-12-04_00-17-03.json")
    assert re.search(file_pattern(), "mlp_cpu.onnxruntime_profile.json.gz")
    assert not re.search(file_pattern(), "onnxruntime_notes.txt")


def test_a_saved_report_keeps_providers_and_shapes(tmp_path):
    rep = ks.load(_path("mixed"), progress=False)
    rep.save(tmp_path / "r.ksreport.json.gz")
    back = ks.load(tmp_path / "r.ksreport.json.gz")
    assert back.kernels["backend"].tolist() == rep.kernels["backend"].tolist()
    assert back.kernels["input_dims"].tolist() == rep.kernels["input_dims"].tolist()
    assert [f.kind for f in back.findings] == ["provider_share"]


def test_every_provider_has_a_backend_of_the_vocabulary_and_a_device_label():
    from kernelscope.analysis.backend_rules import BACKENDS, provider_backend
    from kernelscope.analysis.devices import PREFIXES
    from kernelscope.trace.onnxruntime import PROVIDERS
    assert {label for label, _ in PROVIDERS.values()} <= set(BACKENDS)
    assert {device for _, device in PROVIDERS.values()} <= set(PREFIXES)
    assert all(provider_backend(p) == label for p, (label, _) in PROVIDERS.items())
