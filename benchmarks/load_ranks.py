"""64 rank traces into one multi-rank report: time and peak memory of the driver, in one run.

    python benchmarks/load_ranks.py                   # 64 ranks as recorded (1.5k events each)
    python benchmarks/load_ranks.py --copies 12       # each rank's trace tiled 12x (~19k events)

The 64 traces are made from the two real H200 rank traces (tests/data/ranks, DDP on gloo,
rank 1 the straggler): rank r is rank (r % 2)'s trace with its rank rewritten to r and the world
size to 64 in ``distributedInfo``; ``--copies N`` also tiles each trace N times in time (steps
renumbered, ids offset so that links stay unique). Cached in benchmarks/out/.

Variants, each in a fresh process so that its peak memory is its own:

- ``pool``: ``ks.load_ranks(dir)``: a local process pool (one worker per CPU) summarises the
  ranks, the driver receives summaries only;
- ``dask``: the same on a ``dask.distributed.LocalCluster`` (one worker process per CPU; the
  cluster's start is reported apart from the load);
- ``inproc``: ``ks.load_ranks(dir, workers=1)``: every rank read and summarised in the driver;
- ``naive``: what one would write without it: ``[ks.load(p) for p in paths]``, every Report
  kept in the driver, plus each one's kernel summary;
- ``hta``: HTA (``traceinsight``): ``TraceAnalysis(trace_dir=...)`` + ``get_comm_comp_overlap()``
  + ``get_temporal_breakdown()``, when installed (``pip install traceinsight``).

Prints one line per variant: wall time, the driver's peak RSS (and above its imports), the
worker processes' peak RSS, and the ratio to ``pool``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import resource
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from load_trace import run_child  # noqa: E402  (one subprocess runner for the benchmarks)


def make_ranks(n: int, copies: int) -> pathlib.Path:
    d = OUT / f"ranks{n}_x{copies}"
    if d.exists() and len(list(d.glob("rank*.pt.trace.json.gz"))) == n:
        return d
    d.mkdir(parents=True, exist_ok=True)
    src = {}
    for r in (0, 1):
        with gzip.open(ROOT / "tests" / "data" / "ranks" / f"rank{r}.pt.trace.json.gz", "rt") as f:
            src[r] = _tiled(json.load(f), copies)
    for r in range(n):
        doc = src[r % 2]
        info = doc["distributedInfo"]
        info.update(rank=r, world_size=n)
        info["pg_config"] = [dict(info["pg_config"][0], pg_size=n, ranks=list(range(n)))]
        with gzip.open(d / f"rank{r}.pt.trace.json.gz", "wt", compresslevel=1) as f:
            json.dump(doc, f)
    return d


def _tiled(doc, copies):
    if copies <= 1:
        return doc
    events = [e for e in doc["traceEvents"] if e.get("ph") != "M"]
    meta = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    ts = [e["ts"] for e in events if "ts" in e]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(ts) + 10.0
    step = 1 + max([e.get("args", {}).get(k, 0) for e in events for k in ("correlation", "External id")
                    if isinstance(e.get("args", {}).get(k, 0), int)] + [e["id"] for e in events if isinstance(e.get("id"), int)])
    out = list(meta)
    for c in range(copies):
        for e in events:
            e2 = dict(e)
            if "ts" in e2:
                e2["ts"] = round(e2["ts"] + c * span, 3)
            if isinstance(e2.get("id"), int):
                e2["id"] += c * step
            if isinstance(e2.get("args"), dict):
                a = e2["args"] = dict(e2["args"])
                for k in ("correlation", "External id"):
                    if isinstance(a.get(k), int) and a[k]:
                        a[k] += c * step
            if e2.get("name", "").startswith("ProfilerStep#"):
                e2["name"] = f"ProfilerStep#{int(e2['name'][13:]) + 3 * c}"
            if e2.get("cat") == "Trace" and "dur" in e2:
                e2["dur"] = span * copies
            out.append(e2)
    return dict(doc, traceEvents=out)


def _child(tool: str, path: str) -> dict:
    if tool == "hta":
        import logging
        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        ta = TraceAnalysis(trace_dir=path)
        overlap = ta.get_comm_comp_overlap(visualize=False)
        ta.get_temporal_breakdown(visualize=False)
        wall = time.perf_counter() - t
        info = {"ranks": int(len(overlap))}
    else:
        import kernelscope as ks
        extra = {}
        if tool == "dask":
            from dask.distributed import Client, LocalCluster
            t = time.perf_counter()
            cluster = LocalCluster(n_workers=os.cpu_count(), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
            extra["cluster_start_s"] = round(time.perf_counter() - t, 2)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        if tool == "pool":
            rep = ks.load_ranks(path)
        elif tool == "inproc":
            rep = ks.load_ranks(path, workers=1)
        elif tool == "dask":
            rep = ks.load_ranks(path, client=client)
        elif tool == "naive":
            from kernelscope.loading import trace_paths
            reps = [ks.load(p) for p in trace_paths(path)]
            sums = [r.summary() for r in reps]
            rep = None
            info = {"ranks": len(reps), "kernels": int(sum(len(r.kernels) for r in reps)), "rows": sum(map(len, sums))}
        else:
            raise SystemExit(f"unknown tool {tool}")
        wall = time.perf_counter() - t
        if rep is not None:
            info = {"ranks": int(len(rep.ranks)), "slowest": int(rep.stragglers["slowest_rank"].mode()[0]),
                    "findings": [f.kind for f in rep.findings]}
        info.update(extra)
        if tool == "dask":
            workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            info["worker_peak_mb"] = max(workers.values()) / 1024
            client.close()
            cluster.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    info.setdefault("worker_peak_mb", children / 1024 if children else None)
    return {"tool": tool, "wall_s": wall, "peak_mb": peak / 1024, "import_mb": base / 1024, **info}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--copies", type=int, default=1, help="tile each rank's trace this many times")
    ap.add_argument("--tools", default="pool,dask,inproc,naive,hta")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(*a.child)))
        return
    d = make_ranks(a.ranks, a.copies)
    files = sorted(d.glob("*.json.gz"))
    size = sum(f.stat().st_size for f in files) / 2**20
    events = sum(len(json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]) for f in files[:2]) / 2
    print(f"{len(files)} rank traces in {d.name}: {size:.1f} MiB gzip, ~{events:,.0f} events each "
          f"(from tests/data/ranks, rank rewritten{f', tiled {a.copies}x' if a.copies > 1 else ''}); "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    res = {}
    for tool in a.tools.split(","):
        res[tool] = run_child(__file__, tool, d, a.timeout, wall_s=float("nan"))
    ref = res.get("pool", {}).get("wall_s")
    for tool, r in res.items():
        if "error" in r:
            print(f"{tool:8s} error: {r['error']}")
            continue
        extra = {k: v for k, v in r.items() if k not in ("tool", "wall_s", "peak_mb", "import_mb", "worker_peak_mb")}
        workers = f"{r['worker_peak_mb']:.0f} MiB" if r.get("worker_peak_mb") else "-"
        print(f"{tool:8s} wall {r['wall_s']:6.2f} s  driver peak RSS {r['peak_mb']:6.0f} MiB "
              f"({r['peak_mb'] - r['import_mb']:5.0f} above imports)  workers' peak {workers:>8}  "
              f"x{r['wall_s'] / ref:.2f} pool's time  {extra}" if ref else f"{tool} {r}")


if __name__ == "__main__":
    main()
