"""Recordings for issue 28's trust cases (run on the device machine, not in CI).

Each case records one region with ``ks.profile()`` (torch.profiler with CPU and CUDA activities,
shapes and FLOPs, CUDA events around the region: what ``%%kernelprofile`` records) and writes the
raw Kineto trace (``NAME.pt.trace.json.gz``) and the report (``NAME.ksreport.json.gz``, which also
keeps the CUDA-event wall time the trace file has no place for):

    python tests/gpu_tools/record_trust.py jax_cell|graph_replay|l2_elementwise OUTDIR
    python tests/gpu_tools/record_trust.py cold OUTDIR     # a fresh process: cold_first_call, then cold_warm
    ncu --set full --clock-control none --nvtx --nvtx-include ks/ -o OUTDIR/ncu_conv \\
        python tests/gpu_tools/record_trust.py conv_ncu OUTDIR
    python tests/gpu_tools/record_trust.py conv_kineto OUTDIR   # the same launches under torch.profiler

tests/analysis/test_trust.py reads them back.
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _save(prof, outdir, name):
    rep = prof.report
    rep.save(os.path.join(outdir, f"{name}.ksreport.json.gz"))
    k = rep.kernels
    print(f"[{name}] wall {rep.wall_time_us:.1f} us ({rep.wall_time_clock}); cuda events "
          f"{rep.meta.get('cuda_event_us')}; span {rep.meta.get('span_us')}; {len(k)} kernels, "
          f"{k['duration_us'].sum():.1f} us of kernels; {len(rep.ops)} ops; {len(rep.runtime)} runtime calls",
          flush=True)
    rt = rep.runtime.sort_values("duration_us", ascending=False).head(8)
    for _, r in rt.iterrows():
        print(f"    runtime {r['name']}: {r['duration_us']:.1f} us", flush=True)
    try:   # what the first screen says (the headline before any fix)
        print("\n".join("    | " + line for line in repr(rep).splitlines()[:14]), flush=True)
    except Exception as e:  # noqa: BLE001 - a recording is kept even when its view fails
        print(f"    (text view failed: {type(e).__name__}: {e})", flush=True)
    return rep


def _profile(outdir, name):
    import kernelscope as ks
    return ks.profile(name=name, trace_path=os.path.join(outdir, f"{name}.pt.trace.json.gz"))


def jax_cell(outdir):
    """A few small jitted JAX ops with host work between them: wall time >> kernel time."""
    import numpy as np
    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    import jax
    import jax.numpy as jnp

    @jax.jit
    def norm(x):
        return x / jnp.sqrt((x * x).sum() + 1e-6)

    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w)

    x = jnp.ones((64, 64), jnp.float32)
    w = jnp.full((64, 64), 0.01, jnp.float32)
    for _ in range(3):   # compile outside the region
        jax.block_until_ready(norm(step(x, w)))
    host = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    with _profile(outdir, "jax_cell") as prof:
        y = x
        for _ in range(4):
            y = norm(step(y, w))
            jax.block_until_ready(y)
            # host work between the steps (numpy: nothing the profiler records)
            host = np.tanh(host @ host.T * 1e-3)
        np.asarray(y)
    _save(prof, outdir, "jax_cell")


def graph_replay(outdir):
    """A small MLP captured in a CUDA graph and replayed, with host work between replays."""
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 512),
                                torch.nn.GELU(), torch.nn.Linear(512, 10)).cuda().eval()
    static_in = torch.randn(64, 256, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        static_out = model(static_in)
    batch = torch.randn(64, 256).pin_memory()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()

    def host_work():   # a serving loop's Python between batches (tokenizing, batching)
        t = time.perf_counter()
        acc = 0
        while time.perf_counter() - t < 300e-6:
            acc += 1
        return acc

    with _profile(outdir, "graph_replay") as prof:
        for _ in range(10):
            host_work()
            static_in.copy_(batch, non_blocking=True)
            g.replay()
            static_out.sum().item()
    _save(prof, outdir, "graph_replay")


def l2_elementwise(outdir):
    """pow / mul / fill on a 16 MB tensor (fits the H200's 60 MB L2), looped: the data stays in L2."""
    import torch
    x = torch.randn(1 << 22, device="cuda")
    y = torch.empty_like(x)
    for _ in range(5):
        torch.pow(x, 2, out=y)
    torch.cuda.synchronize()
    with _profile(outdir, "l2_elementwise") as prof:
        for _ in range(50):
            torch.pow(x, 2, out=y)
            torch.mul(x, 1.5, out=y)
            y.fill_(1.0)
    _save(prof, outdir, "l2_elementwise")


def cold(outdir):
    """A fresh process's first call (cuBLAS/cuDNN handles, lazy module loading, allocator growth,
    a torch.compile and a Triton JIT), then the same region again, warm."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

    @torch.compile
    def fused(a, b):
        return torch.relu(a * b + 1.0).sum(dim=-1)

    def region():
        a = torch.randn(1024, 1024, device="cuda")
        b = torch.randn(1024, 1024, device="cuda")
        c = a @ b                                   # first GEMM: cuBLAS handle, module load
        d = c @ a
        conv = torch.nn.functional.conv2d(torch.randn(8, 16, 32, 32, device="cuda"),
                                          torch.randn(32, 16, 3, 3, device="cuda"))
        out = torch.empty_like(a)
        n = a.numel()
        scale_kernel[(triton.cdiv(n, 1024),)](a, out, n, BLOCK=1024)   # Triton JIT
        e = fused(a, b)                             # Inductor compile + autotune-free codegen
        return float(d.sum() + conv.sum() + out.sum() + e.sum())

    t = time.perf_counter()
    with _profile(outdir, "cold_first_call") as prof:
        region()
    print(f"cold region took {time.perf_counter() - t:.2f} s", flush=True)
    _save(prof, outdir, "cold_first_call")
    with _profile(outdir, "cold_warm") as prof:
        region()
    _save(prof, outdir, "cold_warm")


def _conv():
    import torch
    torch.backends.cudnn.benchmark = False
    conv = torch.nn.Conv2d(64, 128, 3, padding=1).cuda().half()
    x = torch.randn(32, 64, 56, 56, device="cuda", dtype=torch.half)
    with torch.no_grad():
        for _ in range(3):
            conv(x)
    torch.cuda.synchronize()
    return torch, conv, x


def conv_ncu(outdir):
    """One cuDNN convolution forward inside the NVTX range ``ks`` (for ncu --nvtx-include ks/)."""
    torch, conv, x = _conv()
    with torch.no_grad():
        torch.cuda.nvtx.range_push("ks")
        conv(x)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def conv_kineto(outdir):
    torch, conv, x = _conv()
    with _profile(outdir, "conv_kineto") as prof, torch.no_grad():
        conv(x)
    _save(prof, outdir, "conv_kineto")


CASES = {f.__name__: f for f in [jax_cell, graph_replay, l2_elementwise, cold, conv_ncu, conv_kineto]}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(f"usage: record_trust.py {'|'.join(CASES)} OUTDIR")
    os.makedirs(sys.argv[2], exist_ok=True)
    CASES[sys.argv[1]](sys.argv[2])
