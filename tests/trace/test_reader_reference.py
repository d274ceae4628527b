"""The Kineto reader's tables against a reference computed the plain way, on every real trace.

The reference (:func:`reference`) reads the file with Python's json module and builds each table
row by row with dicts and loops, written out apart from the reader: which events go to which
table, their columns, the one clock, and the joins (kernel -> launching call by correlation id,
-> CPU op by External id, cpu_op before annotations; the Python line of each launch). Every
column of every table must be equal, value for value. The reader is also run with tiny stream
blocks, so that its chunk boundaries fall everywhere in these files.
"""
from __future__ import annotations

import gzip
import json
import math
import re

import pandas as pd
import pytest

from kernelscope.trace.model import GRAPH_LAUNCH_CALLS, SYNC_CALLS
from tests.conftest import DATA

TRACES = sorted(p for p in DATA.rglob("*.pt.trace.json.gz"))

# Which table each event category goes to ("Trace" is the profiler's own span).
TABLE_OF = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "copies",
            "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime", "driver": "runtime",
            "cpu_op": "ops", "user_annotation": "ops", "operator": "ops",
            "python_function": "frames", "cuda_sync": "gsyncs"}
_COPY = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")
_USER_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
_LIBRARY = ("site-packages", "dist-packages", "<frozen", "/lib/python3", "torch/", "<string>")


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _timed(e):
    ts, dur = _num(e.get("ts")), _num(e.get("dur"))
    return ts is not None and dur is not None and math.isfinite(ts) and math.isfinite(dur) and dur >= 0


def _user(name):
    m = _USER_FRAME.match(name)
    return bool(m) and not any(s in m.group("file") for s in _LIBRARY)


def _comm(a):
    if a.get("Collective name") is None:
        return None
    ranks = a.get("Process Group Ranks")
    return {"collective": a.get("Collective name"), "in_nelems": a.get("In msg nelems"),
            "out_nelems": a.get("Out msg nelems"), "group_size": a.get("Group size"), "dtype": a.get("dtype"),
            "pg_name": a.get("Process Group Name"), "pg_desc": a.get("Process Group Description"),
            "pg_ranks": ranks if isinstance(ranks, (str, list)) else None, "seq": a.get("Seq")}


