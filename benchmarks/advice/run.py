"""Record the advice benchmark on a CUDA machine (the H200): for every workload of workloads.py,
the unprofiled step time before and after its fix (medians of alternating rounds, each step
synchronized), and one profiled step of each (a kernelscope report, saved). Cold workloads run
each measured first call in a fresh process (with an empty Triton cache).

    python benchmarks/advice/run.py record OUT [--only NAME ...]     # everything, one process per workload
    python benchmarks/advice/run.py calibrate OUT                     # the profiler's own cost per launch

score.py reads OUT (no GPU needed) and prints the table.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Workloads whose before and after are also recorded with repeats (the comparison's noise).
REPEATED = {"small_ops_chain", "item_in_loop", "lm_head_50257", "fp32_matmul", "elementwise_chain",
            "triton_four_programs", "pageable_h2d"}
REPEATS = 5
ROUND_BUDGET_S = 2.0
MIN_ROUNDS, MAX_ROUNDS = 7, 40
COLD_PROCESSES = 3


def _sync():
    import torch
    torch.cuda.synchronize()


def _time(step) -> float:
    _sync()
    t0 = time.perf_counter()
    step()
    _sync()
    return (time.perf_counter() - t0) * 1e3


def _profile(step, path, repeats=0):
    import kernelscope as ks
    _sync()
    with ks.profile(tuning="auto") as prof:
        if repeats:
            for i in range(repeats):
                with prof.repeat(i):
                    step()
        else:
            step()
        _sync()
    prof.report.save(str(path))


def one(name, out: Path) -> dict:
    """A warm workload in this process: warm both, time alternating rounds, profile one step each."""
    from workloads import WORKLOADS
    w = WORKLOADS[name]
    steps = {v: w.build(v) for v in ("before", "after")}
    for s in steps.values():
        for _ in range(3):
            s()
    _sync()
    times = {"before": [], "after": []}
    t_end = time.perf_counter() + 2 * ROUND_BUDGET_S
    while len(times["before"]) < MAX_ROUNDS and (len(times["before"]) < MIN_ROUNDS or time.perf_counter() < t_end):
        for v in ("before", "after"):
            times[v].append(_time(steps[v]))
    for v, s in steps.items():
        _profile(s, out / f"{name}.{v}.ksreport.json.gz")
        if name in REPEATED:
            _profile(s, out / f"{name}.{v}.repeats.ksreport.json.gz", repeats=REPEATS)
    return {"times_ms": times}


def cold(name, variant, mode, out: Path) -> dict:
    """A cold workload in a fresh process: the first call (before) or a call after a warm-up (after)."""
    from workloads import WORKLOADS
    step = WORKLOADS[name].build(variant)
    _sync()
    if variant == "after":
        step()
        _sync()
        if mode == "profile":
            _profile(step, out / f"{name}.after.ksreport.json.gz")
            return {}
        return {"times_ms": [_time(step) for _ in range(5)]}
    if mode == "profile":
        _profile(step, out / f"{name}.before.ksreport.json.gz")
        return {}
    return {"times_ms": [_time(step)]}


def _child(args, timeout=180) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-cache-"))
    r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode or not lines:
        return {"error": (r.stderr or r.stdout)[-3000:]}
    return json.loads(lines[-1][len("RESULT "):])


def record(out: Path, only=None) -> None:
    from workloads import WORKLOADS
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    res_path = out / "results.json"
    if res_path.exists():
        results = json.loads(res_path.read_text())
    for name, w in WORKLOADS.items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        row = {"family": w.family, "expect": list(w.expect), "fix": w.fix, "cold": w.cold}
        try:
            if not w.cold:
                row.update(_child(["one", name, str(out)]))
            else:
                before = [_child(["cold", name, "before", "time", str(out)]) for _ in range(COLD_PROCESSES)]
                _child(["cold", name, "before", "profile", str(out)])
                after = _child(["cold", name, "after", "time", str(out)])
                _child(["cold", name, "after", "profile", str(out)])
                errs = [r["error"] for r in [*before, after] if "error" in r]
                row["times_ms"] = {"before": [t for r in before for t in r.get("times_ms", [])],
                                   "after": after.get("times_ms", [])}
                if errs:
                    row["error"] = errs[0]
        except subprocess.TimeoutExpired as e:
            row["error"] = f"timeout: {e}"
        t = row.get("times_ms") or {}
        if t.get("before") and t.get("after"):
            row["before_ms"] = statistics.median(t["before"])
            row["after_ms"] = statistics.median(t["after"])
            row["gain_ms"] = row["before_ms"] - row["after_ms"]
        results[name] = row
        res_path.write_text(json.dumps(results, indent=1))
        print(f"{name:32s} {time.perf_counter() - t0:6.1f}s  before {row.get('before_ms', float('nan')):9.3f} ms"
              f"  after {row.get('after_ms', float('nan')):9.3f} ms  {('ERROR ' + row['error'][-300:]) if 'error' in row else ''}",
              flush=True)


def calibrate(out: Path) -> None:
    """The profiler's own cost: per launch (3000 tiny launches, bare and recorded) and to start."""
    import torch

    import kernelscope as ks
    x = torch.zeros(16, device="cuda")

    def loop():
        for _ in range(3000):
            x.add_(1.0)
    for _ in range(2):
        loop()
    bare = min(_time(loop) for _ in range(5))
    rec = []
    for _ in range(3):
        _sync()
        with ks.profile() as prof:
            rec.append(_time(loop))
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        with ks.profile() as prof:
            t1 = time.perf_counter()
            x.add_(1.0)
            _sync()
        starts.append((t1 - t0) * 1e3)
    prof.report.save(str(out / "calibrate.one_launch.ksreport.json.gz"))
    res = {"bare_us_per_launch": bare / 3, "recorded_us_per_launch": min(rec) / 3,
           "profiler_cost_per_launch_us": (min(rec) - bare) / 3, "profiler_start_ms": starts,
           "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    (out / "calibrate.json").write_text(json.dumps(res, indent=1))
    print(res)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "one":
        print("RESULT " + json.dumps(one(sys.argv[2], Path(sys.argv[3]))))
    elif cmd == "cold":
        print("RESULT " + json.dumps(cold(sys.argv[2], sys.argv[3], sys.argv[4], Path(sys.argv[5]))))
    elif cmd == "record":
        only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else None
        record(Path(sys.argv[2]), only)
    elif cmd == "calibrate":
        calibrate(Path(sys.argv[2]))
