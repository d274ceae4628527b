"""Record one trace per rank of a real multi-process job (run on the device machine, not in CI).

    torchrun --nproc_per_node 2 tests/gpu_tools/record_ranks.py OUT [--backend gloo|nccl] [--kernelscope]

Each rank trains a small model under DistributedDataParallel for a few steps; rank 1 does
extra work each step, so it is the straggler the others wait for in the gradient all-reduce.
With one GPU both ranks share it (gloo: NCCL refuses two ranks on one device). Without
``--kernelscope`` each rank uses torch.profiler and writes ``rankN.pt.trace.json.gz``; with it,
each rank uses ``ks.profile(trace=...)`` and kernelscope's rank tagging.
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
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = rank % torch.cuda.device_count()
    torch.cuda.set_device(dev)
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 2048)).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(512, 2048, device="cuda")
    extra = torch.randn(4096, 4096, device="cuda")

    def step():
        loss = ddp(x).pow(2).mean()
        if rank == 1:                      # the straggler: more compute before its gradients are ready
            for _ in range(20):
                extra @ extra
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t = torch.ones(1 << 20, device="cuda") * rank
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        torch.cuda.synchronize()

    for _ in range(2):
        step()
    if "--kernelscope" in sys.argv:
        import kernelscope as ks
        with ks.profile(trace=os.path.join(out, f"ks_rank{rank}.pt.trace.json.gz")) as prof:
            for i in range(3):
                with torch.profiler.record_function(f"ProfilerStep#{i}"):
                    step()
        print("rank", rank, "kernels", len(prof.report.kernels), "meta", prof.report.meta.get("distributed"))
    else:
        from torch.profiler import ProfilerActivity, profile, schedule
        path = os.path.join(out, f"rank{rank}.pt.trace.json")

        def ready(p):
            p.export_chrome_trace(path)

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                     schedule=schedule(wait=0, warmup=1, active=3), on_trace_ready=ready) as prof:
            for _ in range(4):
                step()
                prof.step()
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(path)
        print("rank", rank, "wrote", path + ".gz")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
