"""Choosing the window of a report too big for one view, in a real JupyterLab from Debian
chromium: the live widget fetches another window from its kernel (a custom message), a trace
file's tab from the server (no kernel), and a saved notebook with no kernel keeps the window it
saved. Each window shown is checked against ``view_model(rep, window=...)`` in this process."""
import gzip
import json
import subprocess
import sys

import nbformat
import pytest
from conftest import DATA, NOTEBOOKS
from nbclient import NotebookClient
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.units import fmt_us
from kernelscope.view import report as view
from kernelscope.view.codec import read_payload

pytestmark = pytest.mark.browser
TILE = DATA.parent.parent / "tools" / "tile_trace.py"


def _tile(source, out, copies):
    """A real recording repeated ``copies`` times one after another, by the repository's
    ``tools/tile_trace.py`` (what makes the benchmarks' big traces)."""
    with gzip.open(source, "rt") as f:
        events = sum(e.get("ph") != "M" for e in json.load(f)["traceEvents"])
    subprocess.run([sys.executable, str(TILE), str(source), str(out), "--events", str(copies * events)], check=True)
    return out


def _shown(chooser):
    return float(chooser.get_attribute("data-from-us")), float(chooser.get_attribute("data-until-us"))


def _wait_window(page, scope, from_us):
    """Until the view shown holds the window starting at ``from_us`` (a new chooser replaces the old)."""
    page.wait_for_function(
        "([el, f]) => { const c = el.querySelector('.ks-window'); return c && !c.classList.contains('ks-win-loading')"
        " && Math.abs(parseFloat(c.dataset.fromUs) - f) < 1e-3 * Math.max(1, Math.abs(f)); }",
        arg=[scope.element_handle(), from_us], timeout=60_000)


def _launches_in_table(out):
    """The launches of every kernel row (the table draws only the rows in view: scroll it through)."""
    seen, body = {}, out.locator(".ks-body").first
    height = body.evaluate("b => b.scrollHeight")
    for top in range(0, height + 1, 200):
        body.evaluate(f"b => {{ b.scrollTop = {top}; }}")
        page = out.page
        page.wait_for_timeout(50)
        for row in out.locator(".ks-row.ks-kernel").all():
            seen[row.get_attribute("data-name")] = int(row.locator(".ks-cell:nth-child(4)").inner_text().replace(",", ""))
    return sum(seen.values())


