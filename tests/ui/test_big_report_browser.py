"""A report past the view's launch budget in a real JupyterLab + kernel, from Debian chromium:
the view opens with the launches of the trace's first part, says so, and keeps the whole
report's headline figures. (The notebook lowers the budget so that a real recording passes it.)"""

import pytest
from conftest import DATA
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks
from kernelscope.view import report as view

pytestmark = pytest.mark.browser


def test_windowed_report_says_what_it_holds(lab, page, monkeypatch):
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 40)
    w = view.view_model(rep)[0]["window"]
    lab.open(page, "windowed_report.ipynb")
    wait_idle(page)
    out = run_cell(page, 0).locator(".jp-OutputArea-output")
    out.locator(".ks-root").wait_for(timeout=60_000)
    note = out.locator(".ks-notes li", has_text="This view holds the trace's first")
    note.wait_for(timeout=30_000)
    assert f"{w['launches']:,} of 74 kernel launches" in note.inner_text()
    # The launches tile counts the whole report; the table holds the window's launches.
    assert "74" in out.locator(".ks-tile-value").all_inner_texts()
    # Every kernel row (the table draws only the rows in view: scroll it through).
    seen, body = {}, out.locator(".ks-body").first
    height = body.evaluate("b => b.scrollHeight")
    for top in range(0, height + 1, 200):
        body.evaluate(f"b => {{ b.scrollTop = {top}; }}")
        page.wait_for_timeout(50)
        for row in out.locator(".ks-row.ks-kernel").all():
            seen[row.get_attribute("data-name")] = int(row.locator(".ks-cell:nth-child(4)").inner_text().replace(",", ""))
    assert sum(seen.values()) == w["launches"] < 74
    assert page.errors == []
