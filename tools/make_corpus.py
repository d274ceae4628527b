"""Writes the hostile-input corpus (``tests/corpus/*``) and its ``manifest.json``.

Run from the repository root: ``python tools/make_corpus.py``. The output is
deterministic; the files are committed so that the tests never depend on this script's
behaviour, and the script stays so that anyone can see how each file was made.

Every case is derived from a real H200 recording in ``tests/data`` (the triton_kernels trace,
its header and event shapes) or is a small synthetic document in that recording's shape.
"""
from __future__ import annotations

import copy
import gzip
import io
import json
import random
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "corpus"     # where the corpus is written
DATA = ROOT / "tests" / "data"

REAL = json.loads(gzip.decompress((DATA / "triton_kernels.pt.trace.json.gz").read_bytes()))
H200 = REAL["deviceProperties"]
T0 = 5139512856781.983          # the real trace's profiler-span start, in us
XSS = "<script>window.__ks_pwned=1;alert('pwned')</script>"

CASES = []


def case(file, what, expect, loader="load", **extra):
    """Register a corpus case; ``expect`` is "report" or "error" (kernelscope.TraceError)."""
    def wrap(make):
        CASES.append(dict(file=file, loader=loader, what=what, expect=expect, make=make, **extra))
        return make
    return wrap


# -- small documents in the shape of the real recording ------------------------------------
def kernel(name="add_kernel", ts=2000.0, dur=40.0, corr=1, stream=7, grid=(16384, 1, 1),
           block=(128, 1, 1), regs=26, smem=0, ext=None, **args):
    a = {"queued": 0, "device": 0, "context": 1, "stream": stream, "correlation": corr,
         "registers per thread": regs, "shared memory": smem, "grid": list(grid), "block": list(block),
         "est. achieved occupancy %": 100}
    if ext is not None:
        a["External id"] = ext
    a.update(args)
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
            "ts": T0 + ts, "dur": dur, "args": a}


def launch(ts=1900.0, dur=8.0, corr=1, ext=None, name="cuLaunchKernel"):
    a = {"cbid": 307, "correlation": corr}
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": "cuda_driver", "name": name, "pid": 486, "tid": 486,
            "ts": T0 + ts, "dur": dur, "args": a}


def op(name="aten::add", ts=1800.0, dur=200.0, ext=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 486, "tid": 486, "ts": T0 + ts,
            "dur": dur, "args": {"External id": ext, "Sequence number": 1,
                                 "Input Dims": [[256], [256]], "Input type": ["float", "float"]}}


