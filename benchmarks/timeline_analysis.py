"""GPU idle-time analysis: kernelscope's timeline against HTA's idle-time breakdown, in one run.

    python benchmarks/timeline_analysis.py                     # 1M events tiled from the MLP step
    python benchmarks/timeline_analysis.py --events 100000

1. Agreement on the real H200 fixtures: idle time by cause, ours (host / sync / streams / queued)
   next to HTA's (host_wait / kernel_wait / other). Same idea (a gap is the host's when the next
   launch call began after the GPU went idle), but HTA rounds every start up to a whole
   microsecond (``math.ceil(ts)`` in its parser) and works per stream, so sub-microsecond kernels
   (the launch-bound loop's run ~0.9 us) shift its figures.
2. Speed on a large tiled trace: parse + idle analysis (busy time, gaps and their causes) for
   each tool, each in its own process, and the analysis step alone; printed with kernelscope's
   time as the unit. Our findings (copies, syncs, roofline on top) are timed apart.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ("launch_bound", "mlp_train", "attention")


def _hta_idle(path: str) -> tuple[dict, float, float]:
    """HTA's idle time by category (summed over streams), its parse time and analysis time."""
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    t = time.perf_counter()
    ta = TraceAnalysis(trace_files={0: pathlib.Path(path).name}, trace_dir=str(pathlib.Path(path).parent))
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    res = ta.get_idle_time_breakdown(visualize=False, show_idle_interval_stats=False)
    t_an = time.perf_counter() - t
    df = res[0] if isinstance(res, tuple) else res
    return {str(k): float(v) for k, v in df.groupby("idle_category")["idle_time"].sum().items()}, t_parse, t_an


def _ks_idle(path: str) -> tuple[dict, float, float]:
    import kernelscope as ks
    t = time.perf_counter()
    rep = ks.load(path)
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    ls = rep.timeline.launch_stats  # busy union, gaps with causes, overlap, launch stats
    t_an = time.perf_counter() - t
    t = time.perf_counter()
    rep.findings  # what a user reads: reuses the timeline, adds copies, syncs, roofline
    t_find = time.perf_counter() - t
    causes = ("host", "sync", "streams", "queued", "unknown")
    return {c: float(ls[f"idle_{c}_us"].sum()) for c in causes}, t_parse, t_an, t_find


def _child(tool: str, path: str) -> dict:
    if tool == "kernelscope":
        idle, t_parse, t_an, t_find = _ks_idle(path)
    else:
        (idle, t_parse, t_an), t_find = _hta_idle(path), None
    return {"tool": tool, "parse_s": t_parse, "analysis_s": t_an, "findings_s": t_find, "idle": idle}


def run_tool(tool: str, path: pathlib.Path, timeout: float) -> dict:
    from load_trace import run_child  # one subprocess runner for the benchmarks
    return run_child(__file__, tool, path, timeout)


def agreement(timeout: float):
    print("idle time by cause on the H200 fixtures (us):")
    for name in FIXTURES:
        src = ROOT / "tests" / "data" / f"{name}.pt.trace.json.gz"
        with tempfile.TemporaryDirectory() as d:
            # HTA wants a directory of traces; give it one holding only this file.
            dst = pathlib.Path(d) / src.name
            shutil.copy(src, dst)
            ours, hta = run_tool("kernelscope", dst, timeout), run_tool("hta", dst, timeout)
        o = ours.get("idle", {})
        h = hta.get("idle", {})
        print(f"  {name:14s} kernelscope: host {o.get('host', 0):9.1f}  sync {o.get('sync', 0):7.1f}  "
              f"queued {o.get('queued', 0):6.1f}  streams {o.get('streams', 0):6.1f}  total {sum(o.values()):9.1f}"
              + (f"\n  {'':14s} HTA:         host_wait {h.get('host_wait', 0):9.1f}  kernel_wait "
                 f"{h.get('kernel_wait', 0):6.1f}  other {h.get('other', 0):6.1f}  total {sum(h.values()):9.1f}"
                 if h else f"\n  {'':14s} HTA: {hta.get('error')}"))


def speed(events: int, timeout: float):
    sys.path.insert(0, str(HERE))
    from load_trace import make_trace  # the same cached tiled trace as the load benchmark
    path = make_trace(ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz", events)
    print(f"\nspeed: {path.name} ({path.stat().st_size / 2**20:.0f} MiB, ~{events:,} events); "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    res = {t: run_tool(t, path, timeout) for t in ("kernelscope", "hta")}
    k = res["kernelscope"]
    for t, r in res.items():
        if "error" in r:
            print(f"  {t:12s} error: {r['error']}")
            continue
        tot = r["parse_s"] + r["analysis_s"]
        ratio = ""
        if "error" not in k:
            ratio = (f"  x{tot / (k['parse_s'] + k['analysis_s']):.1f} kernelscope's total, "
                     f"x{r['analysis_s'] / k['analysis_s']:.1f} its analysis")
        find = f" (+ all findings {r['findings_s']:.2f} s)" if r.get("findings_s") is not None else ""
        print(f"  {t:12s} parse {r['parse_s']:7.2f} s  idle analysis {r['analysis_s']:7.2f} s{find}  "
              f"total {tot:7.2f} s{ratio}  idle {sum(r['idle'].values()) / 1e3:.1f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(*a.child)))
        return
    agreement(a.timeout)
    speed(a.events, a.timeout)


if __name__ == "__main__":
    main()
