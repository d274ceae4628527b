"""The report view inside a real JupyterLab 4 in chromium at 1400 px: the kernel table at
notebook width with the file browser open, a trace file's tab (lanes filling its height, the raw
trace handed to Perfetto), and the timeline's keys kept from the notebook's shortcuts."""
import pathlib
import shutil

import nbformat
import pytest
from conftest import ARTIFACTS, DATA
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks
from kernelscope.view.bundle import MIME_TYPE, mime_payload

pytestmark = pytest.mark.browser
LLAMA = DATA / "wild" / "llama_train.pt.trace.json.gz"


def decline_kernel(page):
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    dialog.wait_for(state="detached", timeout=10_000)


def file_browser_open(page):
    fb = page.locator("#filebrowser")
    if not fb.is_visible():
        page.locator(".jp-SideBar.jp-mod-left [data-id='filebrowser']").click()
    fb.wait_for(state="visible", timeout=10_000)
    return fb.bounding_box()["width"]


def test_kernel_names_readable_at_1400px_with_the_file_browser_open(lab, page):
    """A Llama training step (63 kernels) saved in a notebook, read with no kernel: the Kernel
    column is the widest and the names fit; no header is cut."""
    rep = ks.load(LLAMA)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("rep")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={MIME_TYPE: mime_payload(rep), "text/plain": "<report>"},
                                           execution_count=1)]
    nb.cells = [cell]
    nbformat.write(nb, lab.root / "llama_saved.ipynb")
    lab.shutdown_kernels()
    assert page.viewport_size["width"] == 1400
    lab.open(page, "llama_saved.ipynb")
    decline_kernel(page)
    out = page.locator(".jp-OutputArea-output .ks-root")
    out.wait_for(timeout=30_000)
    assert file_browser_open(page) > 150
    page.wait_for_timeout(300)
    widths = out.locator(".ks-head .ks-cell").evaluate_all("els => Object.fromEntries(els.map(e => [e.dataset.col, e.getBoundingClientRect().width]))")
    assert widths["short"] == max(widths.values()) and widths["short"] >= 300, widths
    # Names: nearly all fit whole (the few longest are cut, with the full name on hover).
    fit = out.locator(".ks-row.ks-kernel .ks-name").evaluate_all("els => els.map(e => e.scrollWidth <= e.clientWidth + 1)")
    assert len(fit) >= 10 and sum(fit) / len(fit) >= 0.9, fit
    cut = out.locator(".ks-head .ks-cell").evaluate_all("els => els.filter(e => { const l = e.querySelector('.ks-h-label'); "
                                                        "return l && l.getBoundingClientRect().right > e.getBoundingClientRect().right + 0.5; }).map(e => e.dataset.col)")
    assert cut == []
    # No horizontal scrollbar at this width: the table fits the output area.
    assert out.locator(".ks-hscroll").evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lab_1400_file_browser.png"))
    assert not page.errors, page.errors


PERFETTO_STANDIN = """<!doctype html><title>waiting</title><script>
// Stands in for ui.perfetto.dev (not reachable from the test machine): answers the documented
// PING with PONG and records the {perfetto: {buffer, title, fileName}} message it is sent.
window.addEventListener('message', (e) => {
  if (e.data === 'PING') { e.source.postMessage('PONG', '*'); return; }
  if (e.data && e.data.perfetto) {
    const p = e.data.perfetto, u8 = new Uint8Array(p.buffer);
    document.title = `got ${p.fileName} ${u8.length} ${u8[0]} ${u8[1]}`;
  }
});
</script>"""


def test_trace_file_tab_fills_its_height_and_hands_the_trace_to_perfetto(lab, page):
    shutil.copy(LLAMA, lab.root / "llama_train.pt.trace.json.gz")
    raw = LLAMA.read_bytes()
    lab.open(page, "llama_train.pt.trace.json.gz")
    view = page.locator(".ks-lab-file .ks-root")
    view.wait_for(timeout=60_000)
    view.locator(".ks-tab[data-tab='Timeline']").click()
    tab = page.locator(".ks-lab-file").bounding_box()
    page.wait_for_function("() => document.querySelector('.ks-lab-file .ks-timeline-canvas').height > 0")
    legend = view.locator(".ks-timeline .ks-legend").bounding_box()
    wrap = view.locator(".ks-timeline-wrap").bounding_box()
    # The lanes grow to fill the tab: the legend ends near the tab's bottom, no scrolling needed.
    assert legend["y"] + legend["height"] <= tab["y"] + tab["height"]
    assert tab["y"] + tab["height"] - (legend["y"] + legend["height"]) < 60
    # (the first screen above the tabs holds llama's two items now, the launch-bound one and the
    # time outside the GPU's work: the lanes get a little over half of the 900 px tab)
    assert wrap["height"] > 0.5 * tab["height"]
    page.screenshot(path=str(ARTIFACTS / "lab_file_tab_timeline.png"))
    # Perfetto: the raw trace, downloaded as the file it is ...
    view.locator(".ks-perfetto-button").click()
    with page.expect_download() as dl:
        view.locator(".ks-perfetto-download").click()
    assert dl.value.suggested_filename == "llama_train.pt.trace.json.gz"
    assert pathlib.Path(dl.value.path()).read_bytes() == raw
    # ... or handed to ui.perfetto.dev in a new tab by Perfetto's postMessage protocol.
    page.context.route("https://ui.perfetto.dev/**", lambda route: route.fulfill(body=PERFETTO_STANDIN, content_type="text/html"))
    with page.expect_popup() as popup:
        view.locator(".ks-perfetto-open").click()
    tab2 = popup.value
    tab2.wait_for_function("document.title.startsWith('got')", timeout=30_000)
    assert tab2.title() == f"got llama_train.pt.trace.json.gz {len(raw)} {raw[0]} {raw[1]}"
    assert "sent llama_train.pt.trace.json.gz" in view.locator(".ks-perfetto-status").inner_text()
    assert not page.errors, page.errors


def test_live_widget_perfetto_and_keys_stay_out_of_the_notebook(lab, page):
    """The live widget asks Python for the trace file; W/A/S/D on a focused timeline move it and
    never reach JupyterLab's command-mode shortcuts (A inserts a cell above, D D deletes one)."""
    lab.open(page, "live_report.ipynb")
    wait_idle(page)
    out0 = run_cell(page, 0).locator(".jp-OutputArea-output")
    out0.locator(".ks-root").wait_for(timeout=60_000)
    wait_idle(page)
    out0.locator(".ks-tab[data-tab='Timeline']").click()
    canvas = out0.locator(".ks-timeline-canvas")
    box = canvas.bounding_box()
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 8)        # the axis: focus, no pick
    view = page.evaluate("() => document.querySelector('.jp-OutputArea-output .ks-timeline-info').textContent")
    for key in ("a", "d", "d", "w", "s"):
        page.keyboard.press(key)
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells
    assert page.evaluate("() => document.querySelector('.jp-OutputArea-output .ks-timeline-info').textContent") != view
    out0.locator(".ks-perfetto-button").click()
    with page.expect_download() as dl:
        out0.locator(".ks-perfetto-download").click()
    assert dl.value.suggested_filename == "mlp_train.pt.trace.json.gz"
    assert pathlib.Path(dl.value.path()).read_bytes() == (DATA / "mlp_train.pt.trace.json.gz").read_bytes()
    assert not page.errors, page.errors
