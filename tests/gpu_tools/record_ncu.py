"""Workloads for full Nsight Compute reports (run on the device machine, not in CI).

Each workload warms up outside the NVTX range ``ks`` and runs its kernels once inside it, so
``--nvtx --nvtx-include ks/`` profiles exactly those launches:

    ncu --set full --import-source yes --clock-control none --nvtx --nvtx-include ks/ \\
        -o OUT/torch_ops python tests/gpu_tools/record_ncu.py torch_ops
    python tests/gpu_tools/record_ncu.py torch_ops --kineto OUT     # the same launches under torch.profiler

tests/trace/test_ncu_report.py reads the reports back and checks them against ncu_report's own values.
"""
from __future__ import annotations

import gzip
import os
import shutil
import sys

import torch


def torch_ops():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    f = torch.randn(2048, 2048, device="cuda")
    x = torch.randn(1 << 24, device="cuda")
    m = torch.randn(8192, 8192, device="cuda")

    def step():
        out = [a @ a, f @ f, x + 1.0, torch.nn.functional.gelu(x)]
        out.append(m.t().contiguous())          # a transpose copy: strided reads or writes
        out.append(torch.nn.functional.layer_norm(m, (8192,)))
        return out

    return step


def triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def strided_kernel(x_ptr, out_ptr, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + (offs * STRIDE) % n, mask=mask)
        tl.store(out_ptr + offs, v * 2.0, mask=mask)

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.randn_like(x)
    o = torch.empty_like(x)
    A = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    C = torch.empty_like(A)

    def step():
        add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
        strided_kernel[(triton.cdiv(n, 1024),)](x, o, n, STRIDE=33, BLOCK=1024)
        matmul_kernel[(2048 // 128, 2048 // 128)](A, A, C, 2048, 2048, 2048, BM=128, BN=128, BK=32)
        return o, C

    return step


def attention():
    q = torch.randn(8, 16, 2048, 128, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    F = torch.nn.functional

    def step():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return step


def resnet50():
    import torchvision
    model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)

    def step():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
            return model(x)

    return step


WORKLOADS = {f.__name__: f for f in [torch_ops, triton_kernels, attention, resnet50]}


def main():
    name = sys.argv[1]
    step = WORKLOADS[name]()
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    if "--kineto" in sys.argv:
        from torch.profiler import ProfilerActivity, profile
        outdir = sys.argv[sys.argv.index("--kineto") + 1]
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            step()
            torch.cuda.synchronize()
        path = os.path.join(outdir, f"ncu_{name}.pt.trace.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(path)
        return
    torch.cuda.nvtx.range_push("ks")
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
