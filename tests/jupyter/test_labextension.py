"""Packaging: the wheel carries the prebuilt JupyterLab extension, the widget bundle and the
server extension's config, built from js/ by the build hook with no manual npm step."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.view.test_widget import embedded_view

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
LABEXT = "share/jupyter/labextensions/kernelscope"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Build the wheel from a clean copy of the tracked sources (no node_modules, no built assets)."""
    if shutil.which("npm") is None:
        pytest.fail("npm is needed to build the front end (js/)")
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        p = ROOT / rel
        if p.is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, src / rel)
    assert not (src / "js" / "node_modules").exists() and not (src / "kernelscope" / "static").exists()
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(out)],
                       capture_output=True, text=True, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", npm_config_prefer_offline="true",
                                npm_config_audit="false", npm_config_fund="false"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (whl,) = out.glob("kernelscope-*.whl")
    return zipfile.ZipFile(whl)


def _data(name):
    return f"kernelscope-0.1.0.data/data/{name}"


def test_wheel_has_the_prebuilt_labextension(wheel):
    names = set(wheel.namelist())
    pkg = json.loads(wheel.read(_data(f"{LABEXT}/package.json")))
    assert pkg["name"] == "kernelscope"
    load = pkg["jupyterlab"]["_build"]["load"]
    assert _data(f"{LABEXT}/{load}") in names                       # static/remoteEntry.<hash>.js
    assert any(n.startswith(_data(f"{LABEXT}/static/")) and n.endswith(".js") and "remoteEntry" not in n
               for n in names)
    install = json.loads(wheel.read(_data(f"{LABEXT}/install.json")))
    assert install["packageName"] == "kernelscope"
    # Once, under share/: not a second copy inside the package.
    assert not any(n.startswith("kernelscope/labextension/") for n in names)


def test_wheel_has_the_widget_bundle_and_server_config(wheel):
    esm = wheel.read("kernelscope/static/widget.js").decode()
    assert "export" in esm
    # Self-contained (no CDN), charts drawn by our own SVG code, and small: every displayed
    # report's widget state carries this module (issue 15).
    assert len(esm.encode()) <= 150_000
    view = embedded_view(esm)
    assert "ks-svg" in view and ".ks-root" in view and "vega" not in view.lower()
    for text in (esm, view):
        assert "cdn.jsdelivr" not in text and "unpkg.com" not in text
        # The one web address is Perfetto's UI, opened only when the user asks to hand the raw
        # trace over ("Perfetto..."); nothing is fetched from the web to draw a report.
        assert set(re.findall(r"https://[\w.-]+", text)) <= {"https://ui.perfetto.dev"}
    assert "ks-svg" in wheel.read("kernelscope/static/report.js").decode()
    cfg = json.loads(wheel.read(_data("etc/jupyter/jupyter_server_config.d/kernelscope.json")))
    assert cfg["ServerApp"]["jpserver_extensions"] == {"kernelscope.jupyter.server": True}
    assert "kernelscope/jupyter/server.py" in wheel.namelist()
    assert "kernelscope/jupyter/magics.py" in wheel.namelist()


def test_installed_extension_is_listed_and_enabled():
    r = subprocess.run([sys.executable, "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True)
    out = r.stdout + r.stderr
    line = next((ln for ln in out.splitlines() if ln.strip().startswith("kernelscope ")), "")
    assert "enabled" in line and "OK" in line, out
    r = subprocess.run([sys.executable, "-m", "jupyter_server.extension.serverextension", "list"],
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert "kernelscope.jupyter.server" in out and "enabled" in out.split("kernelscope.jupyter.server", 1)[1][:40], out