def span(dur=3000.0, ts=0.0):
    return {"ph": "X", "cat": "Trace", "ts": T0 + ts, "dur": dur, "pid": "Spans",
            "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}


def doc(events, **header):
    d = {"schemaVersion": 1, "deviceProperties": copy.deepcopy(H200), "cuda_runtime_version": 13000,
         "cuda_driver_version": 13000, "cupti_version": 130001, "baseTimeNanoseconds": 1790857026000000000,
         "traceEvents": events, "traceName": "corpus"}
    d.update(header)
    return d


def good_events(n=3):
    """n launches: a CPU op, its driver launch and the kernel, correlated as Kineto does."""
    evs = [span()]
    for i in range(n):
        t = 100.0 + 300.0 * i
        evs += [op(ts=t, ext=i + 1), launch(ts=t + 50, corr=100 + i, ext=i + 1),
                kernel(ts=t + 80, corr=100 + i, ext=i + 1)]
    return evs


def js(d) -> bytes:
    return json.dumps(d, allow_nan=True).encode()


REAL_BYTES = js(REAL)


# -- files, bytes and compression ----------------------------------------------------------
@case("empty.json", "0 bytes", "error", error_has="empty")
def _():
    return b""


@case("whitespace_only.json", "only spaces and newlines", "error", error_has="empty")
def _():
    return b"  \n\t \r\n  "


@case("truncated.json", "the real triton trace cut in the middle of an event", "error",
      error_has="truncated")
def _():
    return REAL_BYTES[: len(REAL_BYTES) // 2]


@case("truncated.json.gz", "the real trace gzipped and cut to half its compressed size", "error",
      error_has="gzip")
def _():
    gz = gzip.compress(REAL_BYTES, mtime=0)
    return gz[: len(gz) // 2]


@case("gzip_bad_crc.json.gz", "a complete gzip of the real trace whose CRC32 trailer is wrong",
      "error", error_has="gzip")
def _():
    gz = bytearray(gzip.compress(REAL_BYTES, mtime=0))
    gz[-8] ^= 0xFF
    return bytes(gz)


@case("gzip_isize_1gb.json.gz", "a valid deflate stream whose gzip trailer claims 1 GB "
      "uncompressed (ISIZE); we never trust it", "error", error_has="gzip")
def _():
    gz = bytearray(gzip.compress(REAL_BYTES, mtime=0))
    gz[-4:] = struct.pack("<I", 1 << 30)
    return bytes(gz)


@case("gzip_header_only.json.gz", "a 10-byte gzip header with no deflate data", "error",
      error_has="gzip")
def _():
    return gzip.compress(b"", mtime=0)[:10]


@case("gzip_bomb.json.gz", "64 MiB of spaces ahead of a small valid trace, gzipped to ~64 KB "
      "(ratio ~1000:1); loads under the default cap, refused under a 16 MiB cap", "report",
      kernels=3, bomb=True)
def _():
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(b" " * (1 << 20)) for _ in range(64)]
    out.append(z.compress(js(doc(good_events()))))
    out.append(z.flush())
    return b"".join(out)


@case("gzip_two_members.json.gz", "the real trace split across two concatenated gzip members "
      "(legal gzip; `cat a.gz b.gz`)", "report", kernels=4)
def _():
    h = len(REAL_BYTES) // 3
    return gzip.compress(REAL_BYTES[:h], mtime=0) + gzip.compress(REAL_BYTES[h:], mtime=0)


@case("gzip_trailing_garbage.json.gz", "a valid gzip of the real trace followed by 100 bytes "
      "of junk", "report", kernels=4)
def _():
    return gzip.compress(REAL_BYTES, mtime=0) + bytes(range(100))


@case("binary_garbage.json", "4 KB of pseudo-random bytes", "error", error_has="JSON")
def _():
    return random.Random(12).randbytes(4096)


@case("not_gzip_but_named_gz.json.gz", "plain JSON (the real trace) in a file named .gz",
      "report", kernels=4)
def _():
    return REAL_BYTES


@case("non_utf8.json", "kernel and op names holding invalid UTF-8 (latin-1 bytes, a lone "
      "continuation byte, a truncated sequence)", "report", kernels=3, note_has="UTF-8")
def _():
    evs = good_events()
    evs[3]["name"] = "caf\udce9_kernel"           # becomes byte 0xE9 below
    evs[6]["name"] = "lone_\udc80_byte"
    evs[1]["name"] = "aten::\udce2\udc82"
    return json.dumps(doc(evs), ensure_ascii=False).encode("utf-8", "surrogateescape")


@case("utf8_bom.json", "the real trace with a UTF-8 byte-order mark", "report", kernels=4)
def _():
    return b"\xef\xbb\xbf" + REAL_BYTES


@case("utf16le_bom.json", "the real trace re-encoded as UTF-16LE with its BOM", "report", kernels=4)
def _():
    return b"\xff\xfe" + REAL_BYTES.decode().encode("utf-16-le")


@case("utf16be_bom.json", "the real trace re-encoded as UTF-16BE with its BOM", "report", kernels=4)
def _():
    return b"\xfe\xff" + REAL_BYTES.decode().encode("utf-16-be")


@case("utf32_bom.json", "the real trace as UTF-32LE with its BOM", "report", kernels=4)
def _():
    return b"\xff\xfe\x00\x00" + REAL_BYTES.decode().encode("utf-32-le")


@case("nul_bytes.json", "a valid trace followed by 1 KB of NUL bytes", "error", error_has="JSON")
def _():
    return js(doc(good_events())) + b"\0" * 1024


# -- document shape ---------------------------------------------------------------------
@case("top_level_string.json", 'the JSON document "hello"', "error", error_has="not a torch.profiler trace")
def _():
    return b'"hello"'


@case("top_level_array_of_events.json", "Chrome's JSON Array Format: a bare list of the real "
      "trace's events (no header)", "report", kernels=4)
def _():
    return js(REAL["traceEvents"])


@case("top_level_array_of_numbers.json", "a JSON list of numbers", "error",
      error_has="not a torch.profiler trace")
def _():
    return b"[1, 2, 3]"


@case("no_trace_events.json", "a JSON object without traceEvents", "error", error_has="traceEvents")
def _():
    return js({"schemaVersion": 1, "deviceProperties": H200})


@case("trace_events_not_list.json", "traceEvents is an object", "error", error_has="traceEvents")
def _():
    return js({"traceEvents": {"0": kernel()}})


@case("zero_events.json", "the real header with traceEvents: []", "error", error_has="no events")
def _():
    return js(doc([]))


@case("only_metadata_events.json", "the real trace's 60 'M' metadata events and nothing else",
      "error", error_has="not a torch.profiler trace")
def _():
    return js(doc([e for e in REAL["traceEvents"] if e.get("ph") == "M"]))


@case("events_all_garbage.json", "traceEvents holds numbers, strings, nulls and lists", "error",
      error_has="no events (skipped 6 malformed")
def _():
    return js(doc([1, "two", None, [3], True, {"ph": 5}]))


@case("deeply_nested_args.json", "one cpu_op whose 'Input Dims' is nested 20000 lists deep",
      "error", error_has="nested")
def _():
    s = js(doc(good_events()))
    return s.replace(b'"Input Dims": [[256], [256]]', b'"Input Dims": ' + b"[" * 20000 + b"]" * 20000, 1)


@case("deeply_nested_unknown_key.json", "a header key we never read, nested 10000 objects deep",
      "error", error_has="nested")
def _():
    s = js(doc(good_events()))
    return s[:-1] + b', "x": ' + b'{"a":' * 10000 + b"1" + b"}" * 10000 + b"}"


@case("deeply_nested_toplevel.json", "[[[[...]]]] 50000 deep and nothing else", "error",
      error_has="nested")
def _():
    return b"[" * 50000 + b"]" * 50000


@case("duplicate_keys.json", "the object has traceEvents twice (garbage first, real second); "
      "JSON parsers keep the last", "report", kernels=3)
def _():
    s = js(doc(good_events()))
    return b'{"traceEvents": "garbage", ' + s[1:]


@case("huge_claims.json", "events claiming enormous sizes: grid 2^31-1 x 65535 x 65535, "
      "1 TB of shared memory, 2^40 registers, a 1 EB memcpy, 2^62 SMs in the header", "report",
      kernels=3)
def _():
    evs = good_events()
    evs[3]["args"].update({"grid": [2**31 - 1, 65535, 65535], "shared memory": 2**40,
                           "registers per thread": 2**40})
    evs[6]["args"].update({"block": [2**31, 2**31, 2**31]})
    evs.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
                "tid": 7, "ts": T0 + 2500, "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 999,
                                                               "bytes": 10**18, "memory bandwidth (GB/s)": 1e300}})
    d = doc(evs)
    d["deviceProperties"][0].update({"numSms": 2**62, "totalGlobalMem": 2**63 - 1})
    return js(d)


