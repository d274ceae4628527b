"""How long showing a loaded report takes, and its memory, from a small report to millions of
events: the whole display bundle Jupyter asks for (``rep._repr_mimebundle_()``: the browser
payload, static HTML, text and the live widget) of the first window, the same display again, the
payload of another window (what the window chooser asks for), and (``--every``) of every launch,
in one run.

    python benchmarks/view_payload.py --out /tmp                         # kernel-dense, 1M and 5M events
    python benchmarks/view_payload.py --shape cpu_ops --events 1000000 --out /tmp
    python benchmarks/view_payload.py --shape kernel_dense --events 1000000 --every --out /tmp

Each size runs in its own process (so its peak memory is its own), with IPython imported first,
as a Jupyter kernel has it: ``ks.load`` and the analyses the view shows (summary, backends,
findings), then the whole display bundle of the first window, timed from the call (the widget
module's import, anywidget's, is inside: a notebook's first display pays it), then again, then the
payload alone (``view_model`` + ``pack`` + the MIME entry) of the window after it, and with
``--every`` of every launch (the budget lifted). The "small" row is the same real recording
untiled. Traces are the real H200 recordings of ``load_trace.SHAPES`` tiled with
``tools/tile_trace.py`` (see ``benchmarks/tiles.py``) into ``--out``, deleted after their run unless
``--keep``.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from load_trace import SHAPES, run_child  # noqa: E402
from tiles import make_trace  # noqa: E402


def _display(rep, window=None) -> dict:
    from kernelscope.view.bundle import mime_payload
    from kernelscope.view.codec import pack
    from kernelscope.view.report import view_model
    t, c = time.perf_counter(), time.process_time()
    header, buf = view_model(rep, window=window)
    t1 = time.perf_counter()
    packed = pack(header, buf)
    text = mime_payload(rep, packed=packed)["data"]
    t2 = time.perf_counter()
    w = header["window"] or {}
    # CPU seconds too: on a shared machine the wall time also holds other people's work.
    return {"s": t2 - t, "cpu_s": time.process_time() - c, "view_s": t1 - t, "pack_s": t2 - t1, "launches": header["tables"]["kernels"]["rows"],
            "host_spans": header["tables"]["host"]["rows"], "columns_mb": len(buf) / 1e6,
            "packed_mb": len(packed) / 1e6, "base64_mb": len(text) / 1e6, "until_us": w.get("until_us")}


def _bundle(rep) -> dict:
    """The whole display Jupyter asks for, timed (wall and CPU seconds), and what it held."""
    t, c = time.perf_counter(), time.process_time()
    bundle = rep._repr_mimebundle_()
    s, cpu = time.perf_counter() - t, time.process_time() - c
    return {"s": s, "cpu_s": cpu, "types": sorted(bundle)}


def _child(path: str, rounds: int, every: bool) -> dict:
    import IPython  # noqa: F401  (a Jupyter kernel has it loaded before any cell runs)

    import kernelscope as ks
    from kernelscope.view import report as view
    t = time.perf_counter()
    rep = ks.load(path, progress=False)
    rep.summary(), rep.backends, rep.findings
    loaded = time.perf_counter() - t
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bundle = _bundle(rep)
    # Again: what each later display of the same report costs (its panels kept).
    again_bundle = [_bundle(rep) for _ in range(rounds)]
    # The payload's part of it, and its size (computed again: its panels are kept).
    first = _display(rep)
    again = [_display(rep) for _ in range(rounds)]
    later = None
    if first["until_us"] is not None:
        later = _display(rep, (first["until_us"], None))
    out = {"events": None, "kernels": int(len(rep.kernels)), "ops": int(len(rep.ops)), "load_s": loaded,
           "bundle": bundle, "bundle_again_s": statistics.median(d["s"] for d in again_bundle),
           "bundle_again_cpu_s": statistics.median(d["cpu_s"] for d in again_bundle),
           "first": first, "again_s": statistics.median(d["s"] for d in again),
           "again_cpu_s": statistics.median(d["cpu_s"] for d in again), "later": later,
           "peak_before_mb": before}
    if every:
        view.VIEW_LAUNCHES = view.VIEW_HOST_SPANS = 10**12
        out["every"] = _display(rep)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="kernel_dense", choices=list(SHAPES))
    ap.add_argument("--events", type=int, nargs="*", default=[1_000_000, 5_000_000])
    ap.add_argument("--rounds", type=int, default=3, help="displays of the same report after the first (median)")
    ap.add_argument("--every", action="store_true", help="also every launch (the budget lifted)")
    ap.add_argument("--out", type=pathlib.Path, help="folder for the tiled traces (default benchmarks/out)")
    ap.add_argument("--keep", action="store_true", help="keep the tiled traces")
    ap.add_argument("--tile-tool", help="path of tile_trace.py (default: $KERNELSCOPE_TILE_TRACE, else tools/tile_trace.py)")
    ap.add_argument("--child", nargs=2, metavar=("PATH", "ROUNDS,EVERY"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        rounds, every = a.child[1].split(",")
        print(json.dumps(_child(a.child[0], int(rounds), every == "1")))
        return
    source = ROOT / "tests" / "data" / SHAPES[a.shape]
    print(f"{a.shape}: {SHAPES[a.shape]}; each size in its own process")
    print("display: Jupyter's whole bundle of the first window (wall s / CPU s; payload, HTML, text, widget); "
          "again: the same report shown again; payload: its view model + pack alone; later: the payload of "
          "the window after it (what the chooser fetches)")
    print(f"{'trace':>12s} {'MiB':>6s} {'kernels':>9s} {'ops':>9s} {'load+an s':>9s} {'display s':>11s} "
          f"{'again s':>11s} {'payload s':>11s} {'later s':>11s} {'launches':>9s} {'host':>8s} {'cols MB':>8s} "
          f"{'packed MB':>9s} {'peak MiB':>9s} {'x file':>6s}")
    for events in [0] + list(a.events):
        path = source if not events else make_trace(source, events, name=f"{a.shape}_{events}.json",
                                                    tool=a.tile_tool, out=a.out)
        size = path.stat().st_size / 2**20
        # run_child samples the process's RSS every 10 ms (load_trace.py); its peak is the one shown.
        got = run_child(__file__, str(path), f"{a.rounds},{int(a.every)}", 3600)
        if events and not a.keep:
            path.unlink(missing_ok=True)
        if "error" in got:
            print(f"{events or 'small':>12} error: {got['error']}")
            continue
        f, later, b = got["first"], got["later"], got["bundle"]
        print(f"{events or 'small':>12} {size:6.0f} {got['kernels']:9,} {got['ops']:9,} {got['load_s']:9.2f} "
              f"{b['s']:5.2f}/{b['cpu_s']:5.2f} {got['bundle_again_s']:5.2f}/{got['bundle_again_cpu_s']:5.2f} "
              f"{f['s']:5.2f}/{f['cpu_s']:5.2f} "
              f"{later['s'] if later else float('nan'):5.2f}/{later['cpu_s'] if later else float('nan'):5.2f} {f['launches']:9,} "
              f"{f['host_spans']:8,} {f['columns_mb']:8.1f} {f['packed_mb']:9.2f} {got['tree_peak_mb']:9.0f} "
              f"{got['tree_peak_mb'] / size:6.2f}", flush=True)
        if "every" in got:
            e = got["every"]
            print(f"{'every launch':>12} {'':6s} {'':9s} {'':9s} {'':9s} {'':11s} {'':11s} {e['s']:5.2f}/{e['cpu_s']:5.2f} "
                  f"{'':11s} {e['launches']:9,} "
                  f"{e['host_spans']:8,} {e['columns_mb']:8.1f} {e['packed_mb']:9.2f}", flush=True)


if __name__ == "__main__":
    main()
