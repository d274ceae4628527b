"""The memory lane under the timeline (standalone bundle, chromium at 1400x900) on the H200 training
recordings: allocated and reserved over time as the payload's curve, the peak marked, the zoom
followed, a hover saying the allocator's figures as Python formats them."""
import json

import numpy as np
import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.units import fmt_bytes
from kernelscope.view.bundle import mime_payload
from tests.ui.test_view_page import serve_page, show

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    reps = {"lm": ks.load(DATA / "training" / "lm_steps.pt.trace.json.gz"),
            "leak": ks.load(DATA / "training" / "leak_steps.pt.trace.json.gz"),
            "mlp": ks.load(DATA / "mlp_train.pt.trace.json.gz")}
    for name, rep in reps.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url, reps


@pytest.fixture
def page900(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


def _x_of(page, t):
    return page.evaluate(f"(() => {{ const m = window.ctl.memory; "
                         f"return 112 + ({t} - m.view[0]) / (m.view[1] - m.view[0]) * (m.width - 112); }})()")


def test_the_memory_lane_draws_allocated_and_reserved(site, page900):
    url, reps = site
    rep, page = reps["lm"], page900
    show(page, url, "lm")
    page.locator(".ks-tab[data-tab='Timeline']").click()
    lane = page.locator(".ks-mem")
    lane.wait_for()
    m = rep.memory
    assert lane.get_attribute("data-points") == str(len(m.series))
    assert page.evaluate("window.ctl.memory.drawn") > 0
    assert page.evaluate("window.ctl.memory.lane.label") == "memory cuda:0"
    assert "peak 1022.2 MiB allocated on cuda:0" in page.locator(".ks-mem-note").inner_text()
    # It sits under the timeline, on its time axis, and follows its zoom.
    tl, box = page.locator(".ks-timeline-canvas").bounding_box(), page.locator(".ks-mem-canvas").bounding_box()
    assert box["y"] >= tl["y"] + tl["height"] - 1 and box["width"] == pytest.approx(tl["width"], abs=2)
    page.locator(".ks-btn[title='zoom in']").click()
    assert page.evaluate("JSON.stringify(window.ctl.memory.view) === JSON.stringify(window.ctl.timeline.view)")
    page.locator(".ks-btn[title='show everything']").click()
    # Zoomed to the peak, hovering just after it says its figures, as Python writes them.
    page.evaluate(f"window.ctl.timeline.showRange({m.peak_us - 20}, {m.peak_us + 20}, {{select: false}})")
    page.mouse.move(box["x"] + _x_of(page, m.peak_us + 0.5), box["y"] + 20)
    tip = page.locator(".ks-mem .ks-tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert f"allocated: {fmt_bytes(m.peak_bytes)}" in text and f"reserved: {fmt_bytes(m.reserved_at_peak)}" in text
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".ks-btn[title='show everything']").click()
    page.screenshot(path=str(ARTIFACTS / "memory_lane_lm.png"))
    assert not page.errors, page.errors


def test_a_leak_climbs_and_a_trace_without_memory_has_no_lane(site, page900):
    url, reps = site
    page = page900
    show(page, url, "leak")
    page.locator(".ks-tab[data-tab='Timeline']").click()
    page.locator(".ks-mem").wait_for()
    m = reps["leak"].memory
    box = page.locator(".ks-mem-canvas").bounding_box()
    # Just before the ends of the second and the last step (zoomed there): the curve's value then.
    s = m.series
    seen = []
    for t in (float(m.steps["end_us"].iloc[1]) - 2, float(m.steps["end_us"].iloc[-1]) - 2):
        page.evaluate(f"window.ctl.timeline.showRange({t - 10}, {t + 10}, {{select: false}})")
        page.mouse.move(box["x"] + _x_of(page, t), box["y"] + 20)
        want = int(s["allocated"].iloc[int(np.searchsorted(s["time_us"], t, side="right")) - 1])
        assert f"allocated: {fmt_bytes(want)}" in page.locator(".ks-mem .ks-tip").inner_text()
        seen.append(want)
    assert seen[1] - seen[0] >= 6 * 64 * 2**20      # six more steps' logits kept
    page.locator(".ks-btn[title='show everything']").click()
    page.screenshot(path=str(ARTIFACTS / "memory_lane_leak.png"))
    show(page, url, "mlp")
    page.locator(".ks-tab[data-tab='Timeline']").click()
    page.locator(".ks-timeline-canvas").wait_for()
    assert page.locator(".ks-mem").count() == 0
    assert page.evaluate("window.ctl.memory") is None
    assert not page.errors, page.errors
