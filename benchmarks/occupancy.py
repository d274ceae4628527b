"""Occupancy annotation on 100k launches: once per distinct launch shape (what
``annotate_occupancy`` does) against calling the calculator for every launch, in one run.

    python benchmarks/occupancy.py                  # 100k launches tiled from the real MLP step
    python benchmarks/occupancy.py --launches 1000000

The kernels table comes from a real H200 recording (tests/data/mlp_train.pt.trace.json.gz),
repeated to the requested size. Prints both timings, their ratio, and checks they agree.
"""
from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
import pandas as pd

import kernelscope as ks
from kernelscope.analysis.occupancy import occupancy
from kernelscope.analysis.shapes import annotate_occupancy

ROOT = pathlib.Path(__file__).resolve().parent.parent


def per_launch(k: pd.DataFrame, devices: pd.DataFrame) -> np.ndarray:
    """The alternative: the calculator for every row."""
    dev = devices.set_index("index").to_dict("index")
    out = np.empty(len(k))
    rows = zip(k["device_index"], k["block_x"], k["block_y"], k["block_z"], k["registers_per_thread"],
               k["shared_mem_bytes"])
    for i, (d, bx, by, bz, r, s) in enumerate(rows):
        p = dev[int(d)]
        out[i] = occupancy((int(p["compute_major"]), int(p["compute_minor"])), (int(bx), int(by), int(bz)),
                           int(r), int(s), device=p).occupancy
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=100_000)
    args = ap.parse_args()
    rep = ks.load(ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz")
    base = rep.trace.kernels
    k = pd.concat([base] * (args.launches // len(base) + 1), ignore_index=True).iloc[: args.launches]
    t0 = time.perf_counter()
    ours = annotate_occupancy(k.copy(), rep.devices)["theoretical_occupancy"].to_numpy()
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    each = per_launch(k, rep.devices)
    t_each = time.perf_counter() - t0
    assert (ours == each).all()
    print(f"{len(k)} launches: annotate_occupancy {t_ours:.3f} s, per-launch calculator {t_each:.3f} s, "
          f"ratio {t_each / t_ours:.1f}x")


if __name__ == "__main__":
    main()
