"""Record a report with live hardware counters and live warp stalls (run on the device machine).

    python tests/gpu_tools/record_live_counters.py OUT

Runs tutorial 07's step (tests/gpu_tools/live_counters_workload.py) in a real IPython shell
under ``%%kernelprofile --metrics --stalls`` and saves the report (samples and stalls in it) as
OUT/live_counters.ksreport.json.gz, for the CPU tests (tests/capture/test_live_recording.py; copy it to
tests/data/counters/). Tutorial 07 runs the same step and saves its own recording when executed
with KERNELSCOPE_REFRESH_RECORDINGS=1. Prints what the report holds: the per-kernel table to set
beside ncu's (``ncu ... python tests/gpu_tools/live_counters_workload.py``), notes and findings.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from live_counters_workload import SETUP, STEP  # noqa: E402


def main(out):
    from IPython.core.interactiveshell import InteractiveShell
    os.makedirs(out, exist_ok=True)
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    r = sh.run_cell(SETUP, store_history=True)   # as a notebook cell: --stalls replays it
    assert r.success, r.error_in_exec
    sh.run_cell(STEP, store_history=True)   # warm-up: cuBLAS heuristics, allocator
    path = os.path.join(out, "live_counters.ksreport.json.gz")
    t = time.perf_counter()
    r = sh.run_cell(f"%%kernelprofile --metrics --stalls --no-display -o rep --save {path}\n" + STEP,
                    store_history=True)
    assert r.success, r.error_in_exec
    took = time.perf_counter() - t
    rep = sh.user_ns["rep"]
    cols = ["short_name", "duration_us", "sm_active_pct", "tensor_pct", "dram_pct", "dram_gbps",
            "counter_samples", "top_stall"]
    print(rep.kernels[[c for c in cols if c in rep.kernels.columns]].to_string())
    c = rep.copies
    print(c[[x for x in ("name", "duration_us", "bytes", "sm_active_pct", "dram_pct", "dram_gbps") if x in c.columns]].to_string())
    print("samples", len(rep.metrics), "stall rows", len(rep.stalls), "cell took", round(took, 2), "s")
    print("counters meta", json.dumps({k: v for k, v in rep.meta.get("counters", {}).items() if k != "calibration"}))
    print("stalls meta", json.dumps(rep.meta.get("stalls", {})))
    print("notes", json.dumps(rep.notes, indent=1))
    print("findings", json.dumps([(f.kind, f.severity, f.title) for f in rep.findings], indent=1))
    print("saved", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main(sys.argv[1])
