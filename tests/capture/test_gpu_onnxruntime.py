"""An ONNX Runtime CUDA session recorded live (run on the H200 with onnxruntime-gpu:
``pytest -m gpu tests/capture/test_gpu_onnxruntime.py``): ``ks.profile(onnxruntime=sess)`` puts
each node over the CUDA kernels it launched."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
ort = pytest.importorskip("onnxruntime")
if "CUDAExecutionProvider" not in ort.get_available_providers():
    pytest.skip("onnxruntime has no CUDA provider (onnxruntime-gpu)", allow_module_level=True)
onnx = pytest.importorskip("onnx")

import kernelscope as ks


def _mlp(tmp_path):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
         for n, s in (("w1", (512, 1024)), ("b1", (1024,)), ("w2", (1024, 512)), ("b2", (512,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["y0"], name="fc2"),
             helper.make_node("Softmax", ["y0"], ["y"], name="softmax", axis=1)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 512])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 512])], w)
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path, rng.standard_normal((256, 512)).astype(np.float32)


def test_each_ort_kernel_has_its_node(tmp_path):
    path, x = _mlp(tmp_path)
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "mlp")
    sess = ort.InferenceSession(str(path), so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, {"x": x})                      # warm-up: outside the recording, left out
    with ks.profile(onnxruntime=sess) as prof:
        for _ in range(4):
            sess.run(None, {"x": x})
    rep = prof.report
    k = rep.kernels
    print(k[["short_name", "op", "provider", "backend", "duration_us"]].to_string())
    joined = rep.trace.meta["onnxruntime_joined"]
    print(joined)
    nodes = rep.ops[rep.ops["cat"] == "ort_node"]
    assert set(nodes["name"]) >= {"fc1", "relu", "fc2", "softmax"} and len(nodes) % 4 == 0
    assert set(nodes["kernel_backend"]) == {"CUDAExecutionProvider"}
    assert len(k) and k["op"].notna().all() and set(k["provider"]) == {"CUDAExecutionProvider"}
    assert "cuBLAS" in set(k.loc[k["op"] == "Gemm", "backend"])
    # a kernel's node holds its launch call
    ops = rep.ops
    for _, row in k.iterrows():
        node = ops.loc[int(row["op_index"])]
        assert node["start_us"] <= row["launch_start_us"] <= node["start_us"] + node["duration_us"]
    # the input's copy in and the result's copy out belong to the run, not to nothing
    assert len(rep.copies) >= 8
