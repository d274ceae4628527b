"""The server route ``/kernelscope/report`` in a real jupyter server: it asks Jupyter's
authorizer, follows the contents manager's hidden-file rule and refuses symlinks that leave
the root, answering as ``/api/contents`` and ``/files`` do; a report that kills NVIDIA's
reader does not take the server down."""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

REFUSE_ALL = """
from jupyter_server.auth.authorizer import Authorizer

class RefuseAll(Authorizer):
    def is_authorized(self, handler, user, action, resource):
        return False
"""


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, tmp, *args):
        self.root = tmp / "root"
        self.root.mkdir(parents=True)
        (tmp / "auth_mod.py").write_text(REFUSE_ALL)
        self.token, port = uuid.uuid4().hex, _port()
        self.url = f"http://127.0.0.1:{port}"
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "cfg"), PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp), os.environ.get("PYTHONPATH", "")]))
        self.log = open(tmp / "server.log", "w")  # noqa: SIM115 - the server's log for its life, closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
             "--ServerApp.port_retries=0", "--ServerApp.allow_root=True",
             '--ServerApp.jpserver_extensions={"kernelscope.jupyter.server": True}', *args],
            cwd=self.root, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while self.get("/api/status")[0] is None:
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError((tmp / "server.log").read_text()[-3000:])
            time.sleep(0.3)

    def get(self, path):
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return None, b""

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def server(tmp_path):
    made = []

    def start(*args):
        s = Server(tmp_path / f"s{len(made)}", *args)
        made.append(s)
        return s
    yield start
    for s in made:
        s.stop()


def _report(s, path):
    return s.get(f"/kernelscope/report?path={path}")


def test_an_authorizer_that_refuses_everything_is_asked(server, tmp_path):
    s = server("--ServerApp.authorizer_class=auth_mod.RefuseAll")
    shutil.copy(DATA / "attention.pt.trace.json.gz", s.root / "a.pt.trace.json.gz")
    assert s.get("/api/contents/a.pt.trace.json.gz")[0] == 403
    assert s.get("/files/a.pt.trace.json.gz")[0] == 403
    assert _report(s, "a.pt.trace.json.gz")[0] == 403


def test_hidden_files_and_links_out_of_the_root(server, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(DATA / "attention.pt.trace.json.gz", outside / "secret.pt.trace.json.gz")
    s = server()
    shutil.copy(DATA / "attention.pt.trace.json.gz", s.root / "a.pt.trace.json.gz")
    shutil.copy(DATA / "attention.pt.trace.json.gz", s.root / ".hidden.pt.trace.json.gz")
    (s.root / ".private").mkdir()
    shutil.copy(DATA / "attention.pt.trace.json.gz", s.root / ".private" / "b.pt.trace.json.gz")
    (s.root / "link.pt.trace.json.gz").symlink_to(outside / "secret.pt.trace.json.gz")
    (s.root / "linkdir").symlink_to(outside)
    os.symlink(s.root / "a.pt.trace.json.gz", s.root / "inside.pt.trace.json.gz")
    code, body = _report(s, "a.pt.trace.json.gz")
    assert code == 200 and json.loads(body)["encoding"] == "gzip+base64"
    assert _report(s, "inside.pt.trace.json.gz")[0] == 200          # a link within the root is fine
    for p in (".hidden.pt.trace.json.gz", ".private/b.pt.trace.json.gz"):
        assert s.get(f"/api/contents/{p}")[0] == 404
        assert _report(s, p)[0] == 404, p
    for p in ("link.pt.trace.json.gz", "linkdir/secret.pt.trace.json.gz"):
        assert s.get(f"/files/{p}")[0] == 403
        assert _report(s, p)[0] == 403, p


def test_allow_hidden_serves_hidden_files(server):
    s = server("--ContentsManager.allow_hidden=True")
    shutil.copy(DATA / "attention.pt.trace.json.gz", s.root / ".hidden.pt.trace.json.gz")
    assert _report(s, ".hidden.pt.trace.json.gz")[0] == 200


def test_a_report_that_aborts_nvidias_reader_leaves_the_server_up(server):
    pytest.importorskip("ncu_report")
    import lzma
    import struct
    with lzma.open(DATA / "ncu_rep" / "triton_kernels.ncu-rep.xz") as f:
        raw = f.read()
    off, recs = 4, []
    while off < len(raw):
        (n,) = struct.unpack("<I", raw[off:off + 4])
        recs.append(raw[off:off + 4 + n])
        off += 4 + n
    recs[3], recs[4] = recs[4], recs[3]
    s = server()
    (s.root / "swapped.ncu-rep").write_bytes(raw[:4] + b"".join(recs))
    code, body = _report(s, "swapped.ncu-rep")
    assert code == 400 and b"swapped.ncu-rep: Nsight Compute's reader crashed on it" in body
    assert s.proc.poll() is None and s.get("/api/status")[0] == 200