# -- wrong types in every field we read -------------------------------------------------
@case("strings_for_numbers.json", "ts, dur, correlation, grid, block, registers, shared memory, "
      "stream and device written as strings (\"123.5\")", "report", kernels=3)
def _():
    evs = good_events()
    for e in evs:
        e["ts"], e["dur"] = str(e["ts"]), str(e["dur"])
        for k, v in list(e["args"].items()):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                e["args"][k] = str(v)
            elif isinstance(v, list) and all(isinstance(x, int) for x in v):
                e["args"][k] = [str(x) for x in v]
    return js(doc(evs))


@case("non_numeric_strings.json", "ts 'soon', dur 'long', correlation 'abc', grid ['x'] on "
      "two of three kernels", "report", kernels=1, note_has="skipped")
def _():
    evs = good_events()
    evs[3].update(ts="soon", dur="long")
    evs[6]["args"].update(correlation="abc", grid=["x", "y", "z"])
    evs[6]["ts"] = "later"
    return js(doc(evs))


@case("negative_durations.json", "a kernel and a cpu_op with negative dur", "report", kernels=2,
      note_has="negative")
def _():
    evs = good_events()
    evs[3]["dur"] = -40.0
    evs[1]["dur"] = -1e9
    return js(doc(evs))


@case("nan_values.json", "NaN (Python's json literal) as ts, dur, bandwidth and occupancy",
      "report", kernels=2, note_has="NaN")
def _():
    evs = good_events()
    evs[3]["dur"] = float("nan")
    evs[6]["args"]["est. achieved occupancy %"] = float("nan")
    evs[1]["ts"] = float("nan")
    return js(doc(evs))


@case("infinity_values.json", "Infinity and -Infinity as ts and dur", "report", kernels=1)
def _():
    evs = good_events()
    evs[3]["dur"] = float("inf")
    evs[6]["ts"] = float("-inf")
    return js(doc(evs))


@case("number_out_of_range.json", "1e400 (beyond float64) as a kernel's ts", "report", kernels=2)
def _():
    s = js(doc(good_events()))
    t = str(T0 + 180.0).encode()   # the first kernel's ts
    return s.replace(b'"ts": ' + t, b'"ts": 1e400', 1)


@case("huge_integers.json", "integers beyond int64 and uint64 (10^30, 2^64) as correlation, "
      "External id, stream, device, registers, shared memory, grid and ts", "report", kernels=3)
