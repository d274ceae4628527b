"""Capture overhead, side by side in one run (see benchmarks/README.md for recorded numbers).

1. Cost per launch of a loop of tiny kernels: bare loop, torch.profiler (CPU+CUDA),
   ``ks.profile()`` (what ``%%kernelprofile`` uses), ``ks.profile(lean=True)`` and the magic
   itself in a real IPython shell (default and ``--lean``).
2. Time from the end of the profiled code to a ready report, for 10k launches: our stop +
   Report (default and through the magic) against torch.profiler's stop + ``key_averages()``.
2b. With ``--stop-sizes 5000,100000,1000000``: the stop at each size, as users pay it: torch.profiler's
   own ``stop()`` (CPU+CUDA, shapes + FLOPs, the settings ``ks.profile()`` records with), that
   stop plus ``export_chrome_trace`` (what a torch user pays before a trace can be looked at),
   ``ks.profile()`` stop -> Report, and with ``--metrics`` ``ks.profile(metrics=True)`` stop ->
   Report; each as a ratio to torch's stop of the same size (sizes over 100k: one round).
3. The two live-trace routes (in-memory activities vs Kineto JSON in tmpfs), where torch has both.
4. With ``--metrics`` (CUDA and cupti-python needed): per-launch cost of ``ks.profile(metrics=True)``
   at 20 and 100 us sampling against ``ks.profile()``, and what the samples cost after the region:
   decode time, host memory (tracemalloc peak of stop + report; CUPTI's counter-data image per
   sample) and the samples kept.

5. With ``--tuning`` (CUDA and Triton needed): per-launch cost of Triton launches (a plain
   ``@triton.jit`` kernel and an ``@triton.autotune`` one whose shape is tuned already) under
   ``ks.profile()`` (the tuning watch wraps ``JITFunction.run`` and ``Autotuner.run``) against
   ``ks.profile(tuning=False)`` and the bare loop. ``--only-tuning`` measures that alone.

    python benchmarks/capture_overhead.py [--launches 5000] [--post 10000] [--rounds 5] [--metrics] [--tuning] [--json OUT]

On a machine without CUDA it measures CPU ops (torch.add on a small tensor) instead of kernels.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import kernelscope as ks
from kernelscope.capture.live import kineto_results, route, trace_from_profiler

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"


def _sync():
    if CUDA:
        torch.cuda.synchronize()


def make_loop(n):
    x = torch.randn(256, device=DEV)

    def loop():
        y = x
        for _ in range(n):
            y = y + 1
        _sync()
        return y
    return loop


def _acts(lean=False):
    P = torch.profiler.ProfilerActivity
    return [P.CUDA] if (lean and CUDA) else ([P.CPU, P.CUDA] if CUDA else [P.CPU])


def per_launch(n, rounds, shell):
    """Median seconds per launch of each variant. The order of variants rotates every round:
    on a shared machine a fixed order biases whichever variant runs after a profiler session."""
    loop = make_loop(n)
    for _ in range(3):
        loop()

    def timed():
        t = time.perf_counter(); loop(); return time.perf_counter() - t

    def with_profiler(**kw):
        with torch.profiler.profile(activities=_acts(), **kw):
            return timed()

    def with_ks(**kw):
        with ks.profile(**kw):
            return timed()

    def magic(opt):
        shell.user_ns["loop"] = loop
        r = shell.run_cell(f"%%kernelprofile --no-display {opt}\n"
                           "_t0 = time.perf_counter(); loop(); _dt = time.perf_counter() - _t0\n")
        assert r.success, r.error_in_exec
        return shell.user_ns["_dt"]

    variants = {
        "bare": timed,
        "torch_profiler": with_profiler,
        # ks.profile's default records shapes and FLOPs too: the like-for-like comparison
        "torch_profiler_shapes_flops": lambda: with_profiler(record_shapes=True, with_flops=True),
        "ks_profile": with_ks,
        "ks_profile_lean": lambda: with_ks(lean=True),
    }
    if shell is not None:
        variants["magic_default"] = lambda: magic("")
        variants["magic_lean"] = lambda: magic("--lean")
    names = list(variants)
    res = {k: [] for k in names}
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            res[k].append(variants[k]())
    return {k: statistics.median(v) / n * 1e6 for k, v in res.items()}


def post_processing(n, rounds, shell):
    loop = make_loop(n)
    loop()
    res = {k: [] for k in ("torch_stop", "torch_key_averages", "torch_stop_plus_key_averages",
                           "ks_stop_to_report", "ks_lean_stop_to_report", "magic_cell_end_to_report")}
    for _ in range(rounds):
        p = torch.profiler.profile(activities=_acts())
        p.start(); loop()
        t = time.perf_counter(); p.stop(); t1 = time.perf_counter(); p.key_averages(); t2 = time.perf_counter()
        res["torch_stop"].append(t1 - t)
        res["torch_key_averages"].append(t2 - t1)
        res["torch_stop_plus_key_averages"].append(t2 - t)
        for key, lean in (("ks_stop_to_report", False), ("ks_lean_stop_to_report", True)):
            prof = ks.profile(lean=lean)
            prof.start(); loop()
            t = time.perf_counter(); rep = prof.stop(); _ = rep.kernels
            res[key].append(time.perf_counter() - t)
        # where our time goes: profiler stop, Trace from the live results, Report (analysis)
        p = torch.profiler.profile(activities=_acts(), record_shapes=True, with_flops=True)
        p.start(); loop()
        t0 = time.perf_counter(); p.stop(); t1 = time.perf_counter()
        tr = trace_from_profiler(p); t2 = time.perf_counter(); ks.Report(tr); t3 = time.perf_counter()
        for key, v in (("part_stop", t1 - t0), ("part_trace", t2 - t1), ("part_report", t3 - t2)):
            res.setdefault(key, []).append(v)
        if shell is not None:
            shell.user_ns["loop"] = loop
            r = shell.run_cell("%%kernelprofile --no-display -o _rep\nloop(); _t_end = time.perf_counter()\n")
            assert r.success, r.error_in_exec
            res["magic_cell_end_to_report"].append(time.perf_counter() - shell.user_ns["_t_end"])
    return {k: statistics.median(v) for k, v in res.items() if v}


def stop_ratios(sizes, rounds, metrics):
    """End of the region -> ready, at each size: torch.profiler's stop (and + export) against
    ks.profile() stop -> Report (and with metrics); variants rotate, each on its own recording."""
    import gc
    import os
    out = {}
    for n in sizes:
        loop = make_loop(n)
        loop()

        def torch_stop(export=False, loop=loop):
            p = torch.profiler.profile(activities=_acts(), record_shapes=True, with_flops=True)
            p.start(); loop()
            t = time.perf_counter(); p.stop()
            if export:
                path = f"/dev/shm/ks-bench-{os.getpid()}.json"
                p.export_chrome_trace(path)
                Path(path).unlink()
            return time.perf_counter() - t

        samples: list = []

        def ks_stop(loop=loop, samples=samples, **kw):
            prof = ks.profile(**kw)
            prof.start(); loop()
            t = time.perf_counter(); rep = prof.stop(); _ = rep.kernels
            dt = time.perf_counter() - t
            if kw.get("metrics"):
                samples.append(rep.meta.get("counters", {}).get("samples", 0))
            return dt
        variants = {"torch_stop": torch_stop, "torch_stop_plus_export": lambda: torch_stop(True),
                    "ks_stop_to_report": ks_stop}
        if metrics and CUDA:
            variants["ks_metrics_stop_to_report"] = lambda: ks_stop(metrics=True)
        names = list(variants)
        res = {k: [] for k in names}
        for r in range(rounds if n <= 100_000 else 1):
            for k in names[r % len(names):] + names[:r % len(names)]:
                res[k].append(variants[k]())
                gc.collect()
        med = {k: statistics.median(v) for k, v in res.items()}
        out[n] = {"seconds": med, "vs_torch_stop": {k: v / med["torch_stop"] for k, v in med.items()}}
        if samples:
            # A metrics row whose sampling never ran measures nothing: say so beside it.
            out[n]["pm_samples"] = samples
            if not all(samples):
                print(f"WARNING: {n:,} launches: PM sampling was off in some metrics=True runs ({samples} samples)")
    return out


def routes(n, rounds):
    """Each route on its own fresh recording (whichever touches Kineto's results first pays
    for finalizing them, so one recording cannot time both)."""
    loop = make_loop(n)
    loop()

    def record():
        with torch.profiler.profile(activities=_acts(), record_shapes=True, with_flops=True) as p:
            loop()
        return p

    here = route(kineto_results(record()))
    out = {"route_here": here}
    for r in (("in-memory", "tmpfs") if here == "in-memory" else ("tmpfs",)):
        ts = []
        for _ in range(rounds):
            p = record()
            t = time.perf_counter(); trace_from_profiler(p, force_route=r); ts.append(time.perf_counter() - t)
        out[f"{r}_s"] = statistics.median(ts)
    return out


def counters(n, rounds):
    """PM sampling's cost: per launch against ks.profile(), and decode time and memory after."""
    import tracemalloc
    loop = make_loop(n)
    for _ in range(3):
        loop()

    def timed(**kw):
        with ks.profile(**kw) as prof:
            t = time.perf_counter(); loop(); dt = time.perf_counter() - t
        return dt, prof.report
    out = {}
    variants = {"ks_profile": {}, "metrics_20us": {"metrics": True, "interval_us": 20},
                "metrics_100us": {"metrics": True, "interval_us": 100}, "torch_profiler_shapes_flops": None}
    res = {k: [] for k in variants}
    names = list(variants)

    def with_torch():
        with torch.profiler.profile(activities=_acts(), record_shapes=True, with_flops=True):
            t = time.perf_counter(); loop(); return time.perf_counter() - t
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            res[k].append(with_torch() if variants[k] is None else timed(**variants[k])[0])
    out["us_per_launch"] = {k: statistics.median(v) / n * 1e6 for k, v in res.items()}
    for k in ("metrics_20us", "metrics_100us"):
        prof = ks.profile(**variants[k])
        prof.start(); loop()
        tracemalloc.start()
        t = time.perf_counter(); rep = prof.stop(); dt = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        c = rep.meta.get("counters", {})
        out[k] = {"stop_to_report_s": dt, "decode_s": c.get("decode_s"), "samples": c.get("samples"),
                  "host_peak_bytes": peak, "image_bytes": c.get("image_bytes"),
                  "image_bytes_per_sample": c.get("image_bytes_per_sample"), "values_bytes": c.get("values_bytes"),
                  "notes": [x for x in rep.notes if "counter" in x or "PM" in x]}
    return out


