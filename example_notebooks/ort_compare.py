"""The workload of notebook 10 (and of ``benchmarks/onnxruntime/cuda_compare.py``): one torchvision
model with random weights, fp32, run through PyTorch and through ONNX Runtime's CUDA provider, each
recorded by kernelscope from the same NumPy input to a NumPy output (both pay the copy in and out).

- :func:`export`: the model and its ONNX export;
- :func:`record_both`: three warm-up runs each way, then ``runs`` runs under ``ks.profile()`` (PyTorch)
  and ``ks.profile(onnxruntime=session)`` (ONNX Runtime: CUPTI records the kernels it launches, and
  each gets the node that launched it from the session's own profile).
"""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np


def export(model_name="resnet18", batch=8, onnx_dir="."):
    """``(model, x, onnx_path)``: the model on the GPU in eval mode, a NumPy input, its ONNX file."""
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)(weights=None).cuda().eval()
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    path = Path(onnx_dir) / f"{model_name}.onnx"
    try:    # the TorchScript exporter: one ONNX node per op, no onnxscript needed
        torch.onnx.export(model, (torch.from_numpy(x).cuda(),), str(path), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
    except Exception as e:  # noqa: BLE001 - torch's newer exporter is the way left
        print(f"TorchScript export failed ({type(e).__name__}: {e}); dynamo export")
        torch.onnx.export(model, (torch.from_numpy(x).cuda(),), str(path), dynamo=True,
                          input_names=["x"], output_names=["y"])
    return model, x, path


def record_both(model, x, onnx_path, runs=5, profile_to=None, name="resnet18", trace_to=None):
    """``(torch report, ONNX Runtime report, ONNX Runtime's own profile path)``; the profile is
    gzipped to ``profile_to`` when given, the ONNX Runtime run's Kineto trace written to ``trace_to``."""
    import onnxruntime as ort
    import torch

    import kernelscope as ks
    getattr(ort, "preload_dlls", lambda: None)()

    def torch_run():
        with torch.no_grad():
            return model(torch.from_numpy(x).cuda()).cpu().numpy()
    for _ in range(3):
        torch_run()
    with ks.profile(name=f"{name} (PyTorch)") as p_t:
        for _ in range(runs):
            y_torch = torch_run()

    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(Path(onnx_path).with_suffix(""))
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, {"x": x})
    with ks.profile(name=f"{name} (ONNX Runtime CUDA)", onnxruntime=sess, trace_path=trace_to) as p_o:
        for _ in range(runs):
            y_ort = sess.run(None, {"x": x})[0]
    written = Path(p_o.report.trace.meta["onnxruntime_joined"]["profile"])
    if profile_to is not None:
        with written.open("rb") as f, gzip.open(profile_to, "wb") as g:
            shutil.copyfileobj(f, g)
        written = Path(profile_to)
    p_o.report.trace.meta["max_abs_diff"] = float(np.abs(y_torch - y_ort).max())
    return p_t.report, p_o.report, written
