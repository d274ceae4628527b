#!/usr/bin/env python3
"""Make a large Kineto trace by tiling a real one, for load and render benchmarks.

    tile_trace.py SOURCE.json[.gz] OUT.json[.gz] --events 1000000

Each copy of the source's events is shifted in time past the previous copy, and its
correlation / External id / flow ids are offset so that links stay unique. The header
(deviceProperties, versions) is kept as is. Uses only the standard library.
"""
import argparse
import gzip
import json
import sys
from pathlib import Path


def _open(path, mode):
    return gzip.open(path, mode + "t") if path.endswith(".gz") else Path(path).open(mode)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=1_000_000, help="about how many trace events to write")
    a = ap.parse_args()
    with _open(a.source, "r") as f:
        trace = json.load(f)
    src = [e for e in trace["traceEvents"] if e.get("ph") != "M"]
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    ts = [e["ts"] for e in src if "ts" in e]
    span = (max(e.get("ts", 0) + e.get("dur", 0) for e in src) - min(ts)) + 10.0
    ids = [e.get("args", {}).get("correlation", 0) for e in src] + [e.get("id", 0) for e in src if isinstance(e.get("id"), int)]
    id_step = max([i for i in ids if isinstance(i, int)] + [0]) + 1
    copies = max(1, a.events // max(1, len(src)))
    out = list(meta)
    for c in range(copies):
        for e in src:
            e2 = dict(e)
            if "ts" in e2:
                e2["ts"] = round(e2["ts"] + c * span, 3)
            if isinstance(e2.get("id"), int):
                e2["id"] = e2["id"] + c * id_step
            if "args" in e2:
                args = dict(e2["args"])
                for k in ("correlation", "External id"):
                    if isinstance(args.get(k), int):
                        args[k] = args[k] + c * id_step
                e2["args"] = args
            out.append(e2)
    trace["traceEvents"] = out
    with _open(a.out, "w") as f:
        json.dump(trace, f)
    print(f"wrote {len(out)} events ({copies} copies of {len(src)}) to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
