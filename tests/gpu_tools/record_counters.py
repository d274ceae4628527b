"""Record hardware-counter ground truth on a GPU (run on the device machine, not in CI).

    python tests/gpu_tools/record_counters.py probe OUT        # which PM metrics configure single-pass
    python tests/gpu_tools/record_counters.py pm OUT           # PM samples + Kineto trace of WORKLOAD
    python tests/gpu_tools/record_counters.py proton OUT       # Proton PC sampling of the same workload
    python tests/gpu_tools/record_counters.py plain            # the workload alone (for ncu)

The workload's kernels all run for 200 us or more, so that ncu's per-kernel DRAM throughput can
be set beside the PM samples' time-weighted mean over each kernel.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import time

import torch

CANDIDATES = [
    "sm__cycles_active.avg", "sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum", "dram__bytes_read.sum",
    "dram__bytes_write.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed.sum", "pcie__read_bytes.sum", "pcie__write_bytes.sum", "lts__t_bytes.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.avg.per_cycle_active",
]
DEFAULT = [
    "sm__cycles_active.avg", "sm__cycles_elapsed.avg",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum",
]


def workload():
    """Long kernels of distinct characters: tensor-bound GEMM, a memory-bound elementwise
    kernel and reduction, a spin kernel (busy SMs, no memory), a D2D copy, an H2D copy."""
    torch.manual_seed(0)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1 << 28, device="cuda")             # 1 GiB
    y = torch.empty_like(x)
    host = torch.empty(1 << 28, dtype=torch.float32).pin_memory()
    ln = torch.randn(16384, 8192, device="cuda")

    def step():
        c = a @ a
        torch.cuda._sleep(1_000_000)                      # ~0.5 ms spinning on one SM
        z = x * 2.0
        y.copy_(x)                                        # device-to-device copy
        s = x.sum()
        n = torch.nn.functional.layer_norm(ln, (8192,))
        c2 = a @ a
        y.copy_(host, non_blocking=True)                  # host-to-device, pinned
        torch.cuda.synchronize()
        return c, z, s, n, c2

    return step


def probe(out):
    from cupti import pm_sampling
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    res = {}
    col = pm_sampling.Collector(0)
    col.enable()
    try:
        for m in CANDIDATES:
            try:
                col.configure(metrics=[m], sampling_interval=20000)
                res[m] = "ok"
            except Exception as e:  # noqa: BLE001
                res[m] = f"{type(e).__name__}: {e}"
        try:
            col.configure(metrics=DEFAULT, sampling_interval=20000)
            res["DEFAULT"] = "ok"
        except Exception as e:  # noqa: BLE001
            res["DEFAULT"] = f"{type(e).__name__}: {e}"
        from cupti import profiler_host
        chip = col._chip_name
        res["chip"] = chip
        try:
            sets = profiler_host.get_single_pass_sets(chip)
            res["single_pass_sets"] = {s: profiler_host.get_metrics_in_single_pass_set(chip, s) for s in sets}
        except Exception as e:  # noqa: BLE001
            res["single_pass_sets"] = repr(e)
    finally:
        col.disable()
    with open(os.path.join(out, "pm_probe.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != "single_pass_sets"}, indent=1))


def pm(out, interval_ns=20000):
    import numpy as np
    from cupti import cupti as cu
    from cupti import pm_sampling
    from torch.profiler import ProfilerActivity, profile
    step = workload()
    step()
    torch.cuda.synchronize()
    col = pm_sampling.Collector(0)
    col.enable()
    cal = []
    try:
        col.configure(metrics=DEFAULT, sampling_interval=interval_ns,
                      hardware_buffer_size=512 * 1024 * 1024)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            cal.append((time.time_ns(), cu.get_timestamp(), time.monotonic_ns()))
            col.start()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            col.stop()
            cal.append((time.time_ns(), cu.get_timestamp(), time.monotonic_ns()))
            t1 = time.perf_counter()
        t2 = time.perf_counter()
        data = col.decode(max_samples=100000)
        t3 = time.perf_counter()
        vals = np.array([s.metric_values for s in data], dtype=np.float64)
        t4 = time.perf_counter()
        starts = np.array(data._start_timestamps, dtype=np.uint64)
        ends = np.array(data._end_timestamps, dtype=np.uint64)
        info = {"metrics": data.metrics, "num_total": data.num_total_samples,
                "num_populated": data.num_populated_samples, "num_completed": data.num_completed_samples,
                "image_bytes": int(data._image.nbytes), "region_s": t1 - t0, "decode_s": t3 - t2,
                "evaluate_s": t4 - t3, "calibration": cal, "interval_ns": interval_ns}
    finally:
        col.disable()
    path = os.path.join(out, "pm_workload.pt.trace.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    np.savez_compressed(os.path.join(out, "pm_samples.npz"), start_ns=starts, end_ns=ends, values=vals)
    with open(os.path.join(out, "pm_info.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps({k: v for k, v in info.items()}, indent=1))
    print("first samples", starts[:3], ends[:3], vals[:3].tolist())


def proton(out):
    import triton.profiler as proton
    step = workload()
    step()
    torch.cuda.synchronize()
    path = os.path.join(out, "proton_workload")
    proton.start(path, backend="cupti", mode="pcsampling")
    step()
    torch.cuda.synchronize()
    proton.finalize()
    print("proton files", os.listdir(out))
    # Kineto after Proton finalized, in the same process (a second run of the same step).
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    p = os.path.join(out, "proton_workload.pt.trace.json")
    prof.export_chrome_trace(p)
    with open(p, "rb") as f, gzip.open(p + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(p)


def both(out):
    """torch.profiler while Proton PC sampling is active: what does Kineto record?"""
    import triton.profiler as proton
    from torch.profiler import ProfilerActivity, profile
    step = workload()
    step()
    torch.cuda.synchronize()
    proton.start(os.path.join(out, "proton_both"), backend="cupti", mode="pcsampling")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    proton.finalize()
    p = os.path.join(out, "empty_other_subscriber.pt.trace.json")
    prof.export_chrome_trace(p)
    with open(p, "rb") as f, gzip.open(p + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(p)
    with gzip.open(p + ".gz") as f:
        t = json.load(f)
    print("kineto under proton: kernels", sum(e.get("cat") == "kernel" for e in t["traceEvents"]))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "plain":
        s = workload()
        s()
        torch.cuda.synchronize()
        s()
        torch.cuda.synchronize()
    else:
        {"probe": probe, "pm": pm, "proton": proton, "both": both}[cmd](sys.argv[2])
