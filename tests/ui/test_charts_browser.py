"""The altair charts of rep.chart(...) and comparison.chart() in a real JupyterLab, offline:
every request that leaves 127.0.0.1 is refused and recorded. JupyterLab draws them with the
Vega it bundles (its Vega-Lite 5 renderer) and writes a PNG of each into the output, so the
saved notebook shows them where no JavaScript runs (GitHub)."""
import json

import pytest
from conftest import ARTIFACTS
from test_widget_browser import run_cell, wait_idle

pytestmark = pytest.mark.browser
CHARTS = 5
# What Vega draws into (canvas by default, svg.marks with the svg renderer), not the menu icon.
MARKS = ".jp-RenderedVegaLite canvas, .jp-RenderedVegaLite svg.marks"


def test_altair_charts_render_offline_in_jupyterlab(lab, page):
    outside = []

    def only_local(route):
        url = route.request.url
        if url.startswith((lab.url, "data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", only_local)
    lab.open(page, "charts.ipynb")
    wait_idle(page)
    for i in range(CHARTS):
        cell = run_cell(page, i)
        cell.locator(MARKS).first.wait_for(timeout=60_000)
        wait_idle(page)
    drawn = page.locator(MARKS)
    assert drawn.count() >= CHARTS
    for j in range(drawn.count()):
        box = drawn.nth(j).bounding_box()
        assert box["width"] > 150 and box["height"] > 60, box
    assert page.locator(".jp-RenderedVegaLite .error, .vega-embed .error").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "altair_charts.png"), full_page=True)
    # Saved: each chart's output carries the PNG JupyterLab rendered, beside the spec.
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    nb = json.loads((lab.root / "charts.ipynb").read_text())
    outs = [o for c in nb["cells"] for o in c["outputs"] if o["output_type"] == "execute_result"]
    assert len(outs) == CHARTS
    for o in outs:
        assert o["data"]["application/vnd.vegalite.v5+json"]["$schema"].endswith("/v5.json")
        assert o["data"]["image/png"]
    assert outside == [], outside
    assert not page.errors, page.errors