def tuning(n, rounds):
    """The tuning watch's cost per Triton launch: ks.profile() (watching) against
    ks.profile(tuning=False) and the bare loop, for a plain and an autotuned kernel."""
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x, n_el, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + i, tl.load(x + i, mask=i < n_el) + 1, mask=i < n_el)
    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=1),
                                     triton.Config({"BLOCK": 256}, num_warps=2)], key=["n_el"])(triton.jit(add_one.fn))
    x = torch.zeros(256, device=DEV)
    loops = {"jit": lambda: add_one[(1,)](x, 256, BLOCK=256), "autotune": lambda: tuned[(1,)](x, 256)}
    out = {}
    for kind, launch in loops.items():
        for _ in range(3):
            launch()
        _sync()

        def timed(launch=launch):
            t = time.perf_counter()
            for _ in range(n):
                launch()
            _sync()
            return time.perf_counter() - t

        def with_ks(**kw):
            with ks.profile(**kw):
                return timed()
        variants = {"bare": timed, "ks_profile_no_tuning": lambda: with_ks(tuning=False),
                    "ks_profile": with_ks}
        names = list(variants)
        res = {k: [] for k in names}
        for r in range(rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                res[k].append(variants[k]())
        out[kind] = {k: statistics.median(v) / n * 1e6 for k, v in res.items()}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=5000)
    ap.add_argument("--post", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--stop-sizes", default=None,
                    help="comma-separated launch counts: the stop against torch.profiler's at each")
    ap.add_argument("--only-stop", action="store_true", help="measure --stop-sizes (and --metrics' region cost) only")
    ap.add_argument("--metrics", action="store_true", help="also measure PM sampling (ks.profile(metrics=True))")
    ap.add_argument("--tuning", action="store_true", help="also measure the tuning watch on Triton launches")
    ap.add_argument("--only-tuning", action="store_true", help="measure the tuning watch only")
    a = ap.parse_args()
    if a.only_tuning:
        res = {"info": {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if CUDA else "cpu",
                        "launches": a.launches, "rounds": a.rounds}, "tuning": tuning(a.launches, a.rounds)}
        _print_tuning(res["tuning"], a)
        if a.json:
            with Path(a.json).open("w") as f:
                json.dump(res, f, indent=1)
        return res
    shell = None
    try:
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "kernelscope")
        shell.run_cell("import time")
    except ImportError:
        pass
    info = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if CUDA else "cpu",
            "launches": a.launches, "post_launches": a.post, "rounds": a.rounds}
    if a.only_stop:
        return _only_stop(a, info)
    pl = per_launch(a.launches, a.rounds, shell)
    pp = post_processing(a.post, a.rounds, shell)
    rt = routes(a.post, a.rounds)
    res = {"info": info, "us_per_launch": pl, "post_s": pp, "routes": rt}
    if a.metrics:
        res["counters"] = counters(a.launches, a.rounds) if CUDA else {"skipped": "needs CUDA"}
    bare = pl["bare"]
    print(f"# {info}")
    print(f"per launch ({a.launches} tiny {'kernels' if CUDA else 'CPU ops'}, median of {a.rounds}):")
    for k, v in pl.items():
        print(f"  {k:18s} {v:8.2f} us   {v / bare:5.2f}x bare   {v / pl['torch_profiler']:5.2f}x torch.profiler")
    print(f"end of region -> report ready ({a.post} launches):")
    ka = pp["torch_key_averages"]
    for k, v in pp.items():
        print(f"  {k:30s} {v:7.3f} s   {v / ka:5.2f}x key_averages()")
    print("live trace routes:", rt)
    if a.metrics and CUDA:
        c = res["counters"]
        base = c["us_per_launch"]["ks_profile"]
        print(f"PM sampling ({a.launches} tiny kernels, median of {a.rounds}):")
        for k, v in c["us_per_launch"].items():
            print(f"  {k:18s} {v:8.2f} us   {v / base:5.2f}x ks.profile()")
        for k in ("metrics_20us", "metrics_100us"):
            m = c[k]
            n = lambda x: float("nan") if x is None else x   # noqa: E731 - sampling may have been refused
            print(f"  {k}: {m['samples']} samples, stop -> report {n(m['stop_to_report_s']):.3f} s (decode "
                  f"{n(m['decode_s']):.3f} s), host peak {n(m['host_peak_bytes']) / 2**20:.1f} MiB, CUPTI image "
                  f"{n(m['image_bytes_per_sample']) / 1024:.1f} KiB/sample, kept values {n(m['values_bytes']) / 1024:.1f} KiB")
            for note in m["notes"]:
                print("    note:", note)
    if a.tuning and CUDA:
        res["tuning"] = tuning(a.launches, a.rounds)
        _print_tuning(res["tuning"], a)
    if a.stop_sizes:
        res["stop"] = stop_ratios([int(x) for x in a.stop_sizes.split(",")], a.rounds, a.metrics)
        _print_stop(res["stop"], a)
    if a.json:
        with Path(a.json).open("w") as f:
            json.dump(res, f, indent=1)
    return res