def test_the_live_widget_fetches_the_window_chosen(lab, page, monkeypatch):
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 40)       # as the notebook sets it in its kernel
    first = view.view_model(rep)[0]["window"]
    ov = first["overview"]
    lab.open(page, "windowed_report.ipynb")
    wait_idle(page)
    out = run_cell(page, 0).locator(".jp-OutputArea-output")
    chooser = out.locator(".ks-window")
    chooser.wait_for(timeout=60_000)
    assert _shown(chooser) == pytest.approx((ov["start_us"], first["until_us"]))
    assert out.locator(".ks-win-prev").is_disabled() and not out.locator(".ks-win-next").is_disabled()
    # "later": the window that starts where this one ends, from the kernel.
    out.locator(".ks-win-next").click()
    second = view.view_model(rep, window=(first["until_us"], None))[0]
    _wait_window(page, out, first["until_us"])
    assert _shown(out.locator(".ks-window")) == pytest.approx((first["until_us"], second["window"]["until_us"]))
    assert out.locator(".ks-notes li").last.inner_text() == second["notes"][-1]
    assert "This view holds " in second["notes"][-1] and " to " in second["notes"][-1]
    assert _launches_in_table(out) == second["window"]["launches"] > 0
    # The headline figures stay the whole report's.
    assert "74" in out.locator(".ks-tile-value").all_inner_texts()
    # On the Timeline tab, a range dragged on the overview strip: that window, the tab kept.
    out.locator(".ks-tab[data-tab='Timeline']").click()
    box = out.locator(".ks-win-strip").bounding_box()
    page.mouse.move(box["x"] + 0.6 * box["width"], box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 0.8 * box["width"], box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    span = ov["end_us"] - ov["start_us"]
    lo = ov["start_us"] + 0.6 * span
    page.wait_for_function(
        "([el, f]) => { const c = el.querySelector('.ks-window'); return c && Math.abs(parseFloat(c.dataset.fromUs) - f) < 0.01 * f; }",
        arg=[out.element_handle(), lo], timeout=60_000)
    got_from, got_until = _shown(out.locator(".ks-window"))
    # The range dragged (to a pixel), or less where the budget cuts it.
    assert got_until == pytest.approx(ov["start_us"] + 0.8 * span, rel=0.01) or got_until < ov["start_us"] + 0.8 * span
    want = view.view_model(rep, window=(got_from, got_until))[0]
    assert out.locator(".ks-notes li").last.inner_text() == want["notes"][-1]
    assert out.locator(".ks-tab[data-tab='Timeline']").get_attribute("aria-selected") == "true"
    assert out.locator(".ks-panel[data-panel='Timeline'] .ks-timeline, .ks-panel[data-panel='Timeline'] canvas").count()
    # The longest idle gap: a window that holds its start.
    gap = ov["gaps"][0]
    out.locator(".ks-win-gaps").select_option("0")
    page.wait_for_function(
        "([el, s]) => { const c = el.querySelector('.ks-window'); return c && parseFloat(c.dataset.fromUs) <= s"
        " && parseFloat(c.dataset.untilUs) > s; }", arg=[out.element_handle(), gap["start_us"]], timeout=60_000)
    # A kernel selected in the table: the window from its next launch, the kernel still selected.
    out.locator(".ks-tab[data-tab='Kernels']").click()
    row = out.locator(".ks-row.ks-kernel").first
    name = row.get_attribute("data-name")
    row.click()
    here = _shown(out.locator(".ks-window"))[0]
    want = view.kernel_window(rep, name, here)[0]
    out.locator(".ks-win-kernel").click()
    _wait_window(page, out, want)
    assert out.locator(".ks-row.ks-kernel.ks-selected, .ks-row.ks-kernel[aria-selected='true']").count() >= 1
    assert page.errors == []


def _zoomed_and_marked(out, view_us, mark_us):
    """The Timeline tab shows ``view_us`` with ``mark_us`` the selected range (as the view
    prints them: units.fmt_us), and its lanes hold launches."""
    assert out.locator(".ks-tab[data-tab='Timeline']").get_attribute("aria-selected") == "true"
    info = out.locator(".ks-timeline-info").inner_text()
    assert f"{fmt_us(view_us[0])} – {fmt_us(view_us[1])}" in info, info
    bar = out.locator(".ks-timeline-selection")
    assert bar.is_visible()
    assert bar.locator(".ks-sel-duration").inner_text() == fmt_us(mark_us[1] - mark_us[0])
    assert f"({fmt_us(mark_us[0])} – {fmt_us(mark_us[1])})" in bar.inner_text()


def test_evidence_and_gaps_outside_the_window_fetch_it_then_zoom_and_mark(lab, page, monkeypatch):
    """On the second window of a report too big for one view, the first fix's evidence (the
    longest wait on the host, in the first part of the trace) fetches the window that holds it,
    then zooms to it and marks it; a longest idle gap chosen is zoomed to and marked too."""
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 40)       # as the notebook sets it in its kernel
    first = view.view_model(rep)[0]["window"]
    link = what_to_fix(rep.findings, rep.wall_time_us)[0]["link"]
    assert "longest wait on the host" in link["label"] and link["mark_end_us"] < first["until_us"]
    lab.open(page, "windowed_report.ipynb")
    wait_idle(page)
    out = run_cell(page, 0).locator(".jp-OutputArea-output")
    out.locator(".ks-window").wait_for(timeout=60_000)
    out.locator(".ks-win-next").click()
    _wait_window(page, out, first["until_us"])
    assert first["until_us"] > link["mark_start_us"]      # the evidence is not in this window
    out.locator(".ks-fix-evidence[data-view='timeline']").first.click()
    page.wait_for_function(
        "([el, a, b]) => { const c = el.querySelector('.ks-window'); return c && !c.classList.contains('ks-win-loading')"
        " && parseFloat(c.dataset.fromUs) <= a && parseFloat(c.dataset.untilUs) >= b; }",
        arg=[out.element_handle(), link["mark_start_us"], link["mark_end_us"]], timeout=60_000)
    got_from, _ = _shown(out.locator(".ks-window"))
    want = view.view_model(rep, window=(got_from, None))[0]
    assert out.locator(".ks-notes li").last.inner_text() == want["notes"][-1]
    _zoomed_and_marked(out, (link["start_us"], link["end_us"]), (link["mark_start_us"], link["mark_end_us"]))
    # A longest idle gap, chosen from the Kernels tab: its window, the gap zoomed to and marked.
    out.locator(".ks-tab[data-tab='Kernels']").click()
    gap = first["overview"]["gaps"][1]
    out.locator(".ks-win-gaps").select_option("1")
    page.wait_for_function(
        "([el, s]) => { const c = el.querySelector('.ks-window'); return c && !c.classList.contains('ks-win-loading')"
        " && parseFloat(c.dataset.fromUs) <= s && parseFloat(c.dataset.untilUs) > s"
        " && el.querySelector('.ks-timeline-selection'); }",
        arg=[out.element_handle(), gap["start_us"]], timeout=60_000)
    end = gap["start_us"] + gap["duration_us"]
    _zoomed_and_marked(out, (gap["start_us"], end), (gap["start_us"], end))
    assert page.errors == []


