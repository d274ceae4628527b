"""Decompression bombs and huge strings: refused with a TraceError naming the file, at a peak of
memory that does not grow with what the file inflates to (issue 31, item 5).

Each bomb is a gzip of a few hundred KiB made here, inflating to :data:`INFLATED`; it is loaded
in a child process, which first loads a small real trace (so that pandas and the readers are
imported and warm), then resets its peak-RSS mark (``/proc/self/clear_refs``), and reports how
far its peak rose above its RSS before the bomb's load: the memory the load itself took.

Measured on the 2-core CPU machine (2026-12-01), each bomb inflating to 300 MiB from 298 KiB:
how much the load took above the child's RSS before it (``python -m tests.trace.test_bombs 300``
from the repository root; "before" is the branch's base, main at dab28b8, run by the same script):

    bomb                        before                        after
    escaped_quotes              1545 MiB, loaded               33 MiB, TraceError ("name" string)
    garbage                      613 MiB, TraceError           25 MiB, TraceError (the same words)
    header_string                613 MiB, loaded               25 MiB, TraceError ("traceName" string)
    kernel_name                 3045 MiB, loaded after 73 s    33 MiB, TraceError ("name" string)
    object_garbage               645 MiB, TraceError           33 MiB, TraceError (the same words)
    whitespace                   600 MiB, TraceError 'empty'   41 MiB, TraceError 'empty'
    whitespace_between_events    600 MiB, loaded               33 MiB, TraceError (whitespace)

and numbers (an events array of 100 MiB of ``1, ``): 2382 MiB and 32 s, loaded, before; 34 MiB
and 0.7 s, a TraceError, after; and 400 MiB of whitespace ahead of a valid trace: 800 MiB before, under 48 MiB after (it loads).
Normal loads are as fast as before (benchmarks/load_trace.py; the watch on the streaming
reader's blocks costs two searches a block: nothing measurable next to gunzip's 0.5 s per
295 MiB).
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.trace.guard import MAX_STRING

DATA = Path(__file__).resolve().parents[1] / "data"
MIB = 1 << 20
INFLATED = 400 * MIB

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux's /proc")

_RUNTIME = b'{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.5, "dur": 0.2, "args": {"correlation": 1}}'
_KERNEL = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0, "args": {"correlation": 1, "stream": 7, "device": 0}}'

BOMBS = {
    # name: the parts of the inflated text ((byte, count) for a run of one byte), what is said
    "whitespace": ([(b" ", INFLATED)], "the file is empty"),
    "garbage": ([(b"x", INFLATED)], "not valid JSON"),
    "object_garbage": ([b'{"traceEvents": [', _RUNTIME, b", ", (b"x", INFLATED)], "not valid JSON"),
    "kernel_name": ([b'{"traceEvents": [', _RUNTIME, b', {"ph": "X", "cat": "kernel", "name": "', (b"a", INFLATED),
                     b'", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}]}'], '"name" string at byte'),
    "escaped_quotes": ([b'{"traceEvents": [', _RUNTIME, b', {"ph": "X", "cat": "kernel", "name": "', (b'\\"', INFLATED),
                        b'", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}]}'], '"name" string at byte'),
    "header_string": ([b'{"traceName": "', (b"a", INFLATED), b'", "traceEvents": [', _RUNTIME, b"]}"],
                      '"traceName" string at byte'),
    "numbers": ([b'{"traceEvents": [', _RUNTIME, b", ", (b"1, ", INFLATED), b"1]}"], "of numbers from byte"),
    "whitespace_between_events": ([b'{"traceEvents": [', _RUNTIME, b",", (b" ", INFLATED), _KERNEL, b"]}"],
                                  "of whitespace from byte"),
}


def gzip_parts(path: Path, parts) -> Path:
    c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(path, "wb") as f:
        for p in parts:
            if isinstance(p, tuple):
                byte, n = p
                block = byte * (MIB // len(byte))
                for _ in range(n // len(block)):
                    f.write(c.compress(block))
            else:
                f.write(c.compress(p))
        f.write(c.flush())
    return path


_CHILD = r"""
import json, sys
import kernelscope as ks
ks.load(sys.argv[2], progress=False)          # imports and warms everything a load uses

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                                # the peak-RSS mark starts again from here
before = status("VmRSS")
try:
    ks.load(sys.argv[1], progress=False)
    said = None
except ks.TraceError as e:
    said = str(e)
