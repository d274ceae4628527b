"""The live widget in a real JupyterLab + kernel, driven from Debian chromium.

Renders the MLP fixture (74 launches of 25 kernels on an H200), sorts, filters, groups,
selects a row, and checks that Python sees the selection through ``w.selected``.
"""
import pathlib
import re

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.render.text import fmt_us

pytestmark = pytest.mark.browser


def wait_idle(page, timeout=60_000):
    page.wait_for_function(
        "() => (document.querySelector('#jp-main-statusbar')?.textContent || '').includes('Idle')",
        timeout=timeout)


def run_cell(page, index):
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")
    return cell


def kernel_rows(output):
    return output.locator(".ks-row.ks-kernel")


def launches_column(output):
    # The launches cell is the 4th grid cell of a kernel row.
    return [int(t.replace(",", "")) for t in output.locator(".ks-row.ks-kernel > .ks-cell:nth-child(4)").all_inner_texts()]


def test_live_widget_sort_filter_select(lab, page):
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    summary = rep.summary()
    lab.open(page, "live_report.ipynb")
    wait_idle(page)
    out0 = run_cell(page, 0).locator(".jp-OutputArea-output")
    out0.locator(".ks-root").wait_for(timeout=60_000)
    # The header: 74 launches of 25 kernels, as in the recording.
    tiles = out0.locator(".ks-tile-value").all_inner_texts()
    assert "74" in tiles and "25" in tiles
    assert out0.locator(".ks-table-status").inner_text().startswith("25 of 25 kernel rows")

    # Default order: total time, largest first.
    totals = out0.locator(".ks-row.ks-kernel > .ks-cell:nth-child(5)").all_inner_texts()
    assert totals[0] == fmt_us(summary["total_us"].iloc[0]) == "98.4 us"

    # Sort by launches (descending), then ascending.
    out0.locator(".ks-head [data-col='launches']").click()
    got = launches_column(out0)
    assert got == sorted(got, reverse=True) and got[0] == summary["launches"].max() == 12
    out0.locator(".ks-head [data-col='launches']").click()
    got = launches_column(out0)
    assert got == sorted(got) and got[0] == summary["launches"].min() == 2

    # Filter by text: the cuBLAS nvjet GEMMs.
    out0.locator(".ks-filter").fill("nvjet")
    names = [n.get_attribute("data-name") for n in kernel_rows(out0).all()]
    assert names and all("nvjet" in n for n in names)
    assert re.match(rf"{len(names)} of 25 kernel rows", out0.locator(".ks-table-status").inner_text())
    out0.locator(".ks-filter").fill("")

    # Group by backend: a group header per backend, each row under it.
    out0.locator(".ks-group-by").select_option("backend")
    first_group = out0.locator(".ks-row.ks-group").first
    assert first_group.inner_text().startswith("▾ ATen")
    first_group.click()   # collapse it: the next groups scroll into the (virtual) view
    groups = [g.split("\n")[0][2:] for g in out0.locator(".ks-row.ks-group").all_inner_texts()]
    assert sorted(groups) == sorted(set(rep.kernels["backend"]))
    out0.locator(".ks-group-by").select_option("none")

    # Expand a kernel row into its launches.
    first = kernel_rows(out0).first
    n_launch = int(first.locator(".ks-cell:nth-child(4)").inner_text())
    first.locator(".ks-expand").click()
    assert out0.locator(".ks-row.ks-launch").count() == n_launch
    first = kernel_rows(out0).first
    first.locator(".ks-expand").click()

    # Hover shows the full name; selecting shows the details and syncs to Python.
    first = kernel_rows(out0).first
    full = first.get_attribute("data-name")
    assert first.locator(".ks-name").get_attribute("title") == full
    first.click()
    out0.locator(".ks-details .ks-fullname").wait_for()
    assert out0.locator(".ks-details .ks-fullname").inner_text() == full
    assert out0.locator(".ks-details .ks-occupancy").count() == 1

    # The same report shown as `rep` (the full bundle) hands over to the live widget.
    out1 = run_cell(page, 1).locator(".jp-OutputArea-output")
    out1.locator(".ks-root").wait_for(timeout=60_000)
    assert out1.locator(".ks-lab-static").count() == 0

    out2 = run_cell(page, 2).locator(".jp-OutputArea-output")
    out2.wait_for(timeout=60_000)
    text = out2.inner_text()
    n = int(first.locator(".ks-cell:nth-child(4)").inner_text())
    assert f"SELECTED [{full!r}]" in text
    assert f"({n}, " in text   # w.selected: one row per launch of that kernel

    ARTIFACTS.mkdir(exist_ok=True)
    out0.screenshot(path=str(ARTIFACTS / "widget_selected.png"))
    assert not page.errors, page.errors


