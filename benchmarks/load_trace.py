"""Load + analyze a large Kineto trace: kernelscope vs HTA vs ``json.load`` alone, in one run.

    python benchmarks/load_trace.py                      # 1M events tiled from the MLP step
    python benchmarks/load_trace.py --events 5000000 --skip-hta --skip-json --repeat 1 --out /tmp
    python benchmarks/load_trace.py --gzip               # the same trace as .json.gz

Each tool runs in its own process so that its peak memory (ru_maxrss) is its own, ``--repeat``
times (default 3, the order of the tools rotating each round); medians are printed, with the
load average before each round (the machine is shared), in wall seconds and CPU seconds (user +
system, of the process and any it waited for: less sensitive to other work on the machine). What
is timed:

* kernelscope: ``ks.load`` + ``rep.summary()`` + ``rep.backends`` + ``rep.findings`` (the
  findings compute the timeline and the roofline), a plain file of this size read by the split
  reader (its worker processes' memory is in ``tree_peak_mb``); ``--one-process`` adds
  "kernelscope-1", the same in one process;
* HTA: ``TraceAnalysis(trace_files=...)`` + ``get_gpu_kernel_breakdown`` +
  ``get_temporal_breakdown`` + ``get_idle_time_breakdown`` (its load and the analyses that
  answer the same questions: time per kernel, busy/idle, idle by cause);
* json: ``json.load`` of the file, the floor of any reader built on Python's json.

The trace is made with ``tools/tile_trace.py`` from a real H200 recording (see
``benchmarks/tiles.py`` for where it is looked for) and cached in benchmarks/out/ (``--out``:
another folder).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from tiles import OUT, make_trace, tile_tool  # noqa: E402,F401  (make_trace: timeline_analysis imports it here)


def _cpu_s() -> float:
    """CPU seconds of this process and of any it waited for (user + system): less sensitive
    than wall time to other work on a shared machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rss_kib(pid) -> int:
    try:
        with pathlib.Path(f"/proc/{pid}/status").open() as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid) -> list:
    """``pid`` and every process below it."""
    out, todo = [], [str(pid)]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with pathlib.Path(f"/proc/{p}/task/{p}/children").open() as f:
                todo.extend(f.read().split())
        except OSError:
            pass
    return out


