"""The first screen, the findings' evidence and the comparison view in chromium, on a plain page
(the standalone bundle: the same view code as the widget and the JupyterLab renderer), on real
H200 recordings."""
import json
import re

import pytest
from conftest import ARTIFACTS, DATA
from test_view_page import serve_page, show

import kernelscope as ks
from kernelscope.view.bundle import mime_payload

pytestmark = pytest.mark.browser
WILD = DATA / "wild"


@pytest.fixture(scope="module")
def reports():
    return {"llama": ks.load(WILD / "llama_train.pt.trace.json.gz"),
            "gpt2": ks.load(WILD / "gpt2_infer.pt.trace.json.gz"),
            "cupy_libs": ks.load(WILD / "cupy_libs.pt.trace.json.gz"),
            "jax_cell": ks.load(DATA / "trust" / "jax_cell.ksreport.json.gz")}


@pytest.fixture(scope="module")
def site(tmp_path_factory, reports):
    root = tmp_path_factory.mktemp("first-screen")
    for name, rep in reports.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    torch = pytest.importorskip("torch")
    with ks.profile() as p:                      # a CPU-only capture, as on this machine
        torch.ones(64, 64) @ torch.ones(64, 64)
    (root / "cpu.json").write_text(json.dumps(mime_payload(p.report)))
    c = ks.compare(DATA / "mlp_train.pt.trace.json.gz", DATA / "attention.pt.trace.json.gz")
    (root / "compare.json").write_text(json.dumps(c._repr_mimebundle_()["application/vnd.kernelscope.report.v1+json"]))
    c = ks.compare(*(DATA / "advice" / f"item_in_loop.{s}.repeats.ksreport.json.gz" for s in ("before", "after")))
    (root / "compare_repeats.json").write_text(json.dumps(c._repr_mimebundle_()["application/vnd.kernelscope.report.v1+json"]))
    with serve_page(root) as url:
        yield url


def current_tab(page):
    return page.locator(".ks-tab[aria-selected='true']").get_attribute("data-tab")


def test_first_screen_lists_what_to_fix(site, page, reports):
    from kernelscope.analysis.priorities import what_to_fix
    rep = reports["llama"]
    fixes = what_to_fix(rep.findings, rep.wall_time_us)
    show(page, site, "llama")
    items = page.locator(".ks-fixes .ks-fix")
    assert items.count() == len(fixes)
    first = items.first
    assert first.locator(".ks-fix-cost").inner_text() == "24.77 ms"
    assert first.locator(".ks-fix-share").inner_text() == "50% of wall time"
    assert first.locator(".ks-fix-title").inner_text() == rep.findings[0].title
    assert fixes[0]["cause"] in first.locator(".ks-fix-cause").inner_text()
    assert fixes[0]["fix"] in first.locator(".ks-fix-fix").inner_text()
    # The tiles say which clock and what is counted.
    labels = page.locator(".ks-tile-label").all_inner_texts()
    assert "wall time · profiler span" in labels and "kernel launches" in labels and "copies + memsets" in labels
    tiles = dict(zip(labels, page.locator(".ks-tile-value").all_inner_texts()))
    assert tiles["kernel launches"] == "645" and tiles["copies + memsets"] == "28"
    # Its evidence link opens the timeline at the longest wait on the host.
    link = fixes[0]["link"]
    first.locator(".ks-fix-evidence").click()
    assert current_tab(page) == "Timeline"
    view = page.evaluate("window.ctl.timeline.view")
    assert view == pytest.approx([link["start_us"], link["end_us"]])
    info = page.locator(".ks-timeline-info").inner_text()
    ms = lambda us: f"{us / 1e3:.2f} ms"  # noqa: E731
    assert ms(link["start_us"]) in info and ms(link["end_us"]) in info
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "first_screen_llama.png"), full_page=True)
    assert not page.errors, page.errors


def test_kernel_evidence_filters_the_table(site, page, reports):
    from kernelscope.analysis.priorities import what_to_fix
    rep = reports["gpt2"]
    fixes = what_to_fix(rep.findings, rep.wall_time_us)
    i = next(n for n, x in enumerate(fixes) if x["kind"] == "gemm_fallback")
    (name,) = fixes[i]["link"]["names"]
    show(page, site, "gpt2")
    page.locator(".ks-fixes .ks-fix").nth(i).locator(".ks-fix-evidence").click()
    assert current_tab(page) == "Kernels"
    rows = page.locator(".ks-row.ks-kernel")
    assert rows.count() == 1 and rows.first.get_attribute("data-name") == name
    assert rows.first.get_attribute("aria-selected") == "true"
    assert re.match(rf"1 of {rep.kernels['name'].nunique()} kernel rows", page.locator(".ks-table-status").inner_text())
    page.locator(".ks-details .ks-fullname").wait_for()
    assert page.locator(".ks-details .ks-fullname").inner_text() == name
    assert not page.errors, page.errors


