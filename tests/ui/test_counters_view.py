"""Hardware counters and live stalls in the report view (standalone bundle, chromium): the
utilization strip under the timeline follows its zoom, and a kernel's details show its measured
counters and warp stalls.

The report is the H200 recording's step with its PM samples (tests/data/counters/), and the
stalls Proton sampled from the same workload's step in another run of the recording script
(as ``--stalls`` samples a second run of the cell).
"""
import json

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.analysis.counters import kernel_counters
from kernelscope.capture.stalls import attach_stalls
from kernelscope.trace.proton import read_hatchet
from kernelscope.view.bundle import mime_payload
from tests.analysis.test_counters import pm_report
from tests.ui.test_view_page import serve_page, show

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    rep = pm_report()
    attach_stalls(rep.trace, read_hatchet(DATA / "counters" / "proton_workload.hatchet"))
    rep = ks.Report(rep.trace)
    (root / "pm.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url, rep


def test_strip_under_the_timeline(site, page):
    url, rep = site
    show(page, url, "pm")
    page.locator(".ks-tab[data-tab='Timeline']").click()
    strip = page.locator(".ks-util")
    strip.wait_for()
    assert strip.get_attribute("data-samples") == str(len(rep.metrics))
    assert "measured by CUPTI PM sampling" in strip.inner_text().lower() or "Measured by CUPTI PM sampling" in strip.inner_text()
    labels = page.evaluate("window.ctl.strip.tracks.map(t => t.label)")
    assert labels == ["SM active", "tensor pipe", "DRAM throughput", "DRAM bandwidth"]
    assert page.evaluate("window.ctl.strip.drawn") > 0
    # the strip follows the timeline's zoom and shares its x mapping
    page.locator(".ks-btn[title='zoom in']").click()
    assert page.evaluate("JSON.stringify(window.ctl.strip.view) === JSON.stringify(window.ctl.timeline.view)")
    page.locator(".ks-btn[title='show everything']").click()
    # hovering the strip over the first GEMM shows its tensor share
    k = rep.kernels
    gemm = k[k["backend"] == "cuBLAS"].iloc[0]
    t = float(gemm["start_us"] + gemm["duration_us"] / 2)
    x = page.evaluate(f"(() => {{ const s = window.ctl.strip; return 112 + ({t} - s.view[0]) / (s.view[1] - s.view[0]) * (s.width - 112); }})()")
    box = page.locator(".ks-util-canvas").bounding_box()
    page.mouse.move(box["x"] + x, box["y"] + 40)
    tip = page.locator(".ks-util .ks-tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert "tensor pipe: 9" in text and "measured by CUPTI PM sampling" in text
    # a kernel's tooltip in its lane carries its measured shares
    page.screenshot(path=str(ARTIFACTS / "view_counters_strip.png"), full_page=True)
    assert not page.errors, page.errors


def test_details_show_counters_and_stalls(site, page):
    url, rep = site
    show(page, url, "pm")
    gemm = rep.kernels[rep.kernels["backend"] == "cuBLAS"]["name"].iloc[0]
    page.evaluate(f"window.ctl.setSelection({json.dumps([gemm])})")
    block = page.locator(".ks-counters")
    block.wait_for()
    assert "measured by CUPTI PM sampling" in block.inner_text()
    tensor = page.locator(".ks-counters tr[data-metric='tensor_pct'] td").inner_text()
    # Time-weighted over the selected launches in the browser, as kernel_counters weighs them.
    weighted = kernel_counters(rep.kernels).set_index("name").loc[gemm, "tensor_pct"]
    assert tensor.strip() == f"{weighted:.1f}%"
    assert "2 launches time-weighted" in block.inner_text()
    stalls = page.locator(".ks-stalls")
    assert "Proton PC sampling (sampled live)" in stalls.inner_text()
    assert page.locator(".ks-stalls tr").first.get_attribute("data-reason") == "long_scoreboard"
    assert "Usually helps" in stalls.inner_text()
    page.screenshot(path=str(ARTIFACTS / "view_counters_details.png"), full_page=True)
    assert not page.errors, page.errors