print(json.dumps({"grew": status("VmHWM") - before, "said": said}))
"""


def load_in_child(path: Path) -> dict:
    env = {**os.environ, "KERNELSCOPE_READ_WORKERS": "0", "KERNELSCOPE_PROGRESS": "off"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(DATA / "triton_kernels.pt.trace.json.gz")],
                         capture_output=True, text=True, timeout=300, env=env,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# The bound: the streaming reader refuses a stretch over MAX_STRING (8 MiB) without a string
# boundary at the end of the block that passes it (so it has held two blocks of it, in its
# carry, and a block more being read); a whitespace file is read through by the careful path,
# which holds nothing of it. Measured: 41 MiB at most; the bound leaves room for the allocator,
# and is far below what a bomb inflates to (before: 2-10 times INFLATED).
BOUND = 8 * MAX_STRING


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_a_bomb_is_refused_at_a_peak_that_does_not_grow_with_it(kind, tmp_path):
    parts, said = BOMBS[kind]
    path = gzip_parts(tmp_path / f"{kind}.json.gz", parts)
    assert path.stat().st_size < 2 * MIB
    got = load_in_child(path)
    assert got["said"] is not None and got["said"].startswith(f"{path}: ") and said in got["said"], got
    assert got["grew"] < BOUND, f"{kind}: the load took {got['grew'] / MIB:.0f} MiB for a {path.stat().st_size >> 10} KiB file"


def test_whitespace_ahead_of_a_trace_is_not_held(tmp_path):
    """JSON allows any amount of leading whitespace: the file loads, the whitespace not held."""
    path = gzip_parts(tmp_path / "lead.json.gz", [(b" ", INFLATED), b'{"traceEvents": [', _RUNTIME, b",", _KERNEL, b"]}"])
    got = load_in_child(path)
    assert got["said"] is None and got["grew"] < 48 * MIB, got


def test_the_cap_counts_the_inflated_text_as_it_streams(tmp_path, monkeypatch):
    """The size cap applies to what the gzip inflates to, leading whitespace included."""
    path = gzip_parts(tmp_path / "lead.json.gz", [(b" ", 64 * MIB), b'{"traceEvents": [', _RUNTIME, b",", _KERNEL, b"]}"])
    monkeypatch.setenv("KERNELSCOPE_MAX_TRACE_BYTES", str(16 << 20))
    with pytest.raises(ks.TraceError, match=r"lead\.json\.gz: it holds more than 16\.0 MiB of JSON"):
        ks.load(path, progress=False)


def test_an_error_in_the_first_mib_is_said_in_the_words_of_the_whole_read(tmp_path):
    """A real trace followed by NUL bytes: with 100 of them the whole text is decoded and the
    error said; with 8 MiB of them the same words come from the first MiB alone."""
    real = gzip.decompress((DATA / "triton_kernels.pt.trace.json.gz").read_bytes())
    said = []
    for n in (100, 8 * MIB):
        path = tmp_path / f"nul{n}.json"
        path.write_bytes(real + b"\0" * n)
        with pytest.raises(ks.TraceError) as e:
            ks.load(path, progress=False)
        said.append(str(e.value).split(": ", 1)[1])
    assert said[0] == said[1] and "not valid JSON" in said[0], said


def test_a_huge_name_in_a_large_plain_file_is_refused_as_in_a_gzip(tmp_path, monkeypatch):
    """A large plain file is read by several processes (trace/split.py): their stretches pass
    the same watch, so a 12 MiB kernel name is refused there too, not loaded."""
    from kernelscope.trace import split
    monkeypatch.setenv("KERNELSCOPE_READ_WORKERS", "1")
    path = tmp_path / "big.json"
    events = (b",\n" + _KERNEL) * 10_000
    with open(path, "wb") as f:
        f.write(b'{"traceEvents": [' + _RUNTIME + b', {"ph": "X", "cat": "kernel", "name": "' + b"a" * (12 * MIB)
                + b'", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}')
        while f.tell() < split.MIN_BYTES + 8 * MIB:
            f.write(events)
        f.write(b"]}")
    assert split.workers_for(path.stat().st_size) == 1
    with pytest.raises(ks.TraceError, match=r'big\.json: its "name" string at byte 189 holds'):
        ks.load(path, progress=False)


@pytest.mark.parametrize("gz", [False, True])
def test_long_arrays_of_numbers_are_no_string(tmp_path, gz):
    """A saved report's columns are long arrays of numbers without a string in 14 MiB: they
    are read (the file gets as far as its format check), not refused as a huge string."""
    text = b'{"format": "other.format", "times": [' + b", ".join(b"%d.5" % i for i in range(1_500_000)) + b"]}"
    path = tmp_path / ("cols.json.gz" if gz else "cols.json")
    path.write_bytes(gzip.compress(text, 1) if gz else text)
    with pytest.raises(ks.TraceError, match="its top level says it is a 'other.format' file"):
        ks.load(path, progress=False)


def test_long_strings_below_the_limit_still_load(tmp_path):
    """A kernel name of a few MiB (far longer than any real one) is read, not refused."""
    name = "k" + "<int, 3>" * (512 << 10)        # 4 MiB
    doc = {"traceEvents": [json.loads(_RUNTIME), {**json.loads(_KERNEL), "name": name}]}
    path = tmp_path / "long.json"
    text = json.dumps(doc).encode()
    path.write_bytes(b" " * (20 << 20) + text)    # leading whitespace: the careful path reads it
    rep = ks.load(path, progress=False)
    assert rep.kernels["name"].iloc[0] == name


if __name__ == "__main__":       # the figures in the docstring: python tests/trace/test_bombs.py 300
    import tempfile
    size = int(sys.argv[1]) * MIB if len(sys.argv) > 1 else INFLATED
    with tempfile.TemporaryDirectory() as d:
        for kind, (parts, _) in sorted(BOMBS.items()):
            parts = [(p[0], size) if isinstance(p, tuple) else p for p in parts]
            p = gzip_parts(Path(d) / f"{kind}.json.gz", parts)
            got = load_in_child(p)
            print(f"{kind:28s} {p.stat().st_size >> 10:6d} KiB -> load took {got['grew'] / MIB:6.0f} MiB: {got['said']}")
