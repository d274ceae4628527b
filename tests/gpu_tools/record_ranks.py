"""Record one trace per rank of a real multi-process job (run on the device machine, not in CI).

    torchrun --nproc_per_node 2 tests/gpu_tools/record_ranks.py OUT [--backend gloo|nccl] [--kernelscope] [--cpu]

Each rank trains a small model under DistributedDataParallel for a few steps; rank 1 does
extra work each step, so it is the straggler the others wait for in the gradient all-reduce.
With one GPU both ranks share it (gloo: NCCL refuses two ranks on one device). Without
``--kernelscope`` each rank uses torch.profiler and writes ``rankN.pt.trace.json.gz``; with it,
each rank uses ``ks.profile(trace_path=...)`` and kernelscope's rank tagging. ``--cpu`` runs the
same job on the CPU with smaller shapes (gloo; the CPU test of the capture uses it).
"""
from __future__ import annotations

import gzip
import os
import shutil
import sys

import torch
import torch.distributed as dist


def main():
    out = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "gloo"
    cpu = "--cpu" in sys.argv
    dist.init_process_group(backend)
    rank = dist.get_rank()
    torch.manual_seed(rank)
    # Hidden width, batch and straggler matrix: the H200 job's, or a CPU job's that runs in seconds.
    width, batch, side = (256, 64, 384) if cpu else (2048, 512, 4096)
    if cpu:
        device, ids = "cpu", None
    else:
        dev = rank % torch.cuda.device_count()
        torch.cuda.set_device(dev)
        device, ids = "cuda", [dev]
    model = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(),
                                torch.nn.Linear(2 * width, width)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=device)
    extra = torch.randn(side, side, device=device)

    def step():
        loss = ddp(x).pow(2).mean()
        if rank == 1:                      # the straggler: more compute before its gradients are ready
            for _ in range(20):
                extra @ extra
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t = torch.ones(1 << (16 if cpu else 20), device=device) * rank
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        if not cpu:
            torch.cuda.synchronize()

    for _ in range(2):
        step()
    if "--kernelscope" in sys.argv:
        import kernelscope as ks
        with ks.profile(trace_path=os.path.join(out, f"ks_rank{rank}.pt.trace.json.gz")) as prof:
            for i in range(3):
                with torch.profiler.record_function(f"ProfilerStep#{i + 1}"):
                    step()
        say(f"rank {rank} kernels {len(prof.report.kernels)} meta {prof.report.meta.get('distributed')}")
    else:
        from torch.profiler import ProfilerActivity, profile, schedule
        path = os.path.join(out, f"rank{rank}.pt.trace.json")

        def ready(p):
            p.export_chrome_trace(path)

        acts = [ProfilerActivity.CPU] + ([] if cpu else [ProfilerActivity.CUDA])
        with profile(activities=acts, record_shapes=True,
                     schedule=schedule(wait=0, warmup=1, active=3), on_trace_ready=ready) as prof:
            for _ in range(4):
                step()
                prof.step()
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(path)
        say(f"rank {rank} wrote {path}.gz")
    dist.barrier()
    dist.destroy_process_group()


def say(line):
    # One write per line: the ranks share torchrun's stdout pipe, and print() writes each argument
    # apart, so two ranks' words interleaved ("rankrank 0 ...") when stdout was unbuffered.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