def _():
    evs = good_events()
    a = evs[3]["args"]
    a.update({"correlation": 10**30, "External id": 2**64, "stream": 2**63, "device": -(2**70),
              "registers per thread": 10**25, "shared memory": 2**64 + 5, "grid": [10**40, 1, 1]})
    evs[4]["ts"] = 10**30
    evs[5]["args"]["correlation"] = 2**64
    return js(doc(evs))


@case("negative_and_zero_sizes.json", "grid and block of 0 and negative, registers -1, "
      "shared memory -4096", "report", kernels=3)
def _():
    evs = good_events()
    evs[3]["args"].update(grid=[0, 0, 0], block=[-128, 1, 1], **{"registers per thread": -1,
                                                                  "shared memory": -4096})
    evs[6]["args"].update(grid=[-1], block=[], **{"registers per thread": 0})
    return js(doc(evs))


@case("wrong_container_types.json", "args as a list, a string and a number; grid as an int, a "
      "string, a dict and a 7-element list; pid/tid as floats and objects", "report", kernels=3)
def _():
    evs = good_events()
    evs[3]["args"] = ["not", "an", "object"]
    evs[6]["args"]["grid"] = 5
    evs[6]["args"]["block"] = {"x": 1}
    evs[9]["args"]["grid"] = [1, 2, 3, 4, 5, 6, 7]
    evs[9]["args"]["block"] = "128"
    evs[2]["args"] = "nope"
    evs[5]["args"] = 3
    evs[4]["pid"], evs[4]["tid"] = 1.5, {"a": 1}
    return js(doc(evs))


@case("names_of_wrong_type.json", "names that are numbers, null, a list and an object; cat as a "
      "number", "report", kernels=1)
def _():
    evs = good_events()
    evs[3]["name"] = 12345
    evs[6]["name"] = None
    evs[9]["cat"] = 7
    evs[1]["name"] = ["aten::add"]
    evs[4]["name"] = {"n": 1}
    evs.append(kernel(name="named_ok", ts=2600.0, corr=555))
    return js(doc(evs))


@case("missing_fields.json", "kernels without ts, without dur, without name, without args, "
      "without ph (those without ts, dur or ph are dropped; a nameless one keeps an empty name)",
      "report", kernels=3, note_has="missing")
def _():
    evs = good_events()
    del evs[3]["ts"]
    del evs[6]["dur"]
    k = kernel(ts=2500.0, corr=900)
    del k["name"]
    k2 = kernel(ts=2600.0, corr=901)
    del k2["args"]
    k3 = kernel(ts=2700.0, corr=902)
    del k3["ph"]
    return js(doc(evs + [k, k2, k3]))


@case("bad_header.json", "deviceProperties fields of the wrong type (computeMajor 'nine', numSms "
      "0, warpSize -32, a string in place of a device), baseTimeNanoseconds a string, "
      "schemaVersion a list", "report", kernels=3)
def _():
    d = doc(good_events(), baseTimeNanoseconds="yesterday", schemaVersion=[1, 2], traceName=42,
            cuda_runtime_version="13.0", with_flops="yes")
    d["deviceProperties"][0].update(computeMajor="nine", numSms=0, warpSize=-32, regsPerMultiprocessor=None,
                                    sharedMemPerMultiprocessor=1.5, maxThreadsPerMultiprocessor=0)
    d["deviceProperties"].append("a string where a device should be")
    d["deviceProperties"].append({"id": "one", "name": ["x"]})
    return js(d)


@case("device_properties_not_list.json", "deviceProperties is an object", "report", kernels=3)
def _():
    return js(doc(good_events(), deviceProperties={"id": 0, "name": "NVIDIA H200"}))


@case("kernel_on_unknown_device.json", "kernels on device 7 when the header lists only device 0, "
      "and a kernel with no device at all", "report", kernels=3)
def _():
    evs = good_events()
    evs[3]["args"]["device"] = 7
    evs[6]["pid"] = 7
    evs[6]["args"]["device"] = 7
    del evs[9]["args"]["device"]
    evs[9]["pid"] = "GPU"
    return js(doc(evs))


# -- event relations ---------------------------------------------------------------------
@case("events_out_of_order.json", "the real trace's events shuffled", "report", kernels=4,
      same_as="real")
def _():
    d = copy.deepcopy(REAL)
    random.Random(7).shuffle(d["traceEvents"])
    return js(d)


@case("kernels_without_launch.json", "kernels whose correlation id has no runtime/driver call and "
      "no External id", "report", kernels=3)
def _():
    evs = [e for e in good_events() if e["cat"] != "cuda_driver"]
    return js(doc(evs))


@case("launches_without_kernel.json", "cuLaunchKernel calls whose kernels were not recorded", "report",
      kernels=0, note_has="no GPU kernels")
def _():
    evs = [e for e in good_events() if e["cat"] != "kernel"]
    return js(doc(evs))


