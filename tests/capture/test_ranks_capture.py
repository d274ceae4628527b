"""Capture in every rank of a real torchrun job: ``ks.profile(trace_path=...)`` writes a
rank-tagged trace per rank, and ``ks.load_ranks`` reads the run back.

The CPU test runs the job for real here (torch.distributed on gloo, two processes, CPU ops only).
The GPU test runs the H200 job of tests/gpu_tools/record_ranks.py (two ranks on one GPU over
gloo, as recorded in tests/data/ranks) and, with two GPUs, the same job over NCCL.
"""
import os
import pathlib
import subprocess
import sys

import pytest

import kernelscope as ks

SCRIPT = pathlib.Path(__file__).parent.parent / "gpu_tools" / "record_ranks.py"


def torchrun(out, *args, nproc=2, timeout=300):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), str(SCRIPT), str(out),
           "--kernelscope", *args]
    # the repository first, then whatever the caller's path holds (packages carried to the H200)
    path = os.pathsep.join(p for p in (str(SCRIPT.parent.parent.parent), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return p.stdout


def check_run(out, nproc, backend):
    files = sorted(pathlib.Path(out).glob("ks_rank*.pt.trace.json.gz"))
    assert [f.name for f in files] == [f"ks_rank{r}.pt.trace.json.gz" for r in range(nproc)]
    for r, f in enumerate(files):
        d = ks.load(f).meta["distributed"]
        # Rank, world size and backend from torch.distributed; host and local rank from our tag.
        assert (d["rank"], d["world_size"], d["backend"], d["local_rank"]) == (r, nproc, backend, r)
        assert d["host"] and d["process_groups"][0]["ranks"] == list(range(nproc))
    rep = ks.load_ranks(out)
    assert rep.ranks["rank"].tolist() == list(range(nproc)) and rep.world_size == nproc
    assert len(rep.stragglers) == 3 and set(rep.stragglers["step"]) == {f"ProfilerStep#{i}" for i in (1, 2, 3)}
    return rep


def test_torchrun_on_cpu_writes_rank_tagged_traces(tmp_path):
    pytest.importorskip("torch.distributed")
    out = torchrun(tmp_path, "--cpu")
    assert "rank 0" in out and "rank 1" in out
    rep = check_run(tmp_path, 2, "gloo")
    # Per step: DDP's one bucket (the CPU model's 0.5 MB of gradients fit in one), the script's
    # all_reduce and broadcast, on both ranks.
    c = rep.collectives
    assert set(c["backend"]) == {"gloo"}
    assert c.groupby(["rank", "kind"]).size().to_dict() == {(0, "AllReduce"): 6, (0, "Broadcast"): 3,
                                                            (1, "AllReduce"): 6, (1, "Broadcast"): 3}
    # Rank 1 does 20 extra matmuls per step: with CPU ops only, work is host time, and it is the
    # slowest rank in every step.
    assert (rep.stragglers["slowest_rank"] == 1).all()


@pytest.mark.gpu
def test_torchrun_on_the_gpu_gloo(tmp_path):
    """H200: python -m pytest tests/test_ranks_capture.py -m gpu -q"""
    torchrun(tmp_path, "--backend", "gloo")
    rep = check_run(tmp_path, 2, "gloo")
    assert (rep.stragglers["slowest_rank"] == 1).all()
    assert (rep.ranks["launches"] > 0).all() and set(rep.ranks["device"]) == {rep.ranks["device"][0]}


@pytest.mark.gpu
def test_torchrun_on_two_gpus_nccl(tmp_path):
    """Two GPUs (nvidia-h200-x2): NCCL kernels, their algorithm and bus bandwidth against NVLink."""
    import torch
    if torch.cuda.device_count() < 2:
        pytest.skip("NCCL needs a GPU per rank: run on two GPUs")
    torchrun(tmp_path, "--backend", "nccl")
    rep = check_run(tmp_path, 2, "nccl")
    c = rep.collectives
    assert set(c["backend"]) == {"NCCL"} and set(c["source"]) == {"kernel"}
    assert c["name"].str.startswith("ncclDevKernel_").all() and c["algorithm"].notna().all()
    assert c["bytes"].notna().all() and c["dtype"].notna().all()
    assert (rep.stragglers["slowest_rank"] == 1).all()
    s = rep.comm_summary()
    print(s.to_string())
    assert (s["link_gbps"] == 450.0).all() and (s["busbw_of_link"] > 0).all()