def _only_stop(a, info):
    res = {"info": info}
    if a.metrics and CUDA:
        res["counters"] = counters(a.launches, a.rounds)
        for k in ("metrics_20us", "metrics_100us"):
            if not res["counters"][k]["samples"]:
                print(f"WARNING: {k}: PM sampling was not on, so its rows measure nothing:", res["counters"][k]["notes"])
        c = res["counters"]["us_per_launch"]
        print(f"inside the region ({a.launches} tiny kernels, median of {a.rounds}), us per launch:")
        for k, v in c.items():
            print(f"  {k:30s} {v:8.2f} us   {v / c['torch_profiler_shapes_flops']:5.3f}x torch.profiler (shapes + FLOPs)")
    if a.stop_sizes:
        res["stop"] = stop_ratios([int(x) for x in a.stop_sizes.split(",")], a.rounds, a.metrics)
        _print_stop(res["stop"], a)
    if a.json:
        with Path(a.json).open("w") as f:
            json.dump(res, f, indent=1)
    return res


def _print_stop(stop, a):
    print(f"end of region -> ready, by size (median of {a.rounds}; one round above 100k):")
    for n, d in stop.items():
        for k, v in d["seconds"].items():
            print(f"  {n:>9,} {k:28s} {v:8.3f} s   {d['vs_torch_stop'][k]:5.2f}x torch.profiler's stop")


def _print_tuning(t, a):
    print(f"tuning watch ({a.launches} Triton launches, median of {a.rounds}):")
    for kind, v in t.items():
        base = v["ks_profile_no_tuning"]
        for k, us in v.items():
            print(f"  {kind:9s} {k:22s} {us:8.2f} us   {us / base:5.3f}x ks.profile(tuning=False)")


if __name__ == "__main__":
    main()
