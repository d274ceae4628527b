"""Placement findings (kernelscope.analysis.findings.placement) on ONNX Runtime profiles.

The CPU recordings are real (benchmarks/onnxruntime/record.py). No GPU provider runs on this
machine, so the GPU session below is the real `mixed` profile with its float nodes' provider
renamed to the CUDA provider, Memcpy node events copied from a real node's, and two device
events in the shape ONNX Runtime's CUPTI manager writes and places (cupti_manager.cc, and
gpu_profiler_common.cc's MergeEvents: after the node's event, at its start plus 1 us each): it checks the rules'
arithmetic and wording, not what a CUDA run records (the lead's H200 recording will)."""
import copy
import gzip
import json
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.analysis.findings.placement import placement_findings, provider_shares
from kernelscope.reports.report import Report
from kernelscope.trace.onnxruntime import read_onnxruntime

DATA = Path(__file__).parents[1] / "data" / "onnxruntime"
FLOAT_OPS = {"MatMul", "FusedMatMul", "Softmax", "LayerNormalization", "Transpose"}


def _raw(name):
    return json.loads(gzip.decompress((DATA / f"{name}_cpu.onnxruntime_profile.json.gz").read_bytes()))


def _gpu_session():
    """The mixed profile as a CUDA session that left its integer nodes to the CPU."""
    out = []
    for e in _raw("mixed"):
        e = copy.deepcopy(e)
        out.append(e)
        if e["cat"] != "Node":
            continue
        if e["args"]["op_name"] in FLOAT_OPS:
            e["args"]["provider"] = "CUDAExecutionProvider"
        if e["name"] == "positions_kernel_time":     # the integer result goes back to the host
            m = copy.deepcopy(e)
            m["name"], m["ts"], m["dur"] = "Memcpy_token_0_kernel_time", e["ts"] + e["dur"], 7
            m["args"].update(op_name="MemcpyToHost", provider="CUDAExecutionProvider", output_size="2048")
            out.append(m)
        if e["name"] == "attend_kernel_time":
            args = {"stream": "7", "grid_x": "4", "grid_y": "2", "grid_z": "1", "block_x": "128", "block_y": "1",
                    "block_z": "1"}
            out.append({"cat": "Kernel", "pid": -1, "tid": -1, "ph": "X", "name": "volta_sgemm_128x64_nn",
                        "ts": e["ts"] + 2, "dur": 5, "args": {**args, "op_name": "MatMul"}})
            out.insert(-1, {"cat": "Kernel", "pid": -1, "tid": -1, "ph": "X", "name": "Memcpy HtoD",
                            "ts": e["ts"] + 1, "dur": 2, "args": {**args, "grid_x": "-1", "op_name": "MatMul"}})
    return out


@pytest.fixture(scope="module")
def gpu():
    events = _gpu_session()
    return events, Report(read_onnxruntime(events, "gpu_session.json", []))


def _nodes(events):
    return [e for e in events if e["cat"] == "Node" and "provider" in e["args"]]


def test_a_cpu_session_gets_only_its_share():
    rep = ks.load(DATA / "mlp_cpu.onnxruntime_profile.json.gz", progress=False)
    fs = placement_findings(rep)
    assert [f.kind for f in fs] == ["provider_share"] and fs[0].cost_us == 0
    total = sum(e["dur"] for e in _nodes(_raw("mlp")))
    assert fs[0].evidence["providers"] == [{"provider": "CPUExecutionProvider", "backend": "ORT CPU", "device": "CPU",
                                            "runs": 40, "time_us": total, "share": 1.0}]
    assert placement_findings(ks.load("tests/data/launch_bound.pt.trace.json.gz")) == []


def test_shares_are_each_providers_raw_time(gpu):
    events, rep = gpu
    s = provider_shares(rep).set_index("provider")
    cpu = sum(e["dur"] for e in _nodes(events) if e["args"]["provider"] == "CPUExecutionProvider")
    attend = sum(e["dur"] for e in _nodes(events) if e["name"] == "attend_kernel_time")
    cuda = sum(e["dur"] for e in _nodes(events) if e["args"]["provider"] == "CUDAExecutionProvider") - attend
    cuda += sum(e["dur"] for e in events if e["cat"] == "Kernel")   # attend's device work replaces its node
    assert s.loc["CPUExecutionProvider", "time_us"] == cpu
    assert s.loc["CUDAExecutionProvider", "time_us"] == cuda
    assert s["share"].sum() == pytest.approx(1.0)
    assert s.loc["CUDAExecutionProvider", ["backend", "device"]].tolist() == ["ORT CUDA", "CUDA"]


def test_fallback_names_the_cpu_nodes_with_their_time(gpu):
    events, rep = gpu
    f = {x.kind: x for x in rep.findings}["cpu_fallback"]
    want = {}
    for e in _nodes(events):
        if e["args"]["provider"] == "CPUExecutionProvider":
            n = e["name"].removesuffix("_kernel_time")
            want[n] = want.get(n, 0) + e["dur"]
    assert {e["node"]: e["time_us"] for e in f.evidence["nodes"]} == want
    assert f.cost_us == sum(want.values())
    assert {e["op"] for e in f.evidence["nodes"]} == {"Mod", "Cast", "CumSum"}
    assert "session.disable_cpu_ep_fallback" in f.fix and "CUDAExecutionProvider" in f.title
    assert f.link["names"][0] in want


def test_memcpy_nodes_are_copies_and_priced(gpu):
    events, rep = gpu
    m = [e for e in _nodes(events) if e["args"]["op_name"] == "MemcpyToHost"]
    c = rep.copies[rep.copies["op"] == "MemcpyToHost"]
    assert len(c) == len(m) == 10 and set(c["copy_kind"]) == {"DtoH"} and set(c["bytes"]) == {2048}
    assert set(c["device"]) == {"cuda:0"}
    f = {x.kind: x for x in rep.findings}["provider_copies"]
    assert f.cost_us == sum(e["dur"] for e in m) == 70
    assert "IOBinding" in f.fix and "graph_optimization_level" in f.fix


def test_device_kernels_take_the_nodes_place(gpu):
    events, rep = gpu
    k = rep.kernels[rep.kernels["name"] == "volta_sgemm_128x64_nn"]
    assert len(k) == 10 and set(k["op"]) == {"MatMul"} and set(k["device"]) == {"cuda:0"}
    assert k[["grid_x", "grid_y", "block_x", "stream"]].drop_duplicates().values.tolist() == [[4, 2, 128, 7]]
    assert "attend" not in set(rep.kernels["name"])
    assert (rep.ops["cat"] == "ort_node").sum() == 10 and set(rep.ops.loc[rep.ops["cat"] == "ort_node", "name"]) == {
        "attend"}
    htod = rep.copies[rep.copies["copy_kind"] == "HtoD"]
    assert len(htod) == 10 and set(htod["op"]) == {"MatMul"}
    assert set(rep.backends["device"]) >= {"CPU", "CUDA"}


def test_a_shape_only_fallback_is_low():
    events = _raw("mlp")
    for e in _nodes(events):
        e["args"]["provider"] = "CUDAExecutionProvider"
    shape = copy.deepcopy(_nodes(events)[0])
    shape["name"], shape["args"]["op_name"] = "shape_kernel_time", "Shape"
    shape["args"]["provider"] = "CPUExecutionProvider"
    events.append(shape)
    rep = Report(read_onnxruntime(events, "x", []))
    f = {x.kind: x for x in rep.findings}["cpu_fallback"]
    assert f.severity == "low" and "on purpose" in f.detail
