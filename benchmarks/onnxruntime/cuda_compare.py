"""One model through PyTorch and through ONNX Runtime's CUDA provider, both recorded by
kernelscope (issue 44 item 4), on a machine with a GPU and ``onnxruntime-gpu``:

    python benchmarks/onnxruntime/cuda_compare.py OUT [--model resnet18] [--batch 8] [--runs 5]

The workload is notebook 10's (``example_notebooks/ort_compare.py``): a torchvision model with
random weights, fp32, exported to ONNX; three warm-up runs each way, then ``--runs`` runs under
``ks.profile()`` (PyTorch) and ``ks.profile(onnxruntime=session)`` (ONNX Runtime's CUDA provider,
each kernel under the node that launched it). Writes under OUT, for MODEL:

- ``MODEL_cuda_torch.ksreport.json.gz`` / ``MODEL_cuda_ort.ksreport.json.gz``: the reports;
- ``MODEL_cuda.onnxruntime_profile.json.gz``: ONNX Runtime's profile of that session, and
  ``MODEL_cuda_ort.pt.trace.json.gz`` the Kineto trace of its runs (the two join again with
  ``ks.load(trace, onnxruntime=(profile, start_ns))``, ``start_ns`` in the report's meta);
- ``summary.json``: versions, the time per run each way (CUDA events, outside the recordings),
  kernel counts, backends, how many kernels have their node; then the comparison is printed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "example_notebooks")]


def _ms_per_run(fn, runs):
    import torch
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(runs):
        fn()
    b.record()
    torch.cuda.synchronize()
    return round(a.elapsed_time(b) / runs, 3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--onnx-dir", help="where the exported model goes (default OUT; ResNet-18 is 45 MB)")
    a = ap.parse_args(argv)
    import onnxruntime as ort
    import torch
    from ort_compare import export, record_both

    import kernelscope as ks
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model, x, onnx_path = export(a.model, a.batch, a.onnx_dir or out)
    stem = f"{a.model}_cuda"
    rep_t, rep_o, _ = record_both(model, x, onnx_path, a.runs, out / f"{stem}.onnxruntime_profile.json.gz", a.model,
                                  trace_to=out / f"{stem}_ort.pt.trace.json.gz")
    rep_t.save(out / f"{stem}_torch.ksreport.json.gz")
    rep_o.save(out / f"{stem}_ort.ksreport.json.gz")
    sess = ort.InferenceSession(str(onnx_path), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    with torch.no_grad():
        times = {"torch": _ms_per_run(lambda: model(torch.from_numpy(x).cuda()).cpu(), a.runs),
                 "onnxruntime_cuda": _ms_per_run(lambda: sess.run(None, {"x": x}), a.runs)}
    k = rep_o.kernels
    summary = {
        "torch": torch.__version__, "onnxruntime": ort.__version__, "providers": sess.get_providers(),
        "gpu": torch.cuda.get_device_name(), "model": a.model, "batch": a.batch, "runs": a.runs,
        "ms_per_run": times, "max_abs_diff": rep_o.trace.meta.get("max_abs_diff"),
        "kernels": {"torch": len(rep_t.kernels), "onnxruntime": len(k), "with_node": int(k["provider"].notna().sum())},
        "backends": {"torch": rep_t.backends[["backend", "launches"]].values.tolist(),
                     "onnxruntime": rep_o.backends[["backend", "launches"]].values.tolist()},
        "ort_ops": k.groupby(k["op"].fillna("-")).size().to_dict(),
        "joined": rep_o.trace.meta.get("onnxruntime_joined"),
        "top_torch": rep_t.summary().head(6)[["short_name", "launches"]].values.tolist(),
        "top_ort": rep_o.summary().head(6)[["short_name", "launches"]].values.tolist(),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str))
    print(ks.compare(rep_t, rep_o))


if __name__ == "__main__":
    main()
