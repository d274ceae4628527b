"""The workload of notebook 5: one training step of a small MLP, in fp32 or under bf16 autocast.

The notebook imports ``make_step``; Nsight Compute runs this file as a script, because ncu profiles
a whole process::

    ncu --nvtx --nvtx-include "profiled/" --csv --page details --section LaunchStats \
        --section Occupancy --section SpeedOfLight --clock-control none python mlp_step.py bf16
"""
import contextlib
import sys

import torch


def make_step(precision="bf16", device="cuda"):
    """A training step (forward, backward, AdamW) of a 1024-4096-1024 MLP on a 512-row batch.

    >>> step = make_step("fp32", device="cpu"); step().item() > 0
    True
    """
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024), torch.nn.LayerNorm(1024)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device=device)
    if precision not in ("bf16", "fp32"):
        raise ValueError(f"precision must be 'bf16' or 'fp32', not {precision!r}")

    def step():
        amp = torch.autocast(device, dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
        with amp:
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


if __name__ == "__main__":
    step = make_step(sys.argv[1] if len(sys.argv) > 1 else "bf16")
    for _ in range(3):  # warm-up, outside the NVTX range that ncu profiles
        step()
    torch.cuda.synchronize()
    with torch.cuda.nvtx.range("profiled"):
        step()
    torch.cuda.synchronize()
