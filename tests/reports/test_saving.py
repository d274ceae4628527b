"""Report.save loses nothing: whole or not at all (a full disk, made real with RLIMIT_FSIZE in
a child process, leaves the good report that was there), never blocks on a FIFO, and keeps no
local folders in a file meant to be shared unless asked."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import kernelscope as ks
from tests.conftest import DATA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _child(code, timeout=120):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_a_full_disk_leaves_the_good_report(tmp_path):
    target = tmp_path / "run.ksreport.json"
    small = ks.load(DATA / "attention.pt.trace.json.gz")
    small.save(target)
    good = target.read_bytes()
    # The bigger report needs more than the file-size limit allows: the write fails part way,
    # as on a full disk.
    out = _child(f"""
        import resource, signal
        import kernelscope as ks
        rep = ks.load({str(DATA / "launch_bound.pt.trace.json.gz")!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(good) + 4096}, resource.RLIM_INFINITY))
        try:
            rep.save({str(target)!r})
        except OSError as e:
            print("FAILED", e.errno)
        """)
    assert "FAILED" in out.stdout, out.stderr
    assert target.read_bytes() == good                        # the old report, whole
    assert len(ks.load(target).kernels) == len(small.kernels)
    assert os.listdir(tmp_path) == ["run.ksreport.json"]      # no temporary file left behind


def test_saving_keeps_the_file_mode_and_replaces_whole(tmp_path):
    target = tmp_path / "r.ksreport.json.gz"
    rep = ks.load(DATA / "attention.pt.trace.json.gz")
    rep.save(target)
    os.chmod(target, 0o640)
    rep.save(target)
    assert oct(os.stat(target).st_mode & 0o777) == "0o640"
    assert len(ks.load(target).kernels) == len(rep.kernels)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_saving_to_something_other_than_a_file_is_refused(tmp_path, kind):
    target = tmp_path / "target"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    # In a child with a timeout: the old code blocked for ever opening the FIFO.
    out = _child(f"""
        import kernelscope as ks
        rep = ks.load({str(DATA / "attention.pt.trace.json.gz")!r})
        try:
            rep.save({str(target)!r})
        except OSError as e:
            print("REFUSED", e)
        """, timeout=60)
    assert "REFUSED" in out.stdout, out.stderr
    assert ("not a regular file" if kind == "fifo" else "is a directory") in out.stdout


def test_saved_reports_keep_no_local_folders_unless_asked(tmp_path):
    src = tmp_path / "step.pt.trace.json.gz"
    src.write_bytes((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    rep = ks.load(str(src))
    shared = tmp_path / "shared.ksreport.json"
    rep.save(shared)
    text = shared.read_text()
    assert str(tmp_path) not in text
    meta = json.loads(text)["meta"]
    assert meta["raw_trace"] == "step.pt.trace.json.gz" and meta["source"] == "step.pt.trace.json.gz"
    # opened again, the trace it names is looked for beside the report
    assert ks.load(shared).meta["raw_trace"] == str(src)
    mine = tmp_path / "mine.ksreport.json"
    rep.save(mine, local_paths=True)
    assert json.loads(mine.read_text())["meta"]["raw_trace"] == str(src.resolve())