def reference(path) -> dict:
    """Every table of the trace at ``path`` as {column: list}, and the clock, the plain way."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    rows = {t: [] for t in ("kernels", "copies", "runtime", "ops", "frames", "gsyncs")}
    span = None
    # The allocator's instant events (profile_memory): no duration, a table of their own.
    memory = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("cat") == "cpu_instant_event"
              and _num(e.get("ts")) is not None and math.isfinite(e["ts"])]
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or not _timed(e):
            continue
        if e.get("cat") == "Trace":
            span = span or (float(e["ts"]), float(e["dur"]))
        elif e.get("cat") in TABLE_OF:
            rows[TABLE_OF[e["cat"]]].append(e)
    starts = [float(e["ts"]) for t in [*rows.values(), memory] for e in t]
    origin = span[0] if span else (min(starts) if starts else 0.0)
    if starts and min(starts) < origin:
        origin = min(starts)

    def base(e):
        return {"name": e["name"], "start_us": float(e["ts"]) - origin, "duration_us": float(e["dur"])}

    def a(e):
        return e.get("args") or {}

    runtime = [dict(base(e), cat=e.get("cat"), pid=e.get("pid"), tid=e.get("tid"),
                    correlation=_int(a(e).get("correlation")), external_id=_int(a(e).get("External id")),
                    cbid=_int(a(e).get("cbid"))) for e in rows["runtime"]]
    ops = [dict(base(e), cat=e.get("cat"), pid=e.get("pid"), tid=e.get("tid"),
                external_id=_int(a(e).get("External id")), input_dims=a(e).get("Input Dims"),
                input_types=a(e).get("Input type"), flops=_num(a(e).get("flops")),
                sequence=_int(a(e).get("Sequence number")), kernel_backend=a(e).get("kernel_backend"),
                comm=_comm(a(e))) for e in rows["ops"]]
    frames = [dict(base(e), tid=e.get("tid"), python_id=_int(a(e).get("Python id")),
                   parent_id=_int(a(e).get("Python parent id"))) for e in rows["frames"]]
    launch = {}
    for i, r in enumerate(runtime):
        if r["correlation"] is not None:
            launch.setdefault(r["correlation"], i)
    op_of = {}
    for cat_first in (True, False):
        for i, o in enumerate(ops):
            if (o["cat"] == "cpu_op") == cat_first and o["external_id"] is not None:
                op_of.setdefault(o["external_id"], i)

    def joined(e, r):
        lr = launch.get(r["correlation"])
        call = runtime[lr] if lr is not None else {}
        oi = op_of.get(r["external_id"])
        r.update(launch_api=call.get("name"), launch_start_us=call.get("start_us"),
                 launch_duration_us=call.get("duration_us"), launch_tid=call.get("tid"),
                 op=ops[oi]["name"] if oi is not None else None, op_index=oi)
        return r

    def gpu(e):
        args = a(e)
        dev = args.get("device") if args.get("device") is not None else _int(e.get("pid"))
        stream = args.get("stream") if args.get("stream") is not None else _int(e.get("tid"))
        return dict(base(e), device_index=dev, stream=stream, correlation=_int(args.get("correlation")),
                    external_id=_int(args.get("External id")))

    kernels = []
    for e in rows["kernels"]:
        args, r = a(e), gpu(e)
        grid, block = args.get("grid"), args.get("block")
        for i, x in enumerate("xyz"):
            r[f"grid_{x}"] = grid[i] if grid is not None and len(grid) > i else None
            r[f"block_{x}"] = block[i] if block is not None and len(block) > i else None
        r.update(registers_per_thread=args.get("registers per thread"), shared_mem_bytes=args.get("shared memory"),
                 kineto_est_occupancy=_num(args.get("est. achieved occupancy %")), comm=_comm(args))
        joined(e, r)
        r["graph_launch"] = r["launch_api"] in GRAPH_LAUNCH_CALLS
        own = args.get("kernel_backend")
        r["kernel_backend"] = own if own not in (None, "") else (
            ops[r["op_index"]]["kernel_backend"] if r["op_index"] is not None else None)
        r["source"] = None
        if frames:
            inside = [f for f in frames if f["tid"] == r["launch_tid"] and r["launch_start_us"] is not None
                      and f["start_us"] <= r["launch_start_us"] <= f["start_us"] + f["duration_us"]
                      and _user(f["name"])]
            if inside:
                r["source"] = max(inside, key=lambda f: (f["start_us"], -(f["start_us"] + f["duration_us"])))["name"]
        kernels.append(r)
    copies = []
    for e in rows["copies"]:
        args, r = a(e), gpu(e)
        m = _COPY.match(e["name"])
        kind, src, dst = m.groups() if m else (None, None, None)
        r.update(kind="memset" if e.get("cat") == "gpu_memset" else "memcpy", copy_kind=kind, src_memory=src,
                 dst_memory=dst, bytes=_int(args.get("bytes")), bandwidth_gbps=_num(args.get("memory bandwidth (GB/s)")))
        copies.append(joined(e, r))
    syncs = [dict(name=r["name"], kind=SYNC_CALLS[r["name"]], tid=r["tid"], start_us=r["start_us"],
                  duration_us=r["duration_us"], correlation=r["correlation"], external_id=r["external_id"],
                  stream=None, device_index=None) for r in runtime if r["name"] in SYNC_CALLS]
    syncs += [dict(base(e), kind=a(e).get("cuda_sync_kind") or "gpu", tid=e.get("tid"),
                   correlation=_int(a(e).get("correlation")), external_id=_int(a(e).get("External id")),
                   stream=_int(a(e).get("stream")), device_index=_int(a(e).get("device"))) for e in rows["gsyncs"]]
    for s in syncs:
        oi = op_of.get(s["external_id"])
        s["op"] = ops[oi]["name"] if oi is not None else None
    end = max([r["start_us"] + r["duration_us"] for t in (kernels, copies, runtime, ops) for r in t] or [0.0])
    span_us = None if span is None else max(span[0] + span[1] - origin, end)
    base_ns = doc.get("baseTimeNanoseconds") or 0
    memory = [dict(name=e["name"], tid=e.get("tid"), start_us=float(e["ts"]) - origin, duration_us=0.0,
                   device_type=_int(a(e).get("Device Type")), device_index=_int(a(e).get("Device Id")),
                   bytes=_int(a(e).get("Bytes")), address=_int(a(e).get("Addr")),
                   total_allocated=_int(a(e).get("Total Allocated")), total_reserved=_int(a(e).get("Total Reserved")))
              for e in memory]
    return {"tables": {"kernels": kernels, "copies": copies, "runtime": runtime, "ops": ops, "frames": frames,
                       "syncs": syncs, "memory": memory},
            "time_origin_ns": int(base_ns + round(origin * 1000)), "span_us": span_us}


def _plain(v):
    """One cell as a plain Python value (missing of any kind: None)."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        return v.item()
    return v


