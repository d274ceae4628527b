"""The Steps tab in chromium at 1400x900 (js/src/view/steps.js): shown only for a report with
steps, its words, bars and rows as Python computed them (panels/steps.py), on the H200 LM trace."""
import json

import pytest
from conftest import ARTIFACTS, DATA
from test_view_page import serve_page, show

import kernelscope as ks
from kernelscope.panels import report_panels
from kernelscope.view.bundle import mime_payload

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lm():
    return ks.load(DATA / "training" / "lm_steps.pt.trace.json.gz")


@pytest.fixture(scope="module")
def site(tmp_path_factory, lm):
    root = tmp_path_factory.mktemp("steps")
    (root / "lm.json").write_text(json.dumps(mime_payload(lm)))
    (root / "mlp.json").write_text(json.dumps(mime_payload(ks.load(DATA / "mlp_train.pt.trace.json.gz"))))
    with serve_page(root) as url:
        yield url


def test_steps_tab_draws_what_python_computed(site, page, lm):
    page.set_viewport_size({"width": 1400, "height": 900})
    show(page, site, "lm")
    st = report_panels(lm).steps
    tab = page.locator(".ks-tab[data-tab='Steps']")
    assert tab.inner_text() == "Steps"
    tab.click()
    panel = page.locator(".ks-panel[data-panel='Steps']")
    assert panel.locator(".ks-steps-lines li").all_inner_texts() == st["lines"]
    assert panel.locator(".ks-steps-chart g[data-step]").count() == 12
    # a bar's stacked parts are the step's non-zero parts, in Python's colours
    fills = panel.locator(".ks-steps-chart g[data-step='3'] rect").evaluate_all("rs => rs.map(r => r.getAttribute('fill'))")
    assert fills == [q["colour"] for q in st["parts"] if st["rows"][0][q["key"] + "_us"] > 0]
    rows = panel.locator(".ks-steps-table tbody tr")
    assert rows.count() == 12
    first = rows.first.locator("td").all_inner_texts()
    assert first[:3] == ["ProfilerStep#3", "slowest", "31.78 ms"]
    assert not page.errors
    box = panel.locator(".ks-steps-chart").bounding_box()
    assert box["width"] <= 1400
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "steps_tab.png"))


def test_no_steps_no_tab(site, page):
    show(page, site, "mlp")
    assert page.locator(".ks-tab[data-tab='Steps']").count() == 0
    assert not page.errors
