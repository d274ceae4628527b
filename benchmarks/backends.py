"""Backend attribution on 100k launches: classify each distinct context once and map (what
``annotate_backends`` does) against classifying every launch, in one run.

    python benchmarks/backends.py                  # 100k launches tiled from the real MLP step
    python benchmarks/backends.py --launches 1000000

The kernels table comes from a real H200 recording (tests/data/mlp_train.pt.trace.json.gz),
repeated to the requested size. Prints both timings and their ratio.
"""
from __future__ import annotations

import argparse
import pathlib
import time

import pandas as pd

import kernelscope as ks
from kernelscope.analysis import backends as b
from kernelscope.analysis.names import short_name

ROOT = pathlib.Path(__file__).resolve().parent.parent


def per_launch(k: pd.DataFrame) -> pd.DataFrame:
    """The alternative: run the rules and the name folding for every row, no memo."""
    out = k.copy()
    rows = zip(out["name"], out["op"], out["launch_api"], out["kernel_backend"], out["device_type"])
    res = [(b._classify.__wrapped__(b._text(n), b._text(o), b._text(a), b._text(kb).lower(), b._text(d)),
            short_name.__wrapped__(n)) for n, o, a, kb, d in rows]
    out["backend"] = [r[0].backend for r in res]
    out["tensor_cores"] = pd.array([r[0].tensor_cores for r in res], dtype="boolean")
    out["backend_rule"] = [r[0].rule for r in res]
    out["short_name"] = [r[1] for r in res]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=100_000)
    args = ap.parse_args()
    k = ks.load(ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz").trace.kernels
    big = pd.concat([k] * (args.launches // len(k) + 1), ignore_index=True).iloc[:args.launches].copy()
    big["device_type"] = "CUDA"

    b._classify.cache_clear()
    short_name.cache_clear()
    t = time.perf_counter()
    ours = b.annotate_backends(big.copy())
    t_ours = time.perf_counter() - t

    t = time.perf_counter()
    naive = per_launch(big)
    t_naive = time.perf_counter() - t

    same = (ours["backend"].tolist() == naive["backend"].tolist()
            and ours["short_name"].tolist() == naive["short_name"].tolist())
    print(f"launches={len(big)} distinct={big['name'].nunique()} same_labels={same}")
    print(f"annotate_backends (once per distinct context): {t_ours * 1e3:8.1f} ms")
    print(f"classify every launch:                          {t_naive * 1e3:8.1f} ms")
    print(f"ratio: {t_naive / t_ours:.1f}x faster")


if __name__ == "__main__":
    main()