def test_a_trace_file_tab_fetches_the_window_from_the_server(lab, page):
    """A trace past the view's budget (launch_bound recorded on the H200, tiled 26 times: 52,000
    launches, 104,000 host spans) opens on its first window, and the next comes from the server."""
    path = _tile(DATA / "launch_bound.pt.trace.json.gz", lab.root / "big_launch_bound.pt.trace.json", 26)
    rep = ks.load(path, progress=False)
    first = view.view_model(rep)[0]["window"]
    assert first is not None and first["launches"] < len(rep.kernels) == 52_000
    lab.shutdown_kernels()
    lab.open(page, path.name)
    tab = page.locator(".ks-lab-file")
    chooser = tab.locator(".ks-window")
    chooser.wait_for(timeout=60_000)
    assert _shown(chooser)[1] == pytest.approx(first["until_us"])
    tab.locator(".ks-win-next").click()
    second = view.view_model(rep, window=(first["until_us"], None))[0]
    _wait_window(page, tab, first["until_us"])
    assert _shown(tab.locator(".ks-window"))[1] == pytest.approx(second["window"]["until_us"])
    assert tab.locator(".ks-notes li").last.inner_text() == second["notes"][-1]
    assert tab.locator(".ks-win-prev").is_enabled()
    assert lab.kernels() == []      # the server read it; no kernel was started
    assert page.errors == []
    path.unlink()


def test_a_saved_notebook_keeps_its_window_without_a_kernel(lab, page, tmp_path):
    """Run, saved and opened by a reader with no kernel: the report shows the window it was
    saved with, and choosing another says what it needs."""
    nb = nbformat.read(NOTEBOOKS / "windowed_report.ipynb", as_version=4)
    (tmp_path / "mlp_train.pt.trace.json.gz").write_bytes((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    for key in ("widgets", "kernelspec", "language_info"):
        nb.metadata.pop(key, None)
    nbformat.write(nb, lab.root / "saved_window.ipynb")
    lab.shutdown_kernels()
    lab.open(page, "saved_window.ipynb")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    out = page.locator(".jp-OutputArea-output .ks-lab-static")
    chooser = out.locator(".ks-window")
    chooser.wait_for(timeout=30_000)
    mime = "application/vnd.kernelscope.report.v1+json"
    header = read_payload(next(o["data"][mime] for o in nb.cells[0].outputs if mime in o.get("data", {})))[0]
    assert header["window"]["launches"] + header["window"]["copies"] == 40
    assert _shown(chooser)[1] == pytest.approx(header["window"]["until_us"])
    out.locator(".ks-win-next").click()
    assert "keeps the window it was saved with" in out.locator(".ks-win-status").inner_text()
    assert _shown(out.locator(".ks-window"))[1] == pytest.approx(header["window"]["until_us"])
    assert lab.kernels() == []
    assert page.errors == []