@case("duplicate_correlation.json", "three kernels and three launches sharing one correlation "
      "id, and two ops sharing one External id", "report", kernels=3)
def _():
    evs = good_events()
    for e in evs:
        if e["cat"] in ("kernel", "cuda_driver"):
            e["args"]["correlation"] = 42
        if e["cat"] == "cpu_op":
            e["args"]["External id"] = 1
    return js(doc(evs))


@case("kernels_overlapping_same_stream.json", "kernels on one stream that overlap each other "
      "(impossible on real hardware) and one identical duplicate", "report", kernels=4)
def _():
    evs = good_events()
    evs[6]["ts"] = evs[3]["ts"] + 10
    evs.append(copy.deepcopy(evs[3]))
    return js(doc(evs))


@case("unknown_ph.json", "events with ph 'Z', 'ZZZ', '', a number and missing, plus ph 'B'/'E' "
      "pairs and instant events of kernel category", "report", kernels=3)
def _():
    evs = good_events()
    extra = []
    for ph in ("Z", "ZZZ", "", 5, None):
        k = kernel(ts=2700.0, corr=700)
        k["ph"] = ph
        extra.append(k)
    extra += [{"ph": "B", "cat": "kernel", "name": "b", "ts": T0 + 5, "pid": 0, "tid": 7},
              {"ph": "E", "cat": "kernel", "name": "b", "ts": T0 + 9, "pid": 0, "tid": 7},
              {"ph": "i", "cat": "kernel", "name": "i", "ts": T0 + 9, "pid": 0, "tid": 7, "s": "t"}]
    return js(doc(evs + extra))


@case("unknown_categories.json", "X events of categories we do not know (gpu_user_annotation, "
      "cuda_profiler_range, '', null)", "report", kernels=3)
def _():
    evs = good_events()
    for cat in ("gpu_user_annotation", "cuda_profiler_range", "", None, "KERNEL"):
        e = kernel(ts=2800.0, corr=800)
        e["cat"] = cat
        evs.append(e)
    return js(doc(evs))


@case("kernels_outside_span.json", "kernels long before and long after the profiler's own "
      "'Trace' span, and a span of negative length", "report", kernels=3)
def _():
    evs = good_events()
    evs[3]["ts"] = T0 - 5000
    evs[9]["ts"] = T0 + 90000
    evs.append(span(dur=-10.0, ts=50.0))
    return js(doc(evs))


@case("time_extremes.json", "timestamps of 0, 1e18 us and negative ts in one trace (a span of "
      "more than 30000 years)", "report", kernels=3)
def _():
    evs = good_events()
    evs[3]["ts"] = 0
    evs[6]["ts"] = 1e18
    evs[9]["ts"] = -1e6
    return js(doc(evs))


@case("cuda_graph_no_kernels.json", "cudaGraphLaunch calls and graph kernels whose correlation "
      "points at a runtime call of another kind", "report", kernels=3)
def _():
    evs = good_events()
    for e in evs:
        if e["cat"] == "cuda_driver":
            e["name"] = "cudaGraphLaunch"
    return js(doc(evs))


@case("sync_events_malformed.json", "cudaDeviceSynchronize calls with no args and cuda_sync GPU "
      "events with odd fields", "report", kernels=3)
def _():
    evs = good_events()
    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 486, "tid": 486,
                "ts": T0 + 2900, "dur": 3.0})
    evs.append({"ph": "X", "cat": "cuda_sync", "name": "Device Synchronize", "pid": 0, "tid": 7,
                "ts": T0 + 2901, "dur": 1.0, "args": {"cuda_sync_kind": 5, "stream": "seven"}})
    return js(doc(evs))


@case("python_frames_malformed.json", "python_function frames with names that are not "
      "'file(line): func', cyclic parent ids and zero length", "report", kernels=3)
def _():
    evs = good_events()
    for i, name in enumerate(["/tmp/ipykernel_1/1.py(4): <module>", "no parens here",
                              "/x.py(notanumber): f", "(1): ", "/u.py(2): g"]):
        evs.append({"ph": "X", "cat": "python_function", "name": name, "pid": 486, "tid": 486,
                    "ts": T0 + 90 + i, "dur": 0 if i == 3 else 1000 - i,
                    "args": {"Python id": i, "Python parent id": (i + 1) % 5}})
    return js(doc(evs))


# -- hostile text ------------------------------------------------------------------------
@case("script_kernel_names.json", "kernel, op and header names holding <script>, </textarea>, "
      "quotes, an <img onerror>, template braces, a NUL, a RTL override and a newline", "report",
      kernels=6, hostile=True)
