"""Load + analyze a large Kineto trace: kernelscope vs HTA vs ``json.load`` alone, in one run.

    python benchmarks/load_trace.py                      # 1M events tiled from the MLP step
    python benchmarks/load_trace.py --events 200000 --skip-hta

Each tool runs in its own process so that its peak memory (ru_maxrss) is its own. The trace is
made with ../shared/tools/tile_trace.py from a real H200 recording and cached in benchmarks/out/.
Prints one summary line per tool and the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"


def _tile_tool() -> pathlib.Path:
    # Beside the project (../shared), inside it, or beside the folder of a worktree (../../shared).
    for p in (ROOT.parent / "shared" / "tools" / "tile_trace.py", ROOT / "shared" / "tools" / "tile_trace.py",
              ROOT.parent.parent / "shared" / "tools" / "tile_trace.py"):
        if p.exists():
            return p
    sys.exit("tile_trace.py not found (expected ../shared/tools/tile_trace.py)")


def make_trace(source: pathlib.Path, events: int) -> pathlib.Path:
    """The tiled trace for ``events``, made once and cached."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{source.name.split('.')[0]}_{events}.json"
    if not path.exists():
        subprocess.run([sys.executable, str(_tile_tool()), str(source), str(path), "--events", str(events)],
                       check=True)
    return path


def _child(tool: str, path: str) -> dict:
    """Runs in a fresh process: import, then time the load + a per-kernel breakdown."""
    if tool == "kernelscope":
        import kernelscope as ks
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        rep = ks.load(path)
        summary = rep.summary()
        breakdown = rep.backends
        wall = time.perf_counter() - t
        info = {"kernels": int(len(rep.kernels)), "distinct": int(len(summary)), "backends": int(len(breakdown))}
    elif tool == "json":
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        with open(path, "rb") as f:
            doc = json.load(f)
        wall = time.perf_counter() - t
        info = {"events": len(doc["traceEvents"])}
    elif tool == "hta":
        import logging
        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        ta = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))
        kernel_type, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
        wall = time.perf_counter() - t
        info = {"kernel_rows": int(len(kernels))}
    else:
        raise SystemExit(f"unknown tool {tool}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"tool": tool, "wall_s": wall, "peak_mb": peak / 1024, "import_mb": base / 1024, **info}


def run_child(script: str, tool: str, path, timeout: float, **on_error) -> dict:
    """Run ``script --child TOOL PATH`` in a fresh process (so its peak memory is its own) and
    return the JSON dict it prints last; on failure ``{"tool", "error", **on_error}``."""
    cmd = [sys.executable, script, "--child", tool, str(path)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "error": f"timed out after {timeout:.0f} s", **on_error}
    if p.returncode != 0:
        return {"tool": tool, "error": (p.stderr.strip().splitlines() or ["?"])[-1], **on_error}
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_tool(tool: str, path: pathlib.Path, timeout: float) -> dict:
    return run_child(__file__, tool, path, timeout, wall_s=float("nan"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--source", type=pathlib.Path, default=ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz")
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(*a.child)))
        return
    path = make_trace(a.source, a.events)
    size_mb = path.stat().st_size / 2**20
    print(f"trace: {path.name}, {size_mb:.0f} MiB, ~{a.events:,} events (tiled from {a.source.name}); "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    tools = ["kernelscope", "json"] + ([] if a.skip_hta else ["hta"])
    res = {t: run_tool(t, path, a.timeout) for t in tools}
    ks_wall = res["kernelscope"]["wall_s"]
    for t in tools:
        r = res[t]
        if "error" in r:
            print(f"{t:12s} error: {r['error']}")
            continue
        extra = {k: v for k, v in r.items() if k not in ("tool", "wall_s", "peak_mb", "import_mb")}
        print(f"{t:12s} wall {r['wall_s']:7.2f} s  peak RSS {r['peak_mb']:7.0f} MiB "
              f"({r['peak_mb'] / size_mb:.2f}x file; {r['peak_mb'] - r['import_mb']:.0f} MiB above imports)  "
              f"x{r['wall_s'] / ks_wall:.1f} kernelscope's time  {extra}")


if __name__ == "__main__":
    main()
