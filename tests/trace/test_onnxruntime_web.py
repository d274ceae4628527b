"""onnxruntime-web runs recorded in headless Chromium (Chromium 156, SwiftShader's Vulkan as the
WebGPU adapter, onnxruntime-web 1.31.1) by benchmarks/onnxruntime/webgpu_record.py, read by ks.load:
tests/data/onnxruntime/webgpu_mlp.{webgpu,wasm,webgpu-native}.ortweb.json. Numbers are checked
against the raw files read with json."""
import json

import pytest

import kernelscope as ks
from kernelscope.errors import TraceError
from kernelscope.trace.onnxruntime_web import looks_like_ortweb, read_ortweb
from tests.conftest import DATA

DIR = DATA / "onnxruntime"
JSEP, WASM, NATIVE = (DIR / f"webgpu_mlp.{ep}.ortweb.json" for ep in ("webgpu", "wasm", "webgpu-native"))


def _raw(path):
    doc = json.loads(path.read_text())
    events = []
    for line in doc["console"]:
        line = line.strip().rstrip(",")
        if line.startswith("{"):
            events.append(json.loads(line))
    return doc, events


def test_jsep_webgpu_run_reads_per_node_provider_kernels_and_the_fallback():
    doc, events = _raw(JSEP)
    rep = ks.load(JSEP)
    nodes = [e for e in events if e["cat"] == "Node"]
    ops = rep.ops[rep.ops["cat"] == "onnxruntime_node"]
    assert len(ops) == len(nodes) == 30      # 6 nodes x 5 runs
    assert ops["duration_us"].sum() == pytest.approx(sum(e["dur"] for e in nodes))
    by_type = dict(zip(ops["op_type"], ops["backend"]))
    # TopK has no JSEP kernel: it fell back to the CPU (WASM), with a copy from the GPU before it
    assert by_type == {"Gemm": "WebGPU", "Relu": "WebGPU", "Softmax": "WebGPU", "MemcpyToHost": "WebGPU",
                       "TopK": "WASM"}
    assert set(ops.loc[ops["op_type"] == "TopK", "provider"]) == {"CPUExecutionProvider"}
    copies = [e for e in nodes if e["args"]["op_name"] == "MemcpyToHost"]
    assert len(rep.copies) == len(copies) == 5 and set(rep.copies["copy_kind"]) == {"DtoH"}
    assert rep.copies["duration_us"].sum() == pytest.approx(sum(e["dur"] for e in copies))
    # kernels: the GPU timestamp records, one per dispatch, named by their WGSL program
    k = rep.kernels
    assert len(k) == len(doc["kernels"]) == 20
    assert k["duration_us"].sum() == pytest.approx(sum(r["endTime"] - r["startTime"] for r in doc["kernels"]) / 1e3)
    assert list(k["name"][:4]) == [r["programName"] for r in doc["kernels"][:4]] == \
        ["GemmShared", "Relu", "GemmShared", "Softmax"]
    assert list(k["op"][:4]) == [r["kernelName"] for r in doc["kernels"][:4]]
    assert set(k["device"]) == {"webgpu:0"} and set(k["backend"]) == {"ORT WebGPU"}
    assert "timestamp-query" in doc["adapter"]["features"] and doc["adapter"]["architecture"] == "swiftshader"
    b = rep.backends
    assert set(b.loc[b["device"] == "WebGPU", "backend"]) == {"ORT WebGPU", "memcpy"}


def test_each_runs_kernels_start_with_their_first_node():
    rep = ks.load(JSEP)
    ops, k = rep.ops, rep.kernels
    firsts = ops[(ops["name"] == "fc1_matmul/MatMulAddFusion")]
    heads = k[k["op"] == "fc1_matmul/MatMulAddFusion"]
    assert heads["start_us"].tolist() == pytest.approx(firsts["start_us"].tolist())


def test_wasm_run_has_cpu_nodes_only():
    doc, events = _raw(WASM)
    rep = ks.load(WASM)
    nodes = [e for e in events if e["cat"] == "Node"]
    ops = rep.ops[rep.ops["cat"] == "onnxruntime_node"]
    assert len(ops) == len(nodes) and set(ops["backend"]) == {"WASM"}
    assert len(rep.kernels) == 0 and len(rep.devices) == 0
    assert "FusedGemm" in set(ops["op_type"])     # the CPU provider fused Gemm+Relu; JSEP did not


def test_native_webgpu_ep_kernels_come_from_the_profile():
    doc, events = _raw(NATIVE)
    api = [e for e in events if e["cat"] == "Api"]
    rep = ks.load(NATIVE)
    assert len(rep.kernels) == len(api) == 25
    assert rep.kernels["duration_us"].sum() == pytest.approx(sum(e["dur"] for e in api))
    ops = rep.ops[rep.ops["cat"] == "onnxruntime_node"]
    assert set(ops["provider"]) == {"WebGpuExecutionProvider"}     # TopK runs on the GPU here
    assert set(rep.kernels["name"]) == {"Gemm", "Relu", "Softmax", "TopK"}


def test_detection_and_a_truncated_file(tmp_path):
    raw = JSEP.read_bytes()
    assert looks_like_ortweb(raw) and not looks_like_ortweb((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    cut = tmp_path / "cut.ortweb.json"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceError, match="truncated"):
        read_ortweb(cut)
    with pytest.raises(TraceError):
        ks.load(cut)
    empty = tmp_path / "none.ortweb.json"
    empty.write_text(json.dumps({"format": "onnxruntime-web", "console": ["hello"]}))
    with pytest.raises(TraceError, match="enableProfiling"):
        ks.load(empty)