def test_live_widget_tabs(lab, page):
    from kernelscope.view.codec import decode_buffer
    from kernelscope.view.report import view_model
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    header, buf = view_model(rep)
    cols = decode_buffer(header, buf)["kernels"]
    no_curves = {c["shape"] for c in header["shapes"] if "curves" not in c and "occupancy" in c}
    name = next(n for n, c in zip(cols["name"], cols["shape"]) if c in no_curves)
    lab.open(page, "live_report.ipynb")
    wait_idle(page)
    out0 = run_cell(page, 0).locator(".jp-OutputArea-output")
    out0.locator(".ks-root").wait_for(timeout=60_000)
    # A kernel whose occupancy curves were not sent up front: the widget asks Python for them.
    out0.locator(".ks-filter").fill(name[:60])
    out0.locator(f".ks-row.ks-kernel[data-name='{name}']").click()
    out0.locator(".ks-occ-chart svg").nth(2).wait_for(timeout=30_000)
    assert out0.locator(".ks-occ-chart").count() == 3
    out0.locator(".ks-filter").fill("")
    # Timeline: one lane per device/stream plus the idle lane, drawn on a canvas.
    out0.locator(".ks-tab[data-tab='Timeline']").click()
    canvas = out0.locator(".ks-timeline-canvas")
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box["width"] > 300 and box["height"] > 40
    before = out0.locator(".ks-timeline-info").inner_text()
    canvas.hover(position={"x": box["width"] * 0.6, "y": 30})
    page.keyboard.down("Control")        # ctrl+wheel zooms; the plain wheel scrolls the notebook
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    after = out0.locator(".ks-timeline-info").inner_text()
    assert before != after      # zoomed in
    out0.locator(".ks-tab[data-tab='Backends']").click()
    out0.locator(".ks-panel[data-panel='Backends'] svg").wait_for(timeout=20_000)
    out0.locator(".ks-tab[data-tab='Findings']").click()
    findings = out0.locator(".ks-finding")
    assert findings.count() >= 1
    assert "Host-bound" in findings.first.inner_text()
    out0.locator(".ks-tab[data-tab='Roofline']").click()
    out0.locator(".ks-panel[data-panel='Roofline'] svg").wait_for(timeout=20_000)
    ARTIFACTS.mkdir(exist_ok=True)
    out0.screenshot(path=str(ARTIFACTS / "widget_roofline.png"))
    assert not page.errors, page.errors


def test_rerun_and_redisplay_close_old_widgets(lab, page):
    """Re-running a report cell leaves one open widget, not one per run; showing the report in
    another cell closes the first cell's widget, whose output then shows the report from its
    saved data (still interactive, no longer linked to Python)."""
    lab.open(page, "lifecycle.ipynb")
    wait_idle(page)
    out0 = page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-OutputArea-output")
    for _ in range(3):
        run_cell(page, 0)
        out0.locator(".ks-root").wait_for(timeout=60_000)
        wait_idle(page)
    assert out0.locator(".ks-root").count() == 1 and out0.locator(".ks-lab-static").count() == 0
    out2 = run_cell(page, 2).locator(".jp-OutputArea-output")
    out2.wait_for(timeout=60_000)
    assert out2.inner_text().strip() == "OPEN 1"

    out1 = run_cell(page, 1).locator(".jp-OutputArea-output")
    out1.locator(".ks-root").wait_for(timeout=60_000)
    assert out1.locator(".ks-lab-static").count() == 0                  # the live widget
    out0.locator(".ks-lab-static .ks-root").wait_for(timeout=30_000)     # cell 0: the saved view
    out0.locator(".ks-row.ks-kernel").first.click()
    out0.locator(".ks-details .ks-occupancy").wait_for()
    wait_idle(page)
    out2 = run_cell(page, 2).locator(".jp-OutputArea-output")
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell')[2]"
                           ".querySelector('.jp-OutputArea-output')?.textContent.includes('OPEN')")
    assert out2.inner_text().strip() == "OPEN 1"
    assert not page.errors, page.errors