def check(trace, ref):
    for name, rows in ref["tables"].items():
        table = getattr(trace, name)
        assert len(table) == len(rows), (name, len(table), len(rows))
        for col in (rows[0] if rows else {}):
            got = [_plain(v) for v in table[col].tolist()]
            want = [_plain(r[col]) for r in rows]
            bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w or type(g) is not type(w)]
            assert not bad, (name, col, bad[:3], [got[i] for i in bad[:3]], [want[i] for i in bad[:3]])
    assert trace.meta["time_origin_ns"] == ref["time_origin_ns"]
    assert trace.meta["span_us"] == ref["span_us"]


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_tables_match_the_reference(path):
    from kernelscope.trace.kineto import read_kineto
    check(read_kineto(path), reference(path))


def _streamed_only(monkeypatch):
    """Fail if the reader falls back to reading the file whole (the careful path)."""
    from kernelscope.trace import kineto

    def whole(*a, **kw):
        raise AssertionError("the reader read the file whole instead of streaming it")
    monkeypatch.setattr(kineto, "read_text", whole)


@pytest.mark.parametrize("path", [DATA / "mlp_train.pt.trace.json.gz", DATA / "wild" / "llama_train.pt.trace.json.gz",
                                  DATA / "ranks" / "rank1.pt.trace.json.gz"], ids=lambda p: p.name)
def test_tables_match_with_chunk_boundaries_everywhere(path, monkeypatch):
    """Tiny blocks: every few events a chunk ends, and a block ends inside events and strings."""
    from kernelscope.trace import stream
    from kernelscope.trace.kineto import read_kineto
    ref = reference(path)
    _streamed_only(monkeypatch)
    for block in (997, 4096, 65521):
        monkeypatch.setattr(stream, "BLOCK_BYTES", block)
        check(read_kineto(path), ref)


def test_cuts_inside_names_are_not_taken(tmp_path, monkeypatch):
    """Kernel and op names holding the very text a cut looks for (``}, {``, ``"traceEvents": [``,
    ``]``): the chunks still end between events, and the tables are the reference's."""
    from kernelscope.trace import stream
    from kernelscope.trace.kineto import read_kineto
    doc = json.loads(gzip.decompress((DATA / "mlp_train.pt.trace.json.gz").read_bytes()))
    for i, e in enumerate(doc["traceEvents"]):
        if e.get("cat") in ("kernel", "cpu_op") and i % 3 == 0:
            e["name"] += ' }, {"ph": "X", "cat": "kernel", "traceEvents": [ ]} , {'
    doc["traceName"] = '"traceEvents": [}, {]'
    path = tmp_path / "names.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc, indent=1).encode()))
    ref = reference(path)
    _streamed_only(monkeypatch)
    for block in (311, 2048, 1 << 20):
        monkeypatch.setattr(stream, "BLOCK_BYTES", block)
        t = read_kineto(path)
        check(t, ref)
        assert t.meta["trace_name"] == doc["traceName"]
