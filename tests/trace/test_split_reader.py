"""The split reader (trace/split.py): a plain trace read by several processes at once.

Its tables must be exactly those of one process, on every real trace: each is written out as
plain JSON and read with the split forced on (small stretches, two workers) and compared, value
for value, with the plain-json reference of test_reader_reference and with the one-process read.
Then the ways it can go wrong: cuts that land inside names, a truncated file, Ctrl-C, and the
settings that turn it off.
"""
from __future__ import annotations

import gzip
import json
import os
import signal
import time

import pandas as pd
import pytest

from kernelscope.errors import TraceError
from kernelscope.trace import split
from kernelscope.trace.kineto import read_kineto
from tests.conftest import DATA
from tests.trace.test_reader_reference import TRACES, check, reference


def _plain(path, tmp_path):
    out = tmp_path / path.name.replace(".gz", "")
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def _force_split(monkeypatch, path, stretches=6, workers=2):
    """Split even a small file into about ``stretches`` stretches, read by ``workers`` workers."""
    monkeypatch.setattr(split, "MIN_BYTES", 0)
    monkeypatch.setattr(split, "STRETCH_BYTES", max(512, os.path.getsize(path) // stretches))
    monkeypatch.setenv("KERNELSCOPE_READ_WORKERS", str(workers))


def _one_process(path, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv("KERNELSCOPE_READ_WORKERS", "0")
        return read_kineto(path)


def _same(a, b):
    for name, table in a.tables().items():
        pd.testing.assert_frame_equal(table, b.tables()[name], obj=name)
    meta_a = {k: v for k, v in a.meta.items() if k != "read_processes"}
    assert meta_a == b.meta


def _folders_left(tmp):
    """The split reader's temporary folders still there, under ``tmp`` (the test's own temporary
    folder: another process's split read elsewhere on the machine is not this test's leftover)."""
    import glob
    return glob.glob(os.path.join(str(tmp), "kernelscope-read-*"))


def _own_tempdir(monkeypatch, tmp_path):
    """Give the reader's temporary folders a place of this test's own."""
    import tempfile
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _workers_left():
    """Processes still running split.worker_main under this one."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            kids = f.read().split()
    except OSError:
        return []
    out = []
    for pid in kids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"worker_main" in cmd:
            out.append(pid)
    return out


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_split_read_matches_the_reference_and_one_process(path, tmp_path, monkeypatch):
    plain = _plain(path, tmp_path)
    one = _one_process(plain, monkeypatch)
    _force_split(monkeypatch, plain)
    got = read_kineto(plain)
    assert got.meta.get("read_processes", 1) > 1, "the split read fell back to one process"
    check(got, reference(path))
    _same(got, one)


def test_many_stretches_few_workers(tmp_path, monkeypatch):
    """More stretches than processes: each takes the next free one, in whatever order; the
    pieces still go together in file order."""
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    one = _one_process(plain, monkeypatch)
    _force_split(monkeypatch, plain, stretches=40, workers=1)
    got = read_kineto(plain)
    assert got.meta["read_processes"] == 2
    _same(got, one)


def test_cuts_inside_names_fall_back_to_one_process(tmp_path, monkeypatch):
    """Every kernel and op name holds ``}, {``, so cuts land inside strings: a stretch that
    ends there does not decode, and the file is read again by one process, with the same
    tables as the reference's."""
    doc = json.loads(gzip.decompress((DATA / "mlp_train.pt.trace.json.gz").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] += ' }, {"ph": "X", "cat": "kernel", "name": "not an event"}, {'
    gz = tmp_path / "names.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(doc).encode()))
    plain = _plain(gz, tmp_path)
    _force_split(monkeypatch, plain, stretches=12)
    with open(plain, "rb") as f:
        stretches = split.plan(f, os.path.getsize(plain), split.STRETCH_BYTES)
    text = plain.read_bytes()

    def ends_an_event(stop):
        try:
            json.loads(text[:stop] + b"]}")
        except ValueError:
            return False
        return True
    # Some cut is inside a name (the text before it does not end an event), and some is not.
    ends = [ends_an_event(stop) for _, stop in stretches[:-1]]
    assert not all(ends) and any(ends), ends
    got = read_kineto(plain)
    assert "read_processes" not in got.meta
    check(got, reference(gz))
    assert not _workers_left()


def test_cuts_inside_names_are_not_taken_in_kineto_layout(tmp_path, monkeypatch):
    """The same names in a file laid out as Kineto writes it (a line break between events):
    the cuts taken are the line-broken ones, never inside a name, so the split read works."""
    doc = json.loads(gzip.decompress((DATA / "mlp_train.pt.trace.json.gz").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] += ' }, {"ph": "X", "cat": "kernel", "name": "not an event"}, {'
    gz = tmp_path / "names.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(doc, indent=1).encode()))
    plain = _plain(gz, tmp_path)
    _force_split(monkeypatch, plain, stretches=12)
    got = read_kineto(plain)
    assert got.meta.get("read_processes", 1) > 1
    check(got, reference(gz))


def test_a_truncated_file_says_what_one_process_says(tmp_path, monkeypatch):
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    cut = tmp_path / "cut.json"
    data = plain.read_bytes()
    cut.write_bytes(data[:int(len(data) * 0.7)])
    with monkeypatch.context() as m:
        m.setenv("KERNELSCOPE_READ_WORKERS", "0")
        try:
            want = read_kineto(cut)
        except TraceError as e:
            want = str(e)
    _force_split(monkeypatch, cut)
    try:
        got = read_kineto(cut)
    except TraceError as e:
        got = str(e)
    if isinstance(want, str):
        assert got == want
    else:
        _same(got, want)
    assert not _workers_left()


def test_ctrl_c_stops_the_workers(tmp_path, monkeypatch):
    """Ctrl-C while this process reads its stretch: KeyboardInterrupt reaches the caller and no
    worker is left running."""
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    tmp = _own_tempdir(monkeypatch, tmp_path)
    _force_split(monkeypatch, plain, stretches=40)
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        read_kineto(plain, progress=progress)
    assert not _workers_left() and not _folders_left(tmp)


def test_a_worker_killed_at_start_leaves_its_share_to_the_others(tmp_path, monkeypatch):
    """A worker that dies before taking a stretch (killed, out of memory): this process reads
    every stretch itself."""
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    one = _one_process(plain, monkeypatch)
    _force_split(monkeypatch, plain, stretches=40)
    real_popen = split.subprocess.Popen

    def popen_and_kill(*a, **kw):
        p = real_popen(*a, **kw)
        os.kill(p.pid, signal.SIGKILL)
        return p
    monkeypatch.setattr(split.subprocess, "Popen", popen_and_kill)
    _same(read_kineto(plain), one)
    assert not _workers_left()


def test_a_worker_that_fails_on_its_stretch_falls_back(tmp_path, monkeypatch):
    """A worker that takes a stretch and fails on it (here: its folder for the pieces is gone):
    the file is read again by one process, with the same tables."""
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    tmp = _own_tempdir(monkeypatch, tmp_path)
    one = _one_process(plain, monkeypatch)
    _force_split(monkeypatch, plain, stretches=40, workers=1)
    real_popen = split.subprocess.Popen

    def popen_without_folder(args, **kw):
        job = json.loads(args[-1])
        job["folder"] = str(tmp_path / "gone")
        return real_popen([*args[:-1], json.dumps(job)], **kw)
    monkeypatch.setattr(split.subprocess, "Popen", popen_without_folder)
    # This process reads slowly (0.1 s a stretch), so that the worker surely takes some.
    got = read_kineto(plain, progress=lambda done, total: time.sleep(0.1))
    assert "read_processes" not in got.meta
    _same(got, one)
    assert not _workers_left() and not _folders_left(tmp)


def test_progress_counts_every_stretch(tmp_path, monkeypatch):
    plain = _plain(DATA / "wild" / "llama_train.pt.trace.json.gz", tmp_path)
    _force_split(monkeypatch, plain, stretches=20)
    calls = []
    read_kineto(plain, progress=lambda done, total: calls.append((done, total)))
    size = os.path.getsize(plain)
    assert calls[-1] == (size, size)
    assert all(t == size for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_when_one_process_reads(tmp_path, monkeypatch):
    """Small files, gzip files and KERNELSCOPE_READ_WORKERS=0 are read by one process; a
    setting that is not a number is an error that says so."""
    gz = DATA / "wild" / "llama_train.pt.trace.json.gz"
    plain = _plain(gz, tmp_path)
    assert "read_processes" not in read_kineto(plain).meta          # small: below MIN_BYTES
    _force_split(monkeypatch, plain)
    assert "read_processes" not in read_kineto(gz).meta             # gzip
    monkeypatch.setenv("KERNELSCOPE_READ_WORKERS", "0")
    assert "read_processes" not in read_kineto(plain).meta
    monkeypatch.setenv("KERNELSCOPE_READ_WORKERS", "many")
    with pytest.raises(ValueError, match="KERNELSCOPE_READ_WORKERS must be a number"):
        read_kineto(plain)


def test_plan_cuts_between_events():
    import io
    text = b'{"traceEvents": [' + b", ".join(b'{"ph": "X", "name": "k%d"}' % i for i in range(100)) + b"]}"
    stretches = split.plan(io.BytesIO(text), len(text), 200)
    assert stretches[0][0] == 0 and stretches[-1][1] == len(text)
    for (_a, b), (c, _) in zip(stretches, stretches[1:]):
        assert text[b - 1:b] == b"}" and text[c:c + 1] == b"{" and text[b:c].strip() == b","
    assert len(stretches) > 5


def test_a_stretch_read_into_its_buffer_passes_the_string_guard(tmp_path, monkeypatch):
    """A stretch's text is read straight into the stream's buffer (not as blocks of bytes): the
    guard still sees all of it, so a string longer than it allows is refused there too, and the
    same stretch without it reads every event."""
    from kernelscope.trace import guard, stream
    monkeypatch.setattr(guard, "MAX_STRING", 1 << 12)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 1 << 12)        # many reads into the buffer
    events = [b'{"ph": "X", "cat": "kernel", "name": "k%d", "ts": %d, "dur": 1, "args": {}}' % (i, i)
              for i in range(400)]
    for huge in (False, True):
        if huge:
            events[300] = b'{"ph": "X", "cat": "kernel", "name": "' + b"a" * 20000 + b'", "ts": 1, "dur": 1}'
        text = b'{"traceEvents": [' + b", ".join(events) + b'], "traceName": "t"}'
        path = tmp_path / f"t{huge}.json"
        path.write_bytes(text)
        start = text.index(b'{"ph"', 100)             # an inner stretch: from an event to the end
        with open(path, "rb") as f:
            if huge:
                with pytest.raises(TraceError):     # (what the guard says first: the text is an inner piece)
                    split.read_stretch(f, (start, len(text)), 1, 2, {}, spare=[])
            else:
                part = split.read_stretch(f, (start, len(text)), 1, 2, {}, spare=[])
                assert part["n_events"] == text[start:].count(b'"ph"') and part["tail"] == {"traceName": "t"}
                assert part["pieces"]["kernels"]["name"][-1][-1] == "k399"