def test_a_request_with_no_reply_times_out_and_the_widget_keeps_working(lab, page):
    """The widget's request channel (js/src/channel.js) in the real widget, time-outs shortened by
    the page's test hook: the report's data not there in time (the view says so, and asks again on
    request); Perfetto's request for the trace (the kernel takes 3 s to read the file) gets no
    reply in time, and the view says so; the late reply changes nothing, and the next request is
    answered."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell('import kernelscope as ks\nks.load("mlp_train.pt.trace.json.gz").widget()'),
                nbformat.v4.new_code_cell("import time\nfrom kernelscope.view import widget as kw\n"
                                          "read_trace = kw.HANDLERS['trace']\n"
                                          "kw.HANDLERS['trace'] = lambda w, req: (time.sleep(3), read_trace(w, req))[1]"),
                nbformat.v4.new_code_cell("kw.HANDLERS['trace'] = read_trace")]
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
    nbformat.write(nb, str(lab.root / "slow_trace.ipynb"))
    lab.open(page, "slow_trace.ipynb")
    wait_idle(page)
    # The report's data, not there within 1 ms: the view says so, and asks again on request.
    page.evaluate("() => { globalThis.kernelscopeTimeouts = { data: 1 }; }")
    out0 = run_cell(page, 0).locator(".jp-OutputArea-output")
    out0.locator(".ks-load-error").wait_for(timeout=60_000)
    assert re.match(r'kernelscope: cannot read the report \(no reply from the Python kernel to the "data" request '
                    r"\(\S+\) within 1 ms", out0.locator(".ks-load-error").inner_text())
    wait_idle(page)
    page.evaluate("() => { delete globalThis.kernelscopeTimeouts; }")
    out0.locator(".ks-ask-again").click()
    out0.locator(".ks-root").wait_for(timeout=60_000)
    wait_idle(page)
    run_cell(page, 1)                    # reading the trace now takes the kernel 3 s
    wait_idle(page)
    out0.locator(".ks-tab[data-tab='Timeline']").click()      # Perfetto's button is the timeline's
    out0.locator(".ks-perfetto-button").click()
    page.evaluate("() => { globalThis.kernelscopeTimeouts = { trace: 500 }; }")
    out0.locator(".ks-perfetto-download").click()
    status = out0.locator(".ks-perfetto-status")
    page.wait_for_function("(el) => el.textContent.includes('no reply')", arg=status.element_handle(), timeout=2_500)
    assert re.fullmatch(r'cannot read the trace: no reply from the Python kernel to the "trace" request '
                        r"\(\S+\) within 500 ms: the kernel is busy or has gone", status.inner_text())
    page.wait_for_timeout(3_500)
    wait_idle(page)                      # the late reply came, to a request no longer waiting
    assert "no reply" in status.inner_text()
    run_cell(page, 2)
    wait_idle(page)
    page.evaluate("() => { delete globalThis.kernelscopeTimeouts; }")
    with page.expect_download() as dl:
        out0.locator(".ks-perfetto-download").click()
    assert pathlib.Path(dl.value.path()).read_bytes() == (DATA / "mlp_train.pt.trace.json.gz").read_bytes()
    assert status.inner_text() == "saved mlp_train.pt.trace.json.gz"
    assert not page.errors, page.errors
    lab.shutdown_kernels()
