"""Load a full Nsight Compute report: ``ks.load_ncu`` against ``ncu_report`` used directly.

    python benchmarks/ncu_load.py                     # the 47.6 MB resnet50 report, 5 rounds
    python benchmarks/ncu_load.py --rounds 9

The report is tests/data/ncu_rep/resnet50_full.ncu-rep.xz (ncu --set full --import-source yes on
the H200, 10 kernels of a ResNet-50 forward pass), unpacked once into benchmarks/out/. The
alternative a user would write: ``ncu_report.load_report`` and every metric of every launch
read with ``metric_by_name(name).value()``: all the numbers, none of the meaning. kernelscope's
time is ``ks.load_ncu(path)``: the report checked whole, the chosen metrics, the measured
roofline, stall shares, rules, per-PC samples correlated to source lines and the SASS around
the hot instructions, and the Report with occupancy, backends and findings;
``kernelscope_metrics_only`` is ``ks.load_ncu(path, source=False)`` (no per-instruction
source/SASS correlation, the part for which ncu_report parses each kernel's code), the like-for-like
comparison; ``kernelscope_from_xz`` reads the compressed file. Every variant runs
in a fresh process per round (the reader caches nothing across processes); the order rotates
each round; the median is reported, with the ratio.
"""
from __future__ import annotations

import argparse
import json
import lzma
import pathlib
import shutil
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
SOURCE = ROOT / "tests" / "data" / "ncu_rep" / "resnet50_full.ncu-rep.xz"
sys.path.insert(0, str(HERE))
from load_trace import run_child  # noqa: E402 - the benchmarks' one subprocess runner


def unpacked() -> pathlib.Path:
    OUT.mkdir(exist_ok=True)
    path = OUT / "resnet50_full.ncu-rep"
    if not path.exists():
        with lzma.open(SOURCE) as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    return path


def _child(tool: str, path: str) -> dict:
    if tool == "ncu_report_all_metrics":
        import ncu_report
        t = time.perf_counter()
        ctx = ncu_report.load_report(path)
        values = 0
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for i in range(rng.num_actions()):
                a = rng.action_by_idx(i)
                row = {n: a.metric_by_name(n).value() for n in a.metric_names()}
                values += len(row)
        return {"tool": tool, "wall_s": time.perf_counter() - t, "values": values}
    import kernelscope as ks
    t = time.perf_counter()
    rep = ks.load_ncu(str(SOURCE) if tool == "kernelscope_from_xz" else path, source=tool != "kernelscope_metrics_only")
    findings = rep.findings
    wall = time.perf_counter() - t
    return {"tool": tool, "wall_s": wall, "launches": int(len(rep.ncu)), "columns": int(rep.ncu.shape[1]),
            "hotspots": int(len(rep.ncu_detail["hotspots"])), "findings": len(findings)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(*a.child)))
        return None
    path = unpacked()
    size = path.stat().st_size / 1e6
    tools = ["kernelscope", "kernelscope_metrics_only", "ncu_report_all_metrics", "kernelscope_from_xz"]
    from importlib.metadata import version

    import ncu_report  # noqa: F401 - fail early when the reader is missing
    print(f"report: {path.name}, {size:.1f} MB ({SOURCE.stat().st_size / 1e6:.1f} MB as .xz); ncu-report "
          f"{version('ncu-report')}; Python {sys.version.split()[0]}; {a.rounds} rounds, a fresh process each")
    times = {t: [] for t in tools}
    last = {}
    for k in range(a.rounds):
        for t in tools[k % len(tools):] + tools[:k % len(tools)]:
            r = run_child(__file__, t, path, a.timeout, wall_s=float("nan"))
            if "error" in r:
                print(f"{t}: error: {r['error']}")
                return 1
            times[t].append(r["wall_s"])
            last[t] = r
    base = statistics.median(times["ncu_report_all_metrics"])
    for t in tools:
        med = statistics.median(times[t])
        extra = {k: v for k, v in last[t].items() if k not in ("tool", "wall_s")}
        print(f"{t:24s} median {med * 1000:7.0f} ms  (min {min(times[t]) * 1000:.0f}, max {max(times[t]) * 1000:.0f})  "
              f"x{med / base:.2f} of ncu_report reading every metric  {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
