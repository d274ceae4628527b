"""Double-clicking in JupyterLab's file browser opens what ``ks.load`` reads as a report tab
(issue 30): JAX's ``perfetto_trace.json.gz`` and Nsight Compute reports (``.ncu-rep``,
``.ncu-rep.xz``), as ``.pt.trace.json.gz`` files open; in a real JupyterLab in chromium."""
import lzma
import re
import shutil

import pytest
from conftest import DATA

import kernelscope as ks

pytestmark = pytest.mark.browser

FILES = {
    "jax_run/perfetto_trace.json.gz": DATA / "wild" / "jax_own.perfetto_trace.json.gz",   # as JAX names it
    "gpu-host.perfetto_trace.json.gz": DATA / "wild" / "jax_own.perfetto_trace.json.gz",
    "torch_ops.ncu-rep.xz": DATA / "ncu_rep" / "torch_ops.ncu-rep.xz",
    "torch_ops.ncu-rep": None,                                                   # the same, not compressed
}


@pytest.fixture(scope="module")
def files(lab):
    for name, src in FILES.items():
        dest = lab.root / name
        dest.parent.mkdir(exist_ok=True)
        if src is None:
            dest.write_bytes(lzma.decompress((DATA / "ncu_rep" / "torch_ops.ncu-rep.xz").read_bytes()))
        else:
            shutil.copy(src, dest)
    return lab


def _double_click(page, name):
    item = page.locator(".jp-DirListing-item", has=page.locator(".jp-DirListing-itemText", has_text=re.compile(
        "^" + re.escape(name) + "$")))
    item.wait_for(timeout=30_000)
    item.dblclick()


@pytest.mark.parametrize("path", list(FILES))
def test_double_click_opens_a_report_tab(files, page, path):
    lab = files
    lab.shutdown_kernels()
    page.goto(f"{lab.url}/lab?token={lab.token}&reset")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    # kernelscope's server extension (this checkout's) gave the lab extension the names it reads
    config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    assert re.search(config["kernelscopeFiles"], path.split("/")[-1])
    *folders, name = path.split("/")
    for folder in folders:
        _double_click(page, folder)
    _double_click(page, name)
    view = page.locator(".jp-MainAreaWidget .ks-lab-file .ks-root")
    view.wait_for(timeout=60_000)
    assert not page.locator(".jp-Dialog", has_text="File Load Error").count()
    assert page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").inner_text() == name
    rep = ks.load(lab.root / path)
    assert view.locator(".ks-row.ks-kernel").count() == rep.kernels["name"].nunique() > 0
    assert lab.kernels() == []      # the server read it; no kernel was started
    assert not page.errors, page.errors


def test_a_report_tab_writes_no_checkpoint(lab, page):
    """A report tab is read-only: opening a trace from the file browser leaves no copy of it in
    ``.ipynb_checkpoints/`` (JupyterLab checkpoints every file it could save; 304 MB for a big
    trace), and the tab cannot be saved."""
    name = "mlp_train.pt.trace.json.gz"      # copied into the lab's root by conftest
    lab.shutdown_kernels()
    page.goto(f"{lab.url}/lab?token={lab.token}&reset")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    _double_click(page, name)
    page.locator(".jp-MainAreaWidget .ks-lab-file .ks-root").wait_for(timeout=60_000)
    # The context lists checkpoints, then creates one, once the tab is populated: give it time.
    page.wait_for_timeout(1500)
    assert lab.api(f"/api/contents/{name}/checkpoints") == []
    assert not list(lab.root.glob(".ipynb_checkpoints/mlp_train*"))
    assert not page.errors, page.errors
