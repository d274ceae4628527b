"""The JupyterLab extension in a real JupyterLab, driven from Debian chromium: saved reports
render with no kernel, "Profile cell" runs a cell under %%kernelprofile, trace files open in a tab.
"""
import pytest
from conftest import ARTIFACTS, DATA
from test_widget_browser import wait_idle

import kernelscope as ks

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("notebook", ["saved_report.ipynb", "saved_report_v1.ipynb"])
def test_saved_report_renders_without_kernel(lab, page, notebook):
    """A saved report renders with no kernel; so does one saved by kernelscope before the packed
    payload (saved_report_v1.ipynb: plain JSON header beside the gzipped columns)."""
    rep = ks.load(DATA / "attention.pt.trace.json.gz")
    lab.shutdown_kernels()
    lab.open(page, notebook)
    # The notebook names no kernel, so JupyterLab asks; a reader declines.
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    dialog.wait_for(state="detached", timeout=10_000)
    out = page.locator(".jp-OutputArea-output .ks-lab-static")
    out.locator(".ks-root").wait_for(timeout=30_000)
    assert lab.kernels() == []
    rows = out.locator(".ks-row.ks-kernel")
    assert rows.count() == rep.kernels["name"].nunique() == 7
    assert rows.first.get_attribute("data-name") == rep.summary()["name"].iloc[0]
    assert "flash" in rows.first.get_attribute("data-name")
    # Interactive without a kernel too: sort and select work on the saved data.
    out.locator(".ks-head [data-col='mean']").click()
    rows.first.click()
    out.locator(".ks-details .ks-occupancy").wait_for()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{notebook[:-6]}_no_kernel.png"), full_page=True)
    assert lab.kernels() == []
    assert not page.errors, page.errors


def test_view_code_loads_when_a_report_is_first_shown(lab, page):
    """JupyterLab starts with our small extension chunk only; the report view (table, timeline,
    charts) is a separate chunk fetched the first time a report is shown, and only once."""
    ext = lab.url + "/lab/extensions/kernelscope/static/"
    urls = []
    page.on("request", lambda r: urls.append(r.url) if r.url.startswith(ext) else None)
    lab.shutdown_kernels()
    lab.open(page, "profile_cell.ipynb")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=30_000)
    page.locator(".ks-profile-button").wait_for(timeout=30_000)      # our extension is active
    at_start = sorted(u[len(ext):] for u in urls)
    assert any(u.startswith("remoteEntry.") for u in at_start), at_start
    assert not any("kernelscope-view" in u for u in at_start), at_start
    static = lab_static_dir()
    start_bytes = sum((static / u.split("?")[0]).stat().st_size for u in at_start)
    assert start_bytes < 60_000, (start_bytes, at_start)            # 931 KB before issue 15

    page.goto("about:blank")
    urls.clear()
    lab.open(page, "saved_report.ipynb")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    page.locator(".jp-OutputArea-output .ks-lab-static .ks-root").wait_for(timeout=30_000)
    view = [u for u in urls if "kernelscope-view" in u]
    assert len(view) == 1, urls
    assert not page.errors, page.errors


def lab_static_dir():
    """Where the JupyterLab under test serves our extension's files from."""
    import pathlib
    import sys
    return pathlib.Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "kernelscope" / "static"


def test_profile_cell_button(lab, page):
    lab.open(page, "profile_cell.ipynb")
    wait_idle(page)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    source = cell.locator(".jp-InputArea-editor").inner_text()
    cell.locator(".jp-InputPrompt").click()
    # The context menu of a code cell offers the command too.
    cell.locator(".jp-InputArea-editor").click(button="right")
    assert page.locator(".lm-Menu-item", has_text="Profile cell").count() == 1
    page.keyboard.press("Escape")
    page.locator(".ks-profile-button").click()
    out = cell.locator(".jp-OutputArea")
    out.locator(".ks-root").wait_for(timeout=90_000)
    assert out.locator(".ks-lab-static").count() == 0     # the live widget, not the saved view
    text = out.inner_text()
    assert "torch.Size([128, 128])" in text          # the cell's own result still shows
    assert "no GPU found" in text                     # CPU machine: CPU ops only, said plainly
    out.locator(".ks-tab[data-tab='CPU ops']").click()
    ops = out.locator(".ks-ops tbody tr").all_inner_texts()
    assert any(o.startswith("aten::matmul\t3\t") for o in ops), ops
    # The cell's source is untouched and it got an execution count.
    assert cell.locator(".jp-InputArea-editor").inner_text() == source
    assert "%%kernelprofile" not in source
    assert cell.locator(".jp-InputPrompt").inner_text().strip() == "[1]:"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "profile_cell.png"), full_page=True)
    assert not page.errors, page.errors


def test_profile_cell_shortcut(lab, page):
    lab.open(page, "profile_cell.ipynb")
    wait_idle(page)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+Alt+p")
    cell.locator(".jp-OutputArea .ks-root").wait_for(timeout=90_000)


def test_open_trace_file(lab, page):
    rep = ks.load(DATA / "attention.pt.trace.json.gz")
    lab.shutdown_kernels()
    lab.open(page, "attention.pt.trace.json.gz")
    view = page.locator(".ks-lab-file .ks-root")
    view.wait_for(timeout=30_000)
    assert view.locator(".ks-source").inner_text() == "attention.pt.trace.json.gz"
    assert view.locator(".ks-row.ks-kernel").count() == rep.kernels["name"].nunique()
    assert lab.kernels() == []      # the server parsed it; no kernel was started


def test_open_saved_report_file(lab, page):
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    rep.save(lab.root / "step.ksreport.json.gz")
    lab.open(page, "step.ksreport.json.gz")
    view = page.locator(".ks-lab-file .ks-root")
    view.wait_for(timeout=30_000)
    assert view.locator(".ks-source").inner_text() == "step.ksreport.json.gz"
    assert view.locator(".ks-table-status").inner_text().startswith("25 of 25 kernel rows · 74 launches")


def test_open_broken_trace_file_says_why(lab, page):
    lab.open(page, "broken.pt.trace.json")
    err = page.locator(".ks-lab-file.ks-error")
    err.wait_for(timeout=30_000)
    assert err.inner_text().startswith("kernelscope: broken.pt.trace.json:")


def test_notebook7_saved_report_and_profile_cell(notebook7, page):
    """The same extension in Notebook 7: a saved report renders with no kernel; Profile cell runs."""
    rep = ks.load(DATA / "attention.pt.trace.json.gz")
    notebook7.open(page, "saved_report.ipynb")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    out = page.locator(".jp-OutputArea-output .ks-lab-static")
    out.locator(".ks-root").wait_for(timeout=30_000)
    assert out.locator(".ks-row.ks-kernel").count() == rep.kernels["name"].nunique()
    assert notebook7.kernels() == []

    notebook7.open(page, "profile_cell.ipynb")
    wait_idle_nb7(page)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".jp-InputPrompt").click()
    page.locator(".ks-profile-button").click()
    out = cell.locator(".jp-OutputArea")
    out.locator(".ks-root").wait_for(timeout=90_000)
    assert "torch.Size([128, 128])" in out.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook7_profile_cell.png"))


def wait_idle_nb7(page, timeout=60_000):
    # Notebook 7 shows the kernel state as the title of the kernel status indicator.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator, [data-status]')]"
        ".some(e => (e.getAttribute('data-status') || '') === 'idle')", timeout=timeout)
