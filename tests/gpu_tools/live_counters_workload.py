"""The step the hardware-counter recordings, GPU tests and tutorial 07 profile (needs CUDA).

Kernels of distinct character, each long enough (>= 100 us, several 20 us PM samples) to be
judged: a bf16 GEMM near the tensor pipe's peak, a skinny bf16 GEMM that is memory-bound (far
below the tensor peak), a spin kernel that keeps one SM busy, a memory-bound elementwise kernel,
a 1 GiB device-to-device copy, and a 1 GiB host-to-device copy from pinned memory (a copy-bound
phase: the SMs idle while PCIe moves the data). Spin kernels separate the GEMM and the D2D copy
from their neighbours so that their peaks can be placed.
"""
from __future__ import annotations

import torch

SETUP = '''\
import torch
torch.manual_seed(0)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
tall = torch.randn(32768, 8192, device="cuda", dtype=torch.bfloat16)   # 512 MiB
thin = torch.randn(8192, 64, device="cuda", dtype=torch.bfloat16)
x = torch.randn(1 << 28, device="cuda")                                 # 1 GiB
y = torch.empty_like(x)
host = torch.empty(1 << 28, dtype=torch.float32).pin_memory()
'''
# The cell body tutorial 07 profiles (also what step() runs).
STEP = '''\
c = a @ a                                  # bf16 GEMM: tensor cores near their peak
torch.cuda._sleep(400_000)                 # spin: one SM busy, the rest idle
for _ in range(4):
    s = tall @ thin                        # skinny GEMM: reads 512 MiB, little math
torch.cuda._sleep(400_000)
z = x * 2.0                                # elementwise: DRAM-bound
torch.cuda._sleep(400_000)
y.copy_(x)                                 # 1 GiB device-to-device copy
torch.cuda._sleep(400_000)
y.copy_(host, non_blocking=True)           # 1 GiB host-to-device copy (pinned)
torch.cuda.synchronize()
'''


def make_step():
    """``step()`` running :data:`STEP` on tensors made by :data:`SETUP` (one namespace)."""
    ns = {}
    exec(SETUP, ns)
    code = compile(STEP, "<live_counters_step>", "exec")

    def step():
        exec(code, ns)
    return step, ns


if __name__ == "__main__":          # the step alone, for ncu
    step, _ = make_step()
    step()
    torch.cuda.synchronize()
    step()
    torch.cuda.synchronize()
