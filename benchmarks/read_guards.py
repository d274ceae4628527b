"""What the hostile-input guards of the Kineto reader cost on a well-formed trace, in one run.

    python benchmarks/read_guards.py                  # 1M events tiled from the MLP step
    python benchmarks/read_guards.py --events 200000

Side by side, best of ``--rounds``:
- gunzip: ``gzip.decompress`` (what the reader used before) vs the capped streaming
  ``kernelscope.trace.files.gunzip`` (output bounded by KERNELSCOPE_MAX_TRACE_BYTES).
- the other guards on the happy path: the BOM/UTF-16 check and the span widening, as a share
  of a whole ``read_kineto``.
"""
from __future__ import annotations

import argparse
import gzip
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from tiles import tile_tool  # noqa: E402  (where tile_trace.py is)


def best(fn, rounds):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    from kernelscope.trace.decode import to_utf8
    from kernelscope.trace.files import gunzip, max_trace_bytes
    from kernelscope.trace.kineto import read_kineto
    from kernelscope.trace.timebase import cover_span

    OUT.mkdir(exist_ok=True)
    path = OUT / f"mlp_train_{a.events}.json.gz"
    if not path.exists():
        tool = tile_tool()
        subprocess.run([sys.executable, str(tool), str(ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz"),
                        str(path), "--events", str(a.events)], check=True)
    data = path.read_bytes()
    limit = max_trace_bytes()
    t_old, raw_old = best(lambda: gzip.decompress(data), a.rounds)
    t_new, raw_new = best(lambda: gunzip(data, str(path), limit), a.rounds)
    assert raw_old == raw_new
    print(f"gunzip {len(data) / 1e6:.1f} MB -> {len(raw_new) / 1e6:.1f} MB: gzip.decompress {t_old:.3f} s, "
          f"capped gunzip {t_new:.3f} s, ratio {t_new / t_old:.2f}")
    t_read, trace = best(lambda: read_kineto(raw_new, name=str(path)), 1)
    t_bom, _ = best(lambda: to_utf8(raw_new, "x", []), a.rounds)
    t_span, _ = best(lambda: cover_span(trace), a.rounds)
    print(f"read_kineto {t_read:.2f} s ({len(trace.kernels)} kernels); BOM check {t_bom * 1e3:.2f} ms "
          f"({t_bom / t_read:.2%}), span widening {t_span * 1e3:.1f} ms ({t_span / t_read:.2%})")


if __name__ == "__main__":
    main()
