"""A browser reload with the kernel alive, in a real JupyterLab: every report renders from its
saved payload at once, then re-attaches to its live widget once the session connects, so the
table's selection reaches Python again. And the Profile button on a CPU-only machine: no
profiler noise as red stderr, the report opens on its CPU ops."""
import shutil
import time

import pytest
from conftest import ARTIFACTS, DATA, NOTEBOOKS
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks

pytestmark = pytest.mark.browser

# Records, from the first script of the page on, whether a saved report was drawn before the
# live one took its place (JupyterLab renders outputs before the session reconnects).
WATCH_SAVED = """
window.__ks = {saved: 0, live: 0};
new MutationObserver(() => {
  if (document.querySelector('.ks-lab-renderer > .ks-lab-static .ks-root') && !window.__ks.saved) window.__ks.saved = performance.now();
  if (document.querySelector('.ks-lab-renderer > .lm-Panel .ks-root:not(.ks-loading)') && !window.__ks.live) window.__ks.live = performance.now();
}).observe(document, {childList: true, subtree: true});
"""


def saved_on_disk(lab, path, outputs):
    """Wait until the notebook file holds `outputs` code cells with outputs."""
    deadline = time.time() + 30
    while time.time() < deadline:
        nb = lab.api(f"/api/contents/{path}?content=1")["content"]
        if sum(bool(c.get("outputs")) for c in nb["cells"]) >= outputs:
            return nb
        time.sleep(0.3)
    raise AssertionError(f"{path} was not saved with {outputs} outputs")


def reload_notebook(path):
    """A report displayed as `rep` (our MIME renderer, with its live widget beside it), the same
    report's widget shown on its own, and a cell that prints what each one has selected."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        'import kernelscope as ks\nrep = ks.load("mlp_train.pt.trace.json.gz")\nrep',
        "w = rep.widget()\nw",
        "from kernelscope.view.widget import _displays\nshown = _displays.by_report[rep]()\n"
        'print("SELECTED", sorted(shown.selection), shown.selected.shape)',
    )]
    for i, c in enumerate(nb.cells):
        c.id = f"cell-{i}"
    nbformat.write(nb, path)


def test_reload_renders_saved_then_reattaches_live(lab, page):
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    lab.shutdown_kernels()
    reload_notebook(lab.root / "reload.ipynb")
    lab.open(page, "reload.ipynb")
    wait_idle(page)
    for i in (0, 1):
        run_cell(page, i).locator(".jp-OutputArea-output .ks-root:not(.ks-loading)").wait_for(timeout=60_000)
    wait_idle(page)
    page.keyboard.press("Control+s")
    saved_on_disk(lab, "reload.ipynb", 2)
    kernels = lab.kernels()
    assert len(kernels) == 1

    page.add_init_script(WATCH_SAVED)
    page.reload()
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    outs = [page.locator(".jp-Notebook .jp-Cell").nth(i).locator(".jp-OutputArea-output") for i in (0, 1)]
    for out in outs:
        # The live widget, its saved stand-in gone.
        out.locator(":not(.ks-lab-static) > .ks-root:not(.ks-loading)").wait_for(timeout=90_000)
        page.wait_for_function("(el) => !el.querySelector('.ks-lab-static')", arg=out.element_handle(), timeout=30_000)
    assert [k["id"] for k in lab.kernels()] == [k["id"] for k in kernels]     # the same kernel
    seen = page.evaluate("window.__ks")
    # The saved report showed first, while the session reconnected; then the live one.
    assert 0 < seen["saved"] <= seen["live"], seen
    assert "ks-lab-renderer" in outs[0].get_attribute("class")      # our renderer, holding the live view
    assert outs[0].locator(":scope > .lm-Panel .ks-root").count() == 1

    # Selection in the re-attached report reaches Python again.
    row = outs[0].locator(".ks-row.ks-kernel").first
    name = row.get_attribute("data-name")
    assert name == rep.summary()["name"].iloc[0]
    row.click()
    outs[0].locator(".ks-details .ks-fullname").wait_for()
    wait_idle(page)
    out2 = run_cell(page, 2).locator(".jp-OutputArea-output")
    out2.filter(has_text="SELECTED").wait_for(timeout=60_000)
    n = int((rep.kernels["name"] == name).sum())
    assert f"SELECTED [{name!r}] ({n}, " in out2.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "reload_reattached.png"), full_page=True)
    assert not page.errors, page.errors


def test_profile_button_cpu_only_cell_is_quiet_and_opens_cpu_ops(lab, page):
    lab.shutdown_kernels()
    shutil.copy(NOTEBOOKS / "profile_cell.ipynb", lab.root / "quiet.ipynb")
    lab.open(page, "quiet.ipynb")
    wait_idle(page)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".jp-InputPrompt").click()
    page.locator(".ks-profile-button").click()
    out = cell.locator(".jp-OutputArea")
    out.locator(".ks-root:not(.ks-loading)").wait_for(timeout=90_000)
    wait_idle(page)
    stderr = out.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    assert not [t for t in stderr if "USDT" in t or "gpuGetDeviceCount" in t], stderr
    text = out.inner_text()
    assert "USDT" not in text and "gpuGetDeviceCount" not in text
    # No kernels ran: the report opens on what did.
    assert out.locator(".ks-tab[aria-selected='true']").get_attribute("data-tab") == "CPU ops"
    assert any(o.startswith("aten::matmul\t3\t") for o in out.locator(".ks-ops tbody tr").all_inner_texts())
    # Titled by its cell, not by IPython's temp file.
    assert out.locator(".ks-source").inner_text() == "In [1]"
    assert not page.errors, page.errors
