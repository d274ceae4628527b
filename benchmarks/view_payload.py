"""The report view's payload for a report of a million launches: windowed (what kernelscope
sends) against every launch, in one run.

    python benchmarks/view_payload.py                      # 1,000,000 launches
    python benchmarks/view_payload.py --launches 300000 --out /tmp

The real H200 CUDA-graph recording (``tests/data/graphs.pt.trace.json.gz``: 2,000 kernels in
4,070 events, two events per launch) is tiled with ``tools/tile_trace.py`` to about
``--launches`` kernel launches (``--out``: where the tiled trace goes, default benchmarks/out/;
it is about 0.7 GB at a million launches). For each way: the launch, host-span and column rows
sent, the column buffer's bytes, the packed blob the widget sends, its base64 text in a saved
notebook's MIME bundle, and the time of ``view_model`` and ``pack``.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tiles import make_trace  # noqa: E402

SOURCE = HERE.parent / "tests" / "data" / "graphs.pt.trace.json.gz"
EVENTS_PER_COPY, LAUNCHES_PER_COPY = 4070, 2000


def measure(rep, view, label: str) -> None:
    t = time.perf_counter()
    header, buf = view.view_model(rep)
    t1 = time.perf_counter()
    packed = view.pack(header, buf)
    t2 = time.perf_counter()
    mime = view.mime_payload(rep, packed=packed)["data"]
    tables = header["tables"]
    print(f"{label:22s} {tables['kernels']['rows']:>10,} {tables['host']['rows']:>10,} "
          f"{len(buf) / 1e6:>10.1f} {len(packed) / 1e6:>10.2f} {len(mime) / 1e6:>10.2f} "
          f"{t1 - t:>8.2f} {t2 - t1:>6.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=1_000_000)
    ap.add_argument("--out", type=pathlib.Path, help="folder for the tiled trace (default benchmarks/out)")
    ap.add_argument("--tile-tool", help="path of tile_trace.py (default: $KERNELSCOPE_TILE_TRACE, else tools/tile_trace.py)")
    a = ap.parse_args(argv)
    events = math.ceil(a.launches / LAUNCHES_PER_COPY) * EVENTS_PER_COPY
    name = f"graphs_{a.launches}_launches.json"
    path = make_trace(SOURCE, events, name=name, tool=a.tile_tool, out=a.out)
    import kernelscope as ks
    from kernelscope.view import report as view
    t = time.perf_counter()
    rep = ks.load(path, progress=False)
    rep.findings, rep.backends
    print(f"trace: {path.name}, {path.stat().st_size / 2**20:.0f} MiB, {len(rep.kernels):,} launches, "
          f"loaded and analysed in {time.perf_counter() - t:.1f} s")
    print(f"{'payload':22s} {'launches':>10s} {'host spans':>10s} {'cols MB':>10s} {'packed MB':>10s} "
          f"{'base64 MB':>10s} {'view s':>8s} {'pack s':>6s}")
    measure(rep, view, f"windowed (<= {view.VIEW_LAUNCHES:,})")
    view.VIEW_LAUNCHES = view.VIEW_HOST_SPANS = 10**12
    measure(rep, view, "every launch")


if __name__ == "__main__":
    main()