def test_finding_in_full_and_evidence_in_units(site, page, reports):
    show(page, site, "llama")
    page.locator(".ks-fixes .ks-fix").first.locator(".ks-fix-more").click()
    assert current_tab(page) == "Findings"
    li = page.locator(".ks-finding[data-finding='0']")
    assert "ks-finding-shown" in li.get_attribute("class")
    assert li.locator("details").get_attribute("open") is not None
    rows = dict(zip(li.locator(".ks-evidence th").all_inner_texts(), li.locator(".ks-evidence td").all_inner_texts()))
    assert rows["busy share"] == "13.0%" and rows["idle host"] == "38.44 ms"
    text = page.locator(".ks-findings").inner_text()
    assert not re.search(r"\d\.\d{5,}", text), "a raw float in the evidence"
    assert '{"' not in text and "busy_share" not in text
    assert not page.errors, page.errors


def test_widget_says_what_text_and_html_say(site, page, reports):
    """Issue 28: one list for all three views; the merged copy item's note and the idle GPU's
    busy tile (of the wall time) show in the browser as in the text."""
    from kernelscope.render.text import report_text
    rep = reports["cupy_libs"]
    df = rep.what_to_fix()
    show(page, site, "cupy_libs")
    items = page.locator(".ks-fixes .ks-fix")
    assert items.all_inner_texts() and page.locator(".ks-fix-title").all_inner_texts() == df["title"].tolist()
    notes = [n for n in df["note"] if n]
    assert notes and page.locator(".ks-fix-note").all_inner_texts() == [f"Note{n}" for n in notes] \
        or [t.replace("Note", "", 1).strip() for t in page.locator(".ks-fix-note").all_inner_texts()] == notes
    assert all(f"note:  {n}" in report_text(rep) for n in notes)
    show(page, site, "jax_cell")
    tiles = dict(zip(page.locator(".ks-tile-label").all_inner_texts(), page.locator(".ks-tile-value").all_inner_texts()))
    assert tiles["GPU busy"] == "0.2%"
    assert page.locator(".ks-fix-title").first.inner_text().startswith("The GPU was idle 99.8%")
    # The completeness ledger's line is Python's text (its JAX copy has no launch call Kineto recorded).
    line = reports["jax_cell"].completeness.line
    assert "missing: 1 kernels or copies with no launch" in line
    assert page.locator(".ks-ledger").inner_text() == f"recording: {line}"
    assert f"recording: {line}" in report_text(reports["jax_cell"])
    assert not page.errors, page.errors


def test_cpu_only_report_opens_on_cpu_ops(site, page):
    show(page, site, "cpu")
    assert current_tab(page) == "CPU ops"
    assert page.locator(".ks-panel[data-panel='CPU ops']").is_visible()
    assert any(t.startswith("aten::matmul") for t in page.locator(".ks-ops tbody tr").all_inner_texts())
    assert page.locator(".ks-fixes").inner_text() == "No findings."
    assert not page.errors, page.errors


