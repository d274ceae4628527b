"""Real-browser fixtures: a JupyterLab server on 127.0.0.1 and Debian's chromium via Playwright.

The browser tests are marked ``browser``. They find the browser themselves (the ``chromium``
fixture of tests/conftest.py): ``python -m pytest`` passes on a machine where only the README's
install command ran, installing Debian's chromium once with apt-get when it is missing and the
tests run as root.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from tests.conftest import CHROMIUM_ARGS  # the `chromium` fixture lives there too

HERE = pathlib.Path(__file__).parent
ARTIFACTS = HERE / "artifacts"
NOTEBOOKS = HERE / "notebooks"
DATA = HERE.parent / "data"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failed.png"), full_page=True)
    ctx.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


class Lab:
    """A running JupyterLab (or Notebook 7): its URL, token and root directory."""

    def __init__(self, url, token, root, proc, app="lab"):
        self.url, self.token, self.root, self.proc, self.app = url, token, root, proc, app

    def api(self, path, method="GET", body=None):
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"},
                                     data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=30) as r:
            data = r.read()
        return json.loads(data) if data else None

    def open(self, page, path):
        """Open a document and wait until the application has started."""
        if self.app == "lab":
            page.goto(f"{self.url}/lab/tree/{path}?token={self.token}&reset")
            page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        else:
            kind = "notebooks" if path.endswith(".ipynb") else "edit"
            page.goto(f"{self.url}/{kind}/{path}?token={self.token}")
            page.wait_for_selector(".jp-LabShell, #main-panel, .jp-NotebookPanel", timeout=60_000)
        return page

    def kernels(self):
        return self.api("/api/kernels")

    def shutdown_kernels(self):
        """Stop every kernel (and session) earlier tests left running."""
        for sess in self.api("/api/sessions"):
            self.api(f"/api/sessions/{sess['id']}", method="DELETE")
        for k in self.kernels():
            self.api(f"/api/kernels/{k['id']}", method="DELETE")


def _start(tmp_path_factory, app):
    root = tmp_path_factory.mktemp(f"{app}-root")
    cfg = tmp_path_factory.mktemp(f"{app}-config")
    # Keep the test app quiet: no news prompt, no state from a user's settings.
    (cfg / "labconfig").mkdir()
    (cfg / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    for nb in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(nb, root / nb.name)
    for trace in ("mlp_train.pt.trace.json.gz", "attention.pt.trace.json.gz", "launch_bound.pt.trace.json.gz",
                  "graphs.pt.trace.json.gz"):
        shutil.copy(DATA / trace, root / trace)
    (root / "broken.pt.trace.json").write_text('{"traceEvents": [')
    token = uuid.uuid4().hex
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(cfg),
               JUPYTERLAB_SETTINGS_DIR=str(cfg / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(cfg / "ws"),
               PYTHONUNBUFFERED="1")
    log = open(tmp_path_factory.mktemp(f"{app}-log") / "server.log", "w")  # noqa: SIM115 - the server's, closed by _stop
    module = "jupyterlab" if app == "lab" else "notebook"
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
         "--ServerApp.port_retries=0", "--ServerApp.allow_root=True"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    server = Lab(url, token, root, proc, app)
    deadline = time.time() + 60
    while True:
        try:
            server.api("/api/status")
            break
        except Exception:  # noqa: BLE001 - not up yet, whatever the error
            if proc.poll() is not None or time.time() > deadline:
                log.flush()
                raise RuntimeError(f"{module} did not start:\n" + pathlib.Path(log.name).read_text()[-3000:]) from None
            time.sleep(0.3)
    return server, log


def _stop(server, log):
    server.proc.terminate()
    try:
        server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.kill()
    log.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    server, log = _start(tmp_path_factory, "lab")
    yield server
    _stop(server, log)


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory):
    pytest.importorskip("notebook", minversion="7", reason="Notebook 7 is not installed")
    server, log = _start(tmp_path_factory, "notebook")
    yield server
    _stop(server, log)
