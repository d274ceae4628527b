"""Does pyarrow help kernelscope? (It was a declared dependency that nothing imported; issue 15.)

    python benchmarks/pyarrow_effect.py [--events 200000] [--rounds 3]

pandas uses pyarrow for its string columns when it is installed; kernelscope never imports it.
This loads a real H200 trace tiled to ``--events`` events, computes the summary, backends and
findings, and packs the browser's view model, in child processes with pyarrow importable and with
it hidden (``sys.modules["pyarrow"] = None``, as if not installed), alternating, and prints the
median of each step.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parent / "tests" / "data" / "mlp_train.pt.trace.json.gz"

CHILD = r"""
import json, sys, time
if sys.argv[1] == "hidden":
    sys.modules["pyarrow"] = None
t = time.perf_counter()
import kernelscope as ks
from kernelscope.view.report import pack, view_model
t0 = time.perf_counter(); rep = ks.load(sys.argv[2]); t1 = time.perf_counter()
rep.summary(); rep.backends; rep.findings; t2 = time.perf_counter()
pack(*view_model(rep)); t3 = time.perf_counter()
print(json.dumps({"import": t0 - t, "load": t1 - t0, "analysis": t2 - t1, "view": t3 - t2, "total": t3 - t,
                  "pyarrow": "pyarrow" in sys.modules and sys.modules["pyarrow"] is not None}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from load_trace import make_trace
    path = make_trace(SOURCE, a.events)
    runs = {"installed": [], "hidden": []}
    for _ in range(a.rounds):
        for mode in runs:
            out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{a.events:,} events, median of {a.rounds} (seconds)")
    print(f"{'step':<10}{'pyarrow installed':>20}{'pyarrow hidden':>16}{'ratio':>8}")
    for step in ("import", "load", "analysis", "view", "total"):
        w = statistics.median(r[step] for r in runs["installed"])
        wo = statistics.median(r[step] for r in runs["hidden"])
        print(f"{step:<10}{w:>20.2f}{wo:>16.2f}{w / wo:>8.2f}")
    print("pyarrow imported (installed / hidden):", runs["installed"][0]["pyarrow"], "/", runs["hidden"][0]["pyarrow"])


if __name__ == "__main__":
    main()