def _import_all(packages) -> None:
    """Import these modules and every module of these packages (one that cannot be imported
    here, an optional extra's, is left out)."""
    import importlib
    import pkgutil
    for name in packages:
        mod = importlib.import_module(name)
        for info in pkgutil.walk_packages(getattr(mod, "__path__", []), name + "."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                pass


def _child(tool: str, path: str) -> dict:
    """Runs in a fresh process: import, then time the load and the analyses."""
    steps = {}
    if tool in ("kernelscope", "kernelscope-1"):
        if tool == "kernelscope-1":
            os.environ["KERNELSCOPE_READ_WORKERS"] = "0"    # one process (no split reader)
        import kernelscope as ks

        # ``import kernelscope`` is light (its report side is imported on first use): import
        # what the timed steps use before the clock starts, as HTA's import does for HTA.
        # Every module of the reading and analysis layers: the analyses import their rules'
        # modules on first use, which is not what is timed (and costs ~0.1 s where Python
        # writes no bytecode cache, as here: PYTHONDONTWRITEBYTECODE).
        _import_all(("kernelscope.trace", "kernelscope.analysis", "kernelscope.reports", "kernelscope.loading",
                     "kernelscope.render.progress"))
        base, cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu_s()   # after imports
        t0 = t = time.perf_counter()
        rep = ks.load(path)
        steps["load"], t = time.perf_counter() - t, time.perf_counter()
        summary = rep.summary()
        steps["summary"], t = time.perf_counter() - t, time.perf_counter()
        breakdown = rep.backends
        steps["backends"], t = time.perf_counter() - t, time.perf_counter()
        findings = rep.findings
        steps["findings"] = time.perf_counter() - t
        wall = time.perf_counter() - t0
        # What showing the report adds (not in the time compared with HTA, which draws nothing):
        # the display bundle (view model + packed blob + the MIME entry), whose memory counts in
        # the peak.
        from kernelscope.view.bundle import mime_payload
        from kernelscope.view.codec import pack
        from kernelscope.view.report import view_model
        t = time.perf_counter()
        packed = pack(*view_model(rep))
        mime_payload(rep, packed=packed)
        steps["display"] = time.perf_counter() - t
        info = {"kernels": int(len(rep.kernels)), "distinct": int(len(summary)), "backends": int(len(breakdown)),
                "findings": len(findings)}
    elif tool == "json":
        base, cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu_s()   # after imports
        t0 = time.perf_counter()
        if path.endswith(".gz"):
            import gzip
            with gzip.open(path, "rb") as f:
                doc = json.load(f)
        else:
            with pathlib.Path(path).open("rb") as f:
                doc = json.load(f)
        wall = steps["load"] = time.perf_counter() - t0
        info = {"events": len(doc["traceEvents"])}
    elif tool == "hta":
        import logging
        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis
        base, cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _cpu_s()   # after imports
        t0 = t = time.perf_counter()
        ta = TraceAnalysis(trace_files={0: path}, trace_dir=str(pathlib.Path(path).parent))
        steps["load"], t = time.perf_counter() - t, time.perf_counter()
        # An analysis HTA fails on (its temporal breakdown asserts idle <= kernel time, which a
        # launch-bound trace breaks) is timed up to its failure and named: HTA's time is then a
        # lower bound of what it would take.
        info, failed = {}, []
        for name, run in (("kernel_breakdown", lambda: ta.get_gpu_kernel_breakdown(visualize=False)),
                          ("temporal", lambda: ta.get_temporal_breakdown(visualize=False)),
                          ("idle_time", lambda: ta.get_idle_time_breakdown(visualize=False))):
            try:
                got = run()
                if name == "kernel_breakdown":
                    info["kernel_rows"] = int(len(got[1]))
            except Exception as e:  # noqa: BLE001 - HTA's own failure, reported
                failed.append(f"{name}: {type(e).__name__}")
            steps[name], t = time.perf_counter() - t, time.perf_counter()
        wall = time.perf_counter() - t0
        if failed:
            info["failed"] = failed
    else:
        raise SystemExit(f"unknown tool {tool}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"tool": tool, "wall_s": wall, "cpu_s": _cpu_s() - cpu0, "peak_mb": peak / 1024, "import_mb": base / 1024, "steps": steps, **info}


def run_child(script: str, tool: str, path, timeout: float, **on_error) -> dict:
    """Run ``script --child TOOL PATH`` in a fresh process (so its peak memory is its own) and
    return the JSON dict it prints last; on failure ``{"tool", "error", **on_error}``.

    ``tree_peak_mb`` is the peak of the summed RSS of that process and every process it starts
    (kernelscope's reader workers), sampled here every 10 ms from /proc (ru_maxrss counts one
    process; sampling from outside takes no time from the process measured). Each process's
    whole RSS counts, shared library pages in each, so it is an upper bound."""
    import tempfile
    cmd = [sys.executable, script, "--child", tool, str(path)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        peak, t0 = 0, time.monotonic()
        while p.poll() is None:
            if time.monotonic() - t0 > timeout:
                p.kill()
                p.wait()
                return {"tool": tool, "error": f"timed out after {timeout:.0f} s", **on_error}
            peak = max(peak, sum(map(_rss_kib, _tree(p.pid))))
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        return {"tool": tool, "error": (stderr.strip().splitlines() or ["?"])[-1], **on_error}
    got = json.loads(stdout.strip().splitlines()[-1])
    got["tree_peak_mb"] = max(peak / 1024, got.get("peak_mb", 0))
    return got


def run_tool(tool: str, path: pathlib.Path, timeout: float) -> dict:
    return run_child(__file__, tool, path, timeout, wall_s=float("nan"))


def load_average() -> float:
    return os.getloadavg()[0]


def _median(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else float("nan")


# The trace shapes ``--shapes`` runs: each a real H200 recording tiled to ``--events``.
SHAPES = {
    "cpu_ops": "mlp_train.pt.trace.json.gz",            # CPU-op heavy: 534k ops, 87k kernels at 1M
    "kernel_dense": "launch_bound.pt.trace.json.gz",    # kernel-dense: 198k tiny kernels at 1M
    "copy_heavy": "copies_streams.pt.trace.json.gz",    # copies and memsets on two side streams
    "multi_stream": "ranks/rank0.pt.trace.json.gz",     # DDP rank 0: compute, NCCL and copies on 13 streams
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--source", type=pathlib.Path, default=ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz")
    ap.add_argument("--shapes", nargs="*", metavar="SHAPE",
                    help=f"run these trace shapes one after another ({', '.join(SHAPES)}; none named: all) "
                         "and print each one's ratio, the worst first")
    ap.add_argument("--keep", action="store_true", help="with --shapes: keep the tiled traces (default: delete each after its runs)")
    ap.add_argument("--trace", type=pathlib.Path, help="an existing trace to read instead of a tiled one")
    ap.add_argument("--gzip", action="store_true", help="tile to .json.gz instead of .json")
    ap.add_argument("--tile-tool", help="path of tile_trace.py (default: $KERNELSCOPE_TILE_TRACE, else tools/tile_trace.py)")
    ap.add_argument("--out", type=pathlib.Path, help="folder for the tiled trace (default benchmarks/out; "
                                                     "5M events is 1.5 GB, 10M 3.1 GB: /tmp is a good place)")
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--skip-json", action="store_true")
    ap.add_argument("--one-process", action="store_true",
                    help="also run kernelscope in one process (KERNELSCOPE_READ_WORKERS=0) as 'kernelscope-1'")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json-out", type=pathlib.Path, help="write every run's figures here")
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(*a.child)))
        return
    if a.shapes is not None:
        unknown = [s for s in a.shapes if s not in SHAPES]
        if unknown:
            raise SystemExit(f"unknown shape(s) {unknown}: pick from {list(SHAPES)}")
        results = {}
        for shape in a.shapes or list(SHAPES):
            source = ROOT / "tests" / "data" / SHAPES[shape]
            print(f"\n== {shape}: {SHAPES[shape]} tiled", flush=True)
            path = make_trace(source, a.events, name=f"{shape}_{a.events}{'.json.gz' if a.gzip else '.json'}",
                              tool=a.tile_tool, out=a.out)
            try:
                results[shape] = run_trace(a, path)
            finally:
                if not a.keep and a.trace is None:
                    path.unlink(missing_ok=True)
        print("\nshapes, worst ratio first (HTA's time / kernelscope's, medians; peak RSS with the display "
              "built, x file):")
        done = {s: r for s, r in results.items() if r.get("ratio") == r.get("ratio")}
        for shape, r in sorted(done.items(), key=lambda kv: kv[1]["ratio"]):
            print(f"  {shape:13s} {r['events']:>10,} events {r['size_mb']:6.0f} MiB  kernelscope {r['wall']:6.2f} s "
                  f"(display {r['display']:.2f} s)  HTA {r['hta']:6.2f} s  x{r['ratio']:.1f}  "
                  f"rounds {' '.join(f'x{x:.1f}' for x in r['rounds'])}  CPU time x{r['cpu_ratio']:.1f}  "
                  f"peak {r['tree_mb']:.0f} MiB ({r['tree_x']:.2f}x file)"
                  + (f"  (HTA failed: {', '.join(r['hta_failed'])}; its time up to the failure)" if r["hta_failed"] else ""))
        if done:
            worst = min(done, key=lambda s: done[s]["ratio"])
            print(f"headline (the worst shape): {worst} x{done[worst]['ratio']:.1f} HTA; "
                  f"peak RSS at most {max(r['tree_x'] for r in done.values()):.2f}x the file")
        if a.json_out:
            a.json_out.write_text(json.dumps(results, indent=1))
        return
    if a.trace:
        path = a.trace
    else:
        suffix = ".json.gz" if a.gzip else ".json"
        path = make_trace(a.source, a.events, name=f"{a.source.name.split('.')[0]}_{a.events}{suffix}",
                          tool=a.tile_tool, out=a.out)
    got = run_trace(a, path)
    if a.json_out:
        a.json_out.write_text(json.dumps(got, indent=1))


def _events(path: pathlib.Path) -> int:
    """How many events the tiled trace holds (each event of tile_trace's output starts '{"ph"' or
    '{"name"'...: counted by its "ph" keys, without decoding)."""
    if path.suffix == ".gz":
        return 0
    n = 0
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            n += block.count(b'"ph":')
    return n


def run_trace(a, path: pathlib.Path) -> dict:
    """Every tool on one trace, ``a.repeat`` rounds (the order rotating); prints each round and
    the medians, and returns the figures of the comparison."""
    size_mb = path.stat().st_size / 2**20
    events = _events(path)
    print(f"trace: {path.name}, {size_mb:.0f} MiB, {events or a.events:,} events; {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}; {a.repeat} round(s), medians")
    tools = (["kernelscope"] + (["kernelscope-1"] if a.one_process else []) + ([] if a.skip_json else ["json"])
             + ([] if a.skip_hta else ["hta"]))
    runs = {t: [] for t in tools}
    for i in range(a.repeat):
        order = tools[i % len(tools):] + tools[:i % len(tools)]
        print(f"round {i + 1}: load average {load_average():.2f}", flush=True)
        for t in order:
            r = run_tool(t, path, a.timeout)
            r["load_average"] = load_average()
            runs[t].append(r)
            if "error" in r:
                print(f"  {t}: error: {r['error']}", flush=True)
            else:
                print(f"  {t:12s} {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  peak {r['peak_mb']:6.0f} MiB  "
                      f"with workers {r['tree_peak_mb']:6.0f} MiB  "
                      + "  ".join(f"{k} {v:.2f}" for k, v in r["steps"].items()), flush=True)
    ok = {t: [r for r in rs if "error" not in r] for t, rs in runs.items()}
    ks_wall, ks_cpu = _median(ok["kernelscope"], "wall_s"), _median(ok["kernelscope"], "cpu_s")
    print("medians:")
    for t in tools:
        rs = ok[t]
        if not rs:
            print(f"{t:12s} error: {runs[t][-1].get('error')}")
            continue
        wall, cpu, peak, imp, tree = (_median(rs, k) for k in ("wall_s", "cpu_s", "peak_mb", "import_mb",
                                                                "tree_peak_mb"))
        steps = {k: statistics.median(r["steps"][k] for r in rs) for k in rs[0]["steps"]}
        extra = {k: v for k, v in rs[0].items()
                 if k not in ("tool", "wall_s", "cpu_s", "peak_mb", "tree_peak_mb", "import_mb", "steps",
                              "load_average")}
        print(f"{t:12s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak RSS {peak:7.0f} MiB ({peak / size_mb:.2f}x file; "
              f"{peak - imp:.0f} MiB above imports; with its workers {tree:.0f} MiB, {tree / size_mb:.2f}x)  x{wall / ks_wall:.1f} kernelscope's time "
              f"(x{cpu / ks_cpu:.1f} its CPU time)  "
              + "  ".join(f"{k} {v:.2f}" for k, v in steps.items()) + f"  {extra}")
    ks_ok, hta_ok = ok["kernelscope"], ok.get("hta", [])
    # Each round's ratio pairs that round's two runs (the machine's speed moves from minute to minute).
    rounds = [h["wall_s"] / k["wall_s"] for k, h in zip(runs["kernelscope"], runs.get("hta", []))
              if "error" not in k and "error" not in h]
    return {"trace": str(path), "size_mb": size_mb, "events": events, "runs": runs, "wall": ks_wall,
            "display": statistics.median(r["steps"].get("display", float("nan")) for r in ks_ok) if ks_ok else float("nan"),
            "hta": _median(hta_ok, "wall_s"), "ratio": _median(hta_ok, "wall_s") / ks_wall if hta_ok else float("nan"),
            "rounds": rounds, "tree_mb": _median(ks_ok, "tree_peak_mb"),
            "cpu_ratio": _median(hta_ok, "cpu_s") / ks_cpu if hta_ok else float("nan"),
            "hta_failed": sorted({f for r in hta_ok for f in r.get("failed", [])}),
            "tree_x": _median(ks_ok, "tree_peak_mb") / size_mb}


if __name__ == "__main__":
    main()