def _():
    names = [XSS, "</textarea><script>window.__ks_pwned=2</script>",
             "\"'><img src=x onerror=\"window.__ks_pwned=3\">", "{{7*7}} ${alert(4)} `x` &amp; &lt;",
             "nul\u0000in\u202eside\nnewline", "</style></title></noscript><svg onload=window.__ks_pwned=5>"]
    evs = [span(dur=5000.0)]
    for i, n in enumerate(names):
        t = 100.0 + 300.0 * i
        evs += [op(name=n, ts=t, ext=i + 1), launch(ts=t + 50, corr=100 + i, ext=i + 1),
                kernel(name=n, ts=t + 80, corr=100 + i, ext=i + 1)]
    d = doc(evs, traceName=XSS)
    d["deviceProperties"][0]["name"] = "<b>NVIDIA</b> " + XSS
    return js(d)


@case("long_name_100kb.json", "a kernel name of 100 KB (templates and a <script> payload "
      "repeated)", "report", kernels=3, hostile=True)
def _():
    evs = good_events()
    evs[3]["name"] = ("void f<" + "cute::tuple<int, " * 5000 + XSS)[:100_000]
    evs[6]["name"] = "x" * 10_000
    return js(doc(evs))


@case("long_name_binary.json", "kernel names made of control characters and lone surrogates "
      "(as JSON escapes)", "report", kernels=3, hostile=True)
def _():
    s = js(doc(good_events()))
    return s.replace(b'"name": "add_kernel"', b'"name": "\\ud800\\u0001\\u001b[31m\\udfff"', 1)



# -- crashes found by the second hardening pass (issue 46, item 3) -----------------------
@case("time_minus_1e308.json", "a kernel whose ts is -1e308 (its offset in nanoseconds overflowed "
      "an integer); times beyond 1e20 us are dropped with a note", "report", kernels=2,
      note_has="out-of-range")
def _():
    evs = good_events()
    evs[3]["ts"] = -1e308
    return js(doc(evs))


@case("durations_1e308.json", "two kernels of one name whose dur is 1e308 (their sum overflows to "
      "infinity, the HTML's share bar got NaN)", "report", kernels=1, note_has="out-of-range")
def _():
    evs = good_events()
    evs[3]["dur"] = evs[6]["dur"] = 1e308
    return js(doc(evs))


@case("jax_pid_object.json", "a JAX perfetto trace (a GPU process, its stream, a kernel) whose "
      "events have pid {} and [1] (an unhashable pid)", "report", kernels=1)
def _():
    meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "pid": 1, "tid": 14, "name": "thread_name", "args": {"name": "Stream #14(Compute)"}},
            {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}}]
    evs = [{"ph": "X", "pid": 1, "tid": 14, "ts": 100.0, "dur": 5.0, "name": "fusion_5", "args": {}},
           {"ph": "X", "pid": {}, "tid": 14, "ts": 110.0, "dur": 5.0, "name": "fusion_6", "args": {}},
           {"ph": "X", "pid": [1], "tid": 1229, "ts": 90.0, "dur": 9.0, "name": "jit_f", "args": {}}]
    return js({"displayTimeUnit": "ns", "traceEvents": meta + evs})

# -- our own report files, damaged -------------------------------------------------------
def _report_dict():
    import kernelscope as ks
    return ks.load(DATA / "triton_kernels.pt.trace.json.gz").to_dict()


@case("report_truncated.ksreport.json", "a saved kernelscope report cut in half", "error",
      error_has="damaged")
