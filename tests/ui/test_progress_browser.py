"""The load progress bar in a real JupyterLab + kernel, driven from Debian chromium: the bar is
drawn under the cell while the trace loads, and once the load is done nothing of it is left."""
import pytest
from test_widget_browser import run_cell, wait_idle

pytestmark = pytest.mark.browser

# Every element added to a cell's output, kept even if it is gone by the time we look.
WATCH = """() => {
  window.ksAdded = [];
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType !== 1) continue;
      if (n.matches('.widget-hprogress') || n.querySelector('.widget-hprogress'))
        window.ksAdded.push(n.closest('.jp-OutputArea-output') ? 'bar in output' : 'bar');
    }
  }).observe(document.querySelector('.jp-Notebook'), {childList: true, subtree: true});
}"""


def test_bar_shown_while_loading_then_gone(lab, page):
    lab.open(page, "load_progress.ipynb")
    wait_idle(page)
    page.evaluate(WATCH)
    cell = run_cell(page, 0)
    cell.locator(".jp-OutputArea-output", has_text="LOADED").wait_for(timeout=60_000)
    wait_idle(page)
    assert "bar in output" in page.evaluate("window.ksAdded")
    # Done: no bar, no closed-widget placeholder; the cell shows only what it printed.
    outputs = cell.locator(".jp-OutputArea-output")
    assert cell.locator(".widget-hprogress").count() == 0
    texts = [t.strip() for t in outputs.all_inner_texts() if t.strip()]
    assert len(texts) == 1 and texts[0].startswith("LOADED"), texts
    assert page.errors == []