def test_compare_view_sort_filter_named_sides(site, page):
    c = ks.compare(DATA / "mlp_train.pt.trace.json.gz", DATA / "attention.pt.trace.json.gz")
    show(page, site, "compare")
    assert page.locator(".ks-compare-side").all_inner_texts() == list(c.labels)
    heads = page.locator(".ks-compare-table th").all_inner_texts()
    assert heads[3:5] == list(c.labels)
    rows = page.locator(".ks-compare-table tbody tr")
    assert rows.count() == len(c.kernels) == 29                     # every row, no cap
    assert page.locator(".ks-compare-warning").inner_text().startswith("The two runs share 3 of 29 kernels")
    # The first run's advice, re-measured: one row per item, its verdict in Python's words.
    advice = page.locator(".ks-compare-advice tbody tr")
    assert advice.count() == len(c.advice) > 0
    assert page.locator(".ks-compare-advice .ks-cmp-verdict").all_inner_texts() == c.advice["verdict"].tolist()
    assert "ks-num" in (page.locator(".ks-compare-advice tbody td").nth(3).get_attribute("class") or "")
    assert "±95%" not in heads                                      # one run each side: no interval column

    def col(key):
        return page.locator(f".ks-compare-table tbody td[data-col='{key}']").all_inner_texts()

    # New kernels: "–" on the side they did not run, never "0.0 us".
    page.locator(".ks-status-filter").select_option("new")
    assert rows.count() == len(c.new) == 4
    assert set(col("before")) == {"–"} and set(col("ratio")) == {"–"}
    assert all(t.startswith("– → ") for t in col("launches")) and "0.0 us" not in col("after")
    page.locator(".ks-status-filter").select_option("gone")
    assert set(col("after")) == {"–"} and rows.count() == 22
    page.locator(".ks-status-filter").select_option("")

    # Sort by change: largest first, then smallest first.
    def us(t):
        v = float(re.sub(r"[^\d.]", "", t))
        v *= 1000 if "ms" in t else 1
        return -v if t.startswith("-") else v
    page.locator(".ks-compare-table th[data-col='change']").click()
    got = [us(t) for t in col("change")]
    assert got == sorted(got, reverse=True) and got[0] == pytest.approx(535.9, abs=0.05)
    page.locator(".ks-compare-table th[data-col='change']").click()
    got = [us(t) for t in col("change")]
    assert got == sorted(got)
    page.locator(".ks-compare-table th[data-col='kernel']").click()
    names = [r.split("\t")[0].replace(" ≈", "") for r in rows.all_inner_texts()]
    assert names == sorted(names, key=str.lower)

    # Filter by text.
    page.locator(".ks-compare-kernels .ks-filter").fill("foreach")
    assert rows.count() == int(c.kernels["short_name"].str.contains("foreach").sum()) > 0
    assert all("foreach" in t for t in rows.all_inner_texts())
    assert page.locator(".ks-compare-kernels .ks-table-status").inner_text().endswith("(filtered)")
    page.locator(".ks-compare-kernels .ks-filter").fill("")

    # The approximate match is marked and explained.
    badge = page.locator(".ks-compare-table .ks-cmp-badge")
    assert badge.count() == 1 and "matched by readable name and backend" in badge.get_attribute("title")
    assert "≈" in page.locator(".ks-compare-legend").inner_text()
    # Names left-aligned, number cells on one line.
    style = page.evaluate("""() => {
      const row = [...document.querySelectorAll('.ks-compare-table tbody tr')][0];
      const name = row.querySelector('.ks-cmp-name'), num = row.querySelector('td[data-col=before]');
      const lh = parseFloat(getComputedStyle(num).lineHeight) || 16;
      return {align: getComputedStyle(name).textAlign, wrap: getComputedStyle(num).whiteSpace,
              lines: num.getBoundingClientRect().height / lh};
    }""")
    assert style["align"] == "left" and style["wrap"] == "nowrap" and style["lines"] < 1.9
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare_view.png"), full_page=True)
    assert not page.errors, page.errors


def test_compare_view_with_repeats_shows_intervals_and_verdicts(site, page):
    """Five repeats each side (an .item() per matmul, then the sum kept on the GPU): each kernel's
    95% interval in its own column, the totals' verdicts, the advice re-measured as real."""
    c = ks.compare(*(DATA / "advice" / f"item_in_loop.{s}.repeats.ksreport.json.gz" for s in ("before", "after")))
    show(page, site, "compare_repeats")
    heads = page.locator(".ks-compare-table th").all_inner_texts()
    assert "±95%" in heads and heads.index("±95%") == heads.index("Change") + 1
    cis = page.locator(".ks-compare-table tbody td[data-col='ci']").all_inner_texts()
    assert len(cis) == len(c.kernels) and all(t.startswith("±") for t in cis)
    status = page.locator(".ks-compare-table tbody tr[data-status='slower'] .ks-cmp-status")
    assert status.count() == 1 and "95% interval of the change: ±" in status.get_attribute("title")
    wall = page.locator(".ks-compare-overall tr[data-metric='wall_us'] td").all_inner_texts()
    assert wall[-1].startswith("±") and wall[-1].endswith("real")
    assert page.locator(".ks-compare-advice .ks-cmp-verdict").all_inner_texts() == c.advice["verdict"].tolist()
    # The interval column still leaves the table inside its scroll box.
    table = page.locator(".ks-compare-table").bounding_box()
    scroll = page.locator(".ks-compare-scroll").bounding_box()
    assert table["width"] <= scroll["width"] + 0.5
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare_repeats_view.png"), full_page=True)
    assert not page.errors, page.errors