def _():
    b = json.dumps(_report_dict(), separators=(",", ":")).encode()
    return b[: len(b) // 2]


@case("report_future_version.ksreport.json", "a saved report claiming format version 99", "error",
      error_has="version")
def _():
    d = _report_dict()
    d["version"] = 99
    return json.dumps(d, separators=(",", ":")).encode()


@case("report_ragged_tables.ksreport.json", "a saved report whose kernel columns have different "
      "lengths and whose start_us holds strings", "error", error_has="damaged")
def _():
    d = _report_dict()
    k = d["tables"]["kernels"]["data"]
    k["name"] = k["name"][:1]
    k["start_us"] = ["soon"] * len(k["start_us"])
    return json.dumps(d, separators=(",", ":")).encode()


@case("report_not_object.ksreport.json", "a list that contains the report marker in its first "
      "200 bytes", "error", error_has="report")
def _():
    return b'[{"format":"kernelscope.report"}, 1, 2]'


@case("report_wrong_tables.ksreport.json", "a report whose 'tables' is a string and meta a list",
      "error", error_has="damaged")
def _():
    return b'{"format":"kernelscope.report","version":1,"meta":[1],"tables":"none"}'


@case("report_hostile_meta.ksreport.json", "a report whose meta notes and source carry script "
      "payloads and whose kernel names are hostile", "report", kernels=4, hostile=True)
def _():
    d = _report_dict()
    d["meta"]["notes"] = [XSS, "</textarea>"]
    d["meta"]["source"] = XSS
    d["tables"]["kernels"]["data"]["name"] = [XSS] * len(d["tables"]["kernels"]["data"]["name"])
    return json.dumps(d, separators=(",", ":")).encode()


# -- Nsight Compute CSV exports (ks.load_ncu) ---------------------------------------------
NCU_REAL = (DATA / "ncu_triton_kernels.csv").read_bytes()


def _ncu_lines():
    return NCU_REAL.decode().splitlines(keepends=True)


def _ncu_small(n_kernels=2):
    """The real export's preamble and header plus every metric row of its first launches of
    Triton kernels (short names keep the files small)."""
    lines = _ncu_lines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = [ln for ln in lines[head + 1:] if '"add_kernel"' in ln or '"softmax_kernel"' in ln]
    ids = sorted({ln.split(",", 1)[0] for ln in rows}, key=lambda x: int(x.strip('"')))[:n_kernels]
    return lines[:head + 1], [ln for ln in rows if ln.split(",", 1)[0] in ids]


@case("ncu_warning_lines.csv", "the real export with ==WARNING==/==PROF==/==ERROR== lines "
      "before, between and after the rows", "report", loader="load_ncu", min_kernels=1)
def _():
    pre, rows = _ncu_small()
    mid = len(rows) // 2
    out = pre + rows[:mid] + ["==WARNING== Found outstanding GPU clock reset, trying to revert...\n",
                              "==PROF== Profiling \"add_kernel\" - 3: 0%....50%....100% - 9 passes\n"]
    out += rows[mid:] + ["==ERROR== An error was reported by the driver\n", "==PROF== Disconnected\n"]
    return "".join(out).encode()


@case("ncu_missing_value_column.csv", "the real export without its 'Metric Value' column",
      "error", loader="load_ncu", error_has="Metric Value")
def _():
    import csv
    pre, rows = _ncu_small()
    table = list(csv.reader(io.StringIO("".join([pre[-1]] + rows))))
    j = table[0].index("Metric Value")
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in table:
        w.writerow(r[:j] + r[j + 1:])
    return ("".join(pre[:-1]) + buf.getvalue()).encode()


@case("ncu_missing_name_column.csv", "the real export without 'Kernel Name'", "error",
      loader="load_ncu", error_has="Kernel Name")
def _():
    pre, rows = _ncu_small()
    return "".join(pre[:-1] + [pre[-1].replace('"Kernel Name"', '"Kernel Nom"')] + rows).encode()


@case("ncu_localized_numbers.csv", "metric values in three locales: '1,234.5' (en), '1.234,5' "
      "(de) and '1 234,5' (fr); the en form is what ncu writes", "report", loader="load_ncu",
      min_kernels=1)
def _():
    pre, rows = _ncu_small()
    import csv
    table = list(csv.reader(io.StringIO("".join([pre[-1]] + rows))))
    j = table[0].index("Metric Value")
    forms = ["1,234.5", "1.234,5", "1\u202f234,5", "12,34,567.8", "n/a", ""]
    for i, r in enumerate(table[1:]):
        r[j] = forms[i % len(forms)]
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(table)
    return ("".join(pre[:-1]) + buf.getvalue()).encode()


@case("ncu_empty.csv", "an empty ncu export", "error", loader="load_ncu", error_has="")
def _():
    return b""


@case("ncu_only_warnings.csv", "ncu's output when it profiled nothing: only ==PROF==/==WARNING== "
      "lines", "error", loader="load_ncu", error_has="")
def _():
    return (b"==PROF== Connected to process 644 (/usr/bin/python3.12)\n"
            b"==WARNING== No kernels were profiled.\n==PROF== Disconnected from process 644\n")


@case("ncu_header_only.csv", "the header row and no metric rows", "error", loader="load_ncu",
      error_has="")
def _():
    pre, _ = _ncu_small()
    return "".join(pre).encode()


@case("ncu_truncated.csv", "the real export cut in the middle of a quoted field", "report",
      loader="load_ncu", min_kernels=1, or_error=True)
def _():
    pre, rows = _ncu_small()
    s = "".join(pre + rows)
    return s[: len(s) - len(rows[-1]) // 2].encode()


@case("ncu_script_names.csv", "the real export with kernel names replaced by script payloads",
      "report", loader="load_ncu", min_kernels=1, hostile=True)
def _():
    pre, rows = _ncu_small()
    import csv
    table = list(csv.reader(io.StringIO("".join([pre[-1]] + rows))))
    j = table[0].index("Kernel Name")
    for r in table[1:]:
        r[j] = XSS + " </textarea>\"'" + r[j]
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(table)
    return ("".join(pre[:-1]) + buf.getvalue()).encode()


@case("ncu_non_utf8.csv", "the real export with latin-1 bytes in a kernel name", "report",
      loader="load_ncu", min_kernels=1, or_error=True)
def _():
    pre, rows = _ncu_small()
    return "".join(pre + rows).encode().replace(b"add_kernel", b"add_k\xe9rnel\xff")


@case("ncu_bom.csv", "the real export with a UTF-8 BOM", "report", loader="load_ncu", min_kernels=1)
def _():
    pre, rows = _ncu_small()
    return b"\xef\xbb\xbf" + "".join(pre + rows).encode()


@case("ncu_wrong_types.csv", "metric values 'nan', 'inf', '-5', 'abc', '1e999' and a Block Size "
      "of '(x, y, z)'", "report", loader="load_ncu", min_kernels=1)
def _():
    pre, rows = _ncu_small()
    import csv
    table = list(csv.reader(io.StringIO("".join([pre[-1]] + rows))))
    j = table[0].index("Metric Value")
    b = table[0].index("Block Size")
    forms = ["nan", "inf", "-5", "abc", "1e999"]
    for i, r in enumerate(table[1:]):
        r[j] = forms[i % len(forms)]
    table[1][b] = "(x, y, z)"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(table)
    return ("".join(pre[:-1]) + buf.getvalue()).encode()


@case("ncu_binary.csv", "4 KB of pseudo-random bytes", "error", loader="load_ncu", error_has="")
def _():
    return random.Random(13).randbytes(4096)


@case("ncu_kineto_json.csv", "a Kineto JSON trace handed to load_ncu", "error", loader="load_ncu",
      error_has="")
def _():
    return REAL_BYTES


@case("ncu_ragged_rows.csv", "rows with fewer and more fields than the header", "report",
      loader="load_ncu", min_kernels=1, or_error=True)
def _():
    pre, rows = _ncu_small()
    rows = list(rows)
    rows[3] = rows[3].rsplit(",", 5)[0] + "\n"
    rows[7] = rows[7].rstrip("\n") + ',"extra","fields"\n'
    return "".join(pre + rows).encode()


README_HEAD = """# Hostile and broken input corpus

Each file below is fed by `tests/test_corpus.py` to `ks.load` or `ks.load_ncu` and, when it loads,
to every report view (`repr`, `_repr_html_`, `summary()`, `findings`, `backends`, the timeline,
the widget's view model, save and reload). Every case must end in a Report (possibly partial,
with `report.notes` saying what was skipped) or in `kernelscope.TraceError` naming the file;
never another exception, a hang or a crash. `manifest.json` is the machine-readable form of this
table (the test reads it); `tools/make_corpus.py` writes both and every file, from the real H200
recordings in `tests/data/`.

Decisions worth knowing:
- gzip: members are decompressed with a hard cap on output (`KERNELSCOPE_MAX_TRACE_BYTES`,
  default a quarter of physical memory, at least 256 MiB); the ISIZE field is never trusted;
  zlib checks CRC and length. The bomb below loads under the default cap and is refused, with
  bounded memory, under a 16 MiB cap (the test sets it).
- Nesting deeper than the decoders' recursion guard (about a thousand levels) is a TraceError;
  the stack never overflows.
- NaN/Infinity literals, invalid UTF-8, lone surrogates and numbers beyond float64 are read by a
  lenient fallback (Python's `json`) with a note; well-formed traces never take that path.

| file | loader | what it is | expected |
|---|---|---|---|
"""


def _readme(manifest):
    rows = []
    for m in manifest:
        if m["expect"] == "error":
            exp = f"TraceError ({m['error_has']!r})" if m.get("error_has") else "TraceError"
        else:
            exp = "Report" + (" or TraceError" if m.get("or_error") else "")
            if "kernels" in m:
                exp += f", {m['kernels']} kernels"
            if m.get("note_has"):
                exp += f", note mentions {m['note_has']!r}"
        what = m["what"].replace("|", "\\|")
        rows.append(f"| `{m['file']}` | {m['loader']} | {what} | {exp} |")
    return README_HEAD + "\n".join(rows) + f"\n\n{len(manifest)} cases.\n"


def main():
    manifest = []
    for c in CASES:
        data = c["make"]()
        (HERE / c["file"]).write_bytes(data)
        m = {k: v for k, v in c.items() if k != "make"}
        m["bytes"] = len(data)
        manifest.append(m)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=True) + "\n")
    (HERE / "README.md").write_text(_readme(manifest))
    print(f"wrote {len(manifest)} cases to {HERE}")


if __name__ == "__main__":
    main()
