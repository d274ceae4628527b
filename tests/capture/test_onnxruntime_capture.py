"""``ks.profile(onnxruntime=session)`` on the CPU with a real ONNX Runtime session: the session's
profile is ended at the stop and its node runs inside the recording become CPU ops on the
recording's clock (the CUDA side, kernels under their nodes, is tests/capture/test_gpu_onnxruntime.py)."""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

import kernelscope as ks
from kernelscope.errors import TraceError


def _session(tmp_path, profiling=True):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 32])], [w])
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    so = ort.SessionOptions()
    so.enable_profiling = profiling
    so.profile_file_prefix = str(tmp_path / "g")
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return sess, {"x": rng.standard_normal((8, 64)).astype(np.float32)}


def test_node_runs_inside_the_recording_join_its_clock(tmp_path):
    sess, feeds = _session(tmp_path)
    for _ in range(3):
        sess.run(None, feeds)                 # before the recording: left out
    with ks.profile(onnxruntime=sess) as prof:
        for _ in range(4):
            sess.run(None, feeds)
            torch.ones(16).add_(1)            # a torch op after each run, on the same clock
    rep = prof.report
    nodes = rep.ops[rep.ops["cat"] == "ort_node"]
    assert sorted(nodes["name"].value_counts().to_dict().items()) == [("mm", 4), ("relu", 4)]
    assert set(nodes["kernel_backend"]) == {"CPUExecutionProvider"}
    assert (nodes["start_us"] >= 0).all() and (nodes["start_us"] <= rep.trace.meta["span_us"]).all()
    # each run's nodes come before the torch op that followed it, and after the previous one
    adds = rep.ops[rep.ops["name"] == "aten::add_"]["start_us"].sort_values().to_numpy()
    mm = nodes[nodes["name"] == "mm"]["start_us"].sort_values().to_numpy()
    assert len(adds) == 4 and (mm < adds).all() and (mm[1:] > adds[:-1]).all()
    joined = rep.trace.meta["onnxruntime_joined"]
    assert joined["node_runs"] == 8 and joined["kernels"] == 0 and joined["start_ns"] == sess.get_profiling_start_time_ns()
    # the file ONNX Runtime wrote loads again on the same clock as the saved trace
    assert ks.load(joined["profile"]).kernels["name"].value_counts()["mm"] == 7


def test_a_session_without_profiling_says_so(tmp_path):
    sess, feeds = _session(tmp_path, profiling=False)
    with ks.profile(onnxruntime=sess) as prof:
        sess.run(None, feeds)
        torch.ones(4).add_(1)
    assert any("was not profiling" in n for n in prof.report.trace.meta["notes"])


def test_load_joins_a_saved_trace_and_profile(tmp_path):
    sess, feeds = _session(tmp_path)
    trace = tmp_path / "run.pt.trace.json.gz"
    with ks.profile(trace_path=trace):
        sess.run(None, feeds)
        torch.ones(4).add_(1)
    start = sess.get_profiling_start_time_ns()
    profile = sess.end_profiling()
    rep = ks.load(trace, onnxruntime=(profile, start))
    assert set(rep.ops.loc[rep.ops["cat"] == "ort_node", "name"]) == {"mm", "relu"}
    with pytest.raises(TraceError, match="no node run inside the recording"):
        ks.load(trace, onnxruntime=(profile, start + 10**12))      # a start far off: nothing inside
    with pytest.raises(TraceError):
        ks.load(trace, onnxruntime=(trace, start))                 # not an ONNX Runtime profile
