"""Record real ONNX Runtime profiles (issue 44), for kernelscope's ONNX Runtime reader.

    python benchmarks/onnxruntime/record.py OUT [--provider CUDAExecutionProvider] [--runs 8]

Builds small models with ``onnx.helper`` (no torch or onnxscript needed), runs each through an
``InferenceSession`` with ``SessionOptions.enable_profiling = True`` and two intra-op threads, and
writes under OUT, for each model NAME:

- ``NAME.onnx``: the model;
- ``NAME_PROVIDER.onnxruntime_profile.json.gz``: ONNX Runtime's profile (the file
  ``end_profiling()`` wrote, gzipped as it was; PROVIDER is ``cpu``, ``cuda``, ... from
  ``--provider``).

The models: ``mlp`` (Gemm/Relu/Softmax), ``convnet`` (Conv, MaxPool, BatchNormalization,
GlobalAveragePool, Gemm), ``mixed`` (attention-like MatMul, Softmax, LayerNormalization beside
an integer branch, ``Mod`` on int64 and ``CumSum`` on int32, run from two Python threads at once
as a server would; on a CUDA session the integer nodes are where a fallback to the CPU, and the
Memcpy nodes around it, would show if the CUDA provider lacks their kernels. On a CPU-only session
every node runs on the CPU and ONNX Runtime inserts no Memcpy node).

With ``--provider CUDAExecutionProvider`` the session lists the CUDA provider first and the CPU
provider after it (ONNX Runtime's fallback); the script runs on any machine where that provider
is available, and on the CPU. The CUDA provider's own kernel events (``Kernel`` events with grid
and block) are written only by an onnxruntime built with ``--enable_cuda_profiling``
(``ENABLE_CUDA_PROFILING``); with the stock ``onnxruntime-gpu`` wheel the profile holds the
node events alone, each node's time being its host-side call.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

import numpy as np


def _init(name, shape, rng, dtype=np.float32):
    from onnx import numpy_helper
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(dtype), name)


def mlp(rng):
    from onnx import TensorProto, helper
    d_in, hidden, out = 256, 512, 10
    inits = [_init("w1", (d_in, hidden), rng), _init("b1", (hidden,), rng),
             _init("w2", (hidden, hidden), rng), _init("b2", (hidden,), rng),
             _init("w3", (hidden, out), rng), _init("b3", (out,), rng)]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1"),
             helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
             helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
             helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
             helper.make_node("Gemm", ["a2", "w3", "b3"], ["h3"], name="fc3"),
             helper.make_node("Softmax", ["h3"], ["y"], name="softmax", axis=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", d_in])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", out])], inits)
    return graph, {"x": rng.standard_normal((64, d_in)).astype(np.float32)}


def convnet(rng):
    from onnx import TensorProto, helper
    c1, c2 = 16, 32
    inits = [_init("k1", (c1, 3, 3, 3), rng), _init("kb1", (c1,), rng),
             _init("scale", (c1,), rng), _init("bias", (c1,), rng), _init("mean", (c1,), rng),
             helper.make_tensor("var", TensorProto.FLOAT, [c1], [1.0] * c1),
             _init("k2", (c2, c1, 3, 3), rng), _init("kb2", (c2,), rng),
             _init("wf", (c2, 10), rng), _init("bf", (10,), rng)]
    nodes = [helper.make_node("Conv", ["x", "k1", "kb1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "scale", "bias", "mean", "var"], ["n1"], name="bn1"),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "k2", "kb2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "convnet",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
    return graph, {"x": rng.standard_normal((8, 3, 32, 32)).astype(np.float32)}


def mixed(rng):
    """Attention-like float work around integer ops a GPU provider may leave to the CPU."""
    from onnx import TensorProto, helper
    d = 64
    inits = [_init("wq", (d, d), rng), _init("wk", (d, d), rng), _init("gamma", (d,), rng),
             _init("beta", (d,), rng), helper.make_tensor("axis", TensorProto.INT32, [], [1]),
             helper.make_tensor("modulus", TensorProto.INT64, [], [7])]
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
             helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "x"], ["o"], name="attend"),
             helper.make_node("LayerNormalization", ["o", "gamma", "beta"], ["y"], name="norm", axis=-1),
             # integer bookkeeping: token ids folded, then a running count
             helper.make_node("Mod", ["ids", "modulus"], ["m"], name="ids_mod", fmod=0),
             helper.make_node("Cast", ["m"], ["m32"], name="to_int32", to=TensorProto.INT32),
             helper.make_node("CumSum", ["m32", "axis"], ["pos"], name="positions")]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 128, d]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 128, d]),
         helper.make_tensor_value_info("pos", TensorProto.INT32, ["batch", 128])], inits)
    feeds = {"x": rng.standard_normal((4, 128, d)).astype(np.float32),
             "ids": rng.integers(0, 1000, (4, 128)).astype(np.int64)}
    return graph, feeds


MODELS = {"mlp": mlp, "convnet": convnet, "mixed": mixed}


def record(name, out: Path, provider: str, runs: int, threads: int) -> Path:
    import onnx
    import onnxruntime as ort
    from onnx import helper
    rng = np.random.default_rng(0)
    graph, feeds = MODELS[name](rng)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    model_path = out / f"{name}.onnx"
    onnx.save(model, str(model_path))

    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = str(out / f"{name}_raw")
    opts.intra_op_num_threads = threads
    providers: list = [provider] if provider == "CPUExecutionProvider" else [provider, "CPUExecutionProvider"]
    sess = ort.InferenceSession(str(model_path), opts, providers=providers)
    if provider not in sess.get_providers():
        # ONNX Runtime falls back to the CPU with a warning: such a profile would be mislabelled.
        Path(sess.end_profiling()).unlink(missing_ok=True)
        sys.exit(f"{provider} is not available here (the session has {sess.get_providers()})")
    if name == "mixed":
        # Served from two Python threads at once, as a server does: each run's nodes are on its
        # caller's thread, so the profile holds runs that overlap on two threads.
        import threading
        workers = [threading.Thread(target=lambda: [sess.run(None, feeds) for _ in range(runs // 2)])
                   for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    else:
        for _ in range(runs):
            sess.run(None, feeds)
    raw = Path(sess.end_profiling())
    short = provider.replace("ExecutionProvider", "").lower()
    dest = out / f"{name}_{short}.onnxruntime_profile.json.gz"
    with raw.open("rb") as src, gzip.open(dest, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    events = json.loads(raw.read_text())
    raw.unlink()
    placed = sorted({(e["args"].get("provider"), e["args"].get("op_name")) for e in events
                     if e.get("cat") == "Node" and "provider" in e.get("args", {})})
    print(f"{dest}: {len(events)} events, {dest.stat().st_size} bytes; providers {placed}")
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--provider", default="CPUExecutionProvider")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads (more than 1: thread ids vary)")
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import onnxruntime as ort
    print(f"onnxruntime {ort.__version__}, available {ort.get_available_providers()}")
    for name in args.models:
        record(name, args.out, args.provider, args.runs, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
