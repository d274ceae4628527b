"""Issue 32 in chromium, on real H200 recordings: every table fits a notebook's output area (962 px:
JupyterLab at 1400x900 with the file browser open), and the timeline basics of Perfetto and
Nsight Systems: a properties pane on click (checked against the recording), search by regex
(counted against Python), a legend with swatches, lanes that stay put, range summaries (summed
against Python over the same range).

The page is the standalone bundle (the same view code as the widget and JupyterLab's renderer)."""
import json
import re

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.units import fmt_us
from kernelscope.view.bundle import mime_payload
from kernelscope.view.compare import compare_view_model
from kernelscope.view.vocabulary import vocabulary
from tests.ui.test_view_page import PAGE as BASE_PAGE
from tests.ui.test_view_page import serve_page

pytestmark = pytest.mark.browser
LLAMA = "wild/llama_train.pt.trace.json.gz"
CELL = 962     # the output area's width at 1400 px with JupyterLab's file browser open
PAGE = BASE_PAGE.replace('<body style="width:1300px;margin:8px">\n<div id="root"></div>',
                         f'<body style="margin:8px">\n<div id="root" style="width:{CELL}px"></div>')
assert PAGE != BASE_PAGE


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("width_site")
    reports = {"llama": ks.load(DATA / LLAMA), "counters": ks.load(DATA / "counters" / "live_counters.ksreport.json.gz")}
    for name, rep in reports.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    c = ks.compare(DATA / LLAMA, DATA / "wild" / "gpt2_infer.pt.trace.json.gz")
    (root / "compare.json").write_text(json.dumps(mime_payload(c, compare_view_model(c))))
    try:
        import ncu_report  # noqa: F401
        tri = ks.load_ncu(DATA / "ncu_rep" / "triton_kernels.ncu-rep.xz",
                          kernels_report=ks.load(DATA / "ncu_rep" / "ncu_triton_kernels.pt.trace.json.gz"))
        (root / "triton.json").write_text(json.dumps(mime_payload(tri)))
    except ImportError:
        pass
    with serve_page(root, PAGE) as url:
        yield url, reports, root


def show(page, site, name, tab=None):
    url, reports, _ = site
    page.goto(f"{url}/index.html")
    page.wait_for_function("typeof window.show === 'function'")
    page.evaluate(f"window.show('{name}.json')")
    page.locator(".ks-root").wait_for()
    if tab:
        page.locator(f".ks-tab[data-tab='{tab}']").click()
    return reports.get(name)


# Cells whose text is cut (wider than their box) or wraps onto a second line, among `sel`.
CUT = """(sel) => [...document.querySelectorAll(sel)].filter((e) => e.offsetParent).filter((e) => {
  const lh = parseFloat(getComputedStyle(e).lineHeight) || 16;
  return e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().height > 1.6 * lh + 8;
}).map((e) => e.textContent)"""


def box(page, sel):
    return page.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(sel)}).getBoundingClientRect(); "
                         "return {left: r.left, right: r.right, width: r.width}; })()")


# -- 1. tables at notebook width ---------------------------------------------------------------
def test_cpu_ops_table_fits_and_times_stay_on_one_line(site, page):
    show(page, site, "llama", "CPU ops")
    root = box(page, ".ks-root")
    assert box(page, ".ks-ops")["right"] <= root["right"] + 0.5          # 1009 px in 962 before
    assert page.evaluate(CUT, ".ks-ops td.ks-num") == []                  # "2.58 / ms" before
    assert page.evaluate(CUT, ".ks-ops th") == []
    # The names keep the room the numbers leave.
    assert box(page, ".ks-ops td:first-child")["width"] > 250


def test_compare_table_fits_ratio_status_and_bar_in_view(site, page):
    show(page, site, "compare")
    scroll = box(page, ".ks-compare-scroll")
    assert box(page, ".ks-compare-table")["width"] <= scroll["width"]      # 1237 px before
    for col in ("ratio", "status", "bar"):
        r = box(page, f".ks-compare-table th[data-col='{col}']")
        assert r["right"] <= scroll["right"] + 0.5, col
    assert page.evaluate(CUT, ".ks-compare-table td.ks-num") == []
    # The run names head their columns, cut to fit; whole in the title and the title line.
    th = page.locator(".ks-compare-table th[data-col='before']")
    assert th.inner_text().startswith("llama_train") and "llama_train.pt.trace.json.gz" in th.get_attribute("title")


def test_kernel_table_fits_and_freezes_the_name_when_the_shapes_scroll(site, page):
    show(page, site, "llama")
    hs = box(page, ".ks-hscroll")
    assert box(page, ".ks-head")["width"] <= hs["width"]
    page.locator(".ks-shape-toggle").click()
    # Every value whole: ranges such as "1–128,000" and "19% regs+smem" are not cut.
    assert page.evaluate(CUT, ".ks-row.ks-kernel > .ks-cell:not(.ks-name)") == []
    assert page.evaluate(CUT, ".ks-head .ks-h-label") == []
    # Scrolled to its end, the table shows Regs, Smem and Waves and keeps the Kernel column.
    page.evaluate("(() => { const s = document.querySelector('.ks-hscroll'); s.scrollLeft = s.scrollWidth; s.dispatchEvent(new Event('scroll')); })()")
    page.wait_for_timeout(50)
    for col in ("regs", "smem", "waves"):
        r = box(page, f".ks-head .ks-h-{col}")
        assert hs["left"] <= r["left"] and r["right"] <= hs["right"] + 0.5, col
    name = box(page, ".ks-row.ks-kernel .ks-name")
    assert hs["left"] <= name["left"] <= hs["left"] + 30 and name["width"] >= 150
    # The frozen cell is painted over what scrolls beneath it (an opaque background).
    bg = page.evaluate("getComputedStyle(document.querySelector('.ks-row.ks-kernel .ks-name')).backgroundColor")
    assert bg not in ("rgba(0, 0, 0, 0)", "transparent")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "kernel_table_shapes_962.png"))


def test_deep_dive_roofline_legend_and_sass_lines_fit(site, page):
    _, _, root = site
    if not (root / "triton.json").exists():
        pytest.skip("ncu_report is not installed")
    show(page, site, "triton")
    page.locator(".ks-filter").fill("strided_kernel")
    page.locator(".ks-row.ks-kernel").first.click()
    page.locator(".ks-kd").wait_for()
    page.evaluate("document.querySelectorAll('.ks-kd details').forEach((d) => { d.open = true; })")
    right = box(page, ".ks-root")["right"]
    past = page.evaluate("""(right) => [...document.querySelectorAll('.ks-kd *')].filter((e) => e.getBoundingClientRect().right > right + 1)
        .map((e) => e.textContent.slice(0, 40))""", right)
    assert past == []                                    # the roofline legend ran to 1239 px before
    assert page.locator(".ks-kd-sass > div").count() > 0
    assert page.evaluate("[...document.querySelectorAll('.ks-kd-sass, .ks-kd-code')].filter((e) => e.scrollWidth > e.clientWidth + 1).length") == 0


def test_tables_fit_a_jupyterlab_output_with_the_file_browser_open(lab, page):
    """The same in JupyterLab itself at 1400x900 (the file browser open, as it opens): a saved
    notebook's report and comparison outputs, rendered by the installed extension (built from
    this tree: it fails on an older build, the CPU ops table 1009 px in a 968 px output)."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    c = ks.compare(DATA / LLAMA, DATA / "wild" / "gpt2_infer.pt.trace.json.gz")
    for n, payload in enumerate([mime_payload(ks.load(DATA / LLAMA)), mime_payload(c, compare_view_model(c))]):
        cell = nbformat.v4.new_code_cell(f"out_{n}")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.kernelscope.report.v1+json": payload,
                                                                     "text/plain": "report"})]
        nb.cells.append(cell)
    nbformat.write(nb, lab.root / "widths.ipynb")
    page.set_viewport_size({"width": 1400, "height": 900})
    lab.open(page, "widths.ipynb")
    roots = page.locator(".jp-OutputArea-output .ks-root")
    roots.nth(1).wait_for(timeout=60_000)
    assert page.locator(".jp-FileBrowser").first.is_visible()
    area = roots.first.bounding_box()["width"]
    assert 900 < area < 1000                              # ~960 px: the width the issue measured
    report, compare = roots.nth(0), roots.nth(1)
    report.locator(".ks-tab[data-tab='CPU ops']").click()
    assert report.locator(".ks-ops").bounding_box()["width"] <= area
    report.locator(".ks-tab[data-tab='Kernels']").click()
    hs = report.locator(".ks-hscroll")
    assert hs.evaluate("e => e.scrollWidth <= e.clientWidth")
    scroll = compare.locator(".ks-compare-scroll")
    assert scroll.evaluate("e => e.scrollWidth <= e.clientWidth")
    page.screenshot(path=str(ARTIFACTS / "notebook_width_jupyterlab.png"))


# -- 2. the timeline -----------------------------------------------------------------------------
def _click_kernel(page, i):
    """Click launch i (rep.kernels order) on the canvas, zoomed in on it."""
    page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, k = tl.model.tables.kernels;
        const s = k.cols.start_us[{i}], d = k.cols.duration_us[{i}]; tl.showRange(s - d, s + 2 * d, {{ select: false }}); }})()""")
    x, y = page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, b = tl._box('kernels', {i}), r = tl.canvas.getBoundingClientRect();
        return [r.left + (b.x0 + b.x1) / 2, r.top + b.y + b.lh / 2]; }})()""")
    page.mouse.click(x, y)
    return {r.get_attribute("data-prop"): r.locator(".ks-tl-v").inner_text() for r in page.locator(".ks-tl-prop").all()}


def _dims(row, which):
    x, y, z = (int(row[f"{which}_{a}"]) for a in "xyz")
    return f"{x}×{y}×{z}" if z != 1 else f"{x}×{y}" if y != 1 else str(x)


def _stack(rep, tid, at):
    """The CPU ops of thread tid open at time `at`, outermost first (from the recording)."""
    o = rep.ops[(rep.ops["tid"].astype(str) == str(tid)) & (rep.ops["start_us"] <= at)
                & (at <= rep.ops["start_us"] + rep.ops["duration_us"])]
    return " › ".join(o.sort_values(["start_us", "duration_us"], ascending=[True, False])["name"])


def test_clicking_a_kernel_opens_its_properties_and_selects_it_in_the_table(site, page):
    rep = show(page, site, "llama", "Timeline")
    k = rep.kernels.reset_index(drop=True)
    i = int(k[k["op"].notna() & (k["correlation"] > 0)]["duration_us"].idxmax())
    row = k.loc[i]
    props = _click_kernel(page, i)
    assert props["name"] == row["name"] and props["backend"] == row["backend"]
    assert props["device / stream"] == f"{row['device']} / {int(row['stream'])}"
    assert props["grid"] == _dims(row, "grid") and props["block"] == _dims(row, "block")
    assert props["registers / thread"] == str(int(row["registers_per_thread"]))
    assert props["correlation id"] == str(int(row["correlation"]))
    assert props["CPU op"] == row["op"] and props["duration"] == fmt_us(row["duration_us"])
    call = rep.runtime[rep.runtime["correlation"] == row["correlation"]].iloc[0]
    assert props["launched by"].startswith(f"{call['name']} at {fmt_us(call['start_us'])}")
    assert props["call stack"] == _stack(rep, call["tid"], call["start_us"]) != ""
    assert row["op"] in props["call stack"].split(" › ")
    # The kernel is the table's selection too.
    page.locator(".ks-tab[data-tab='Kernels']").click()
    assert page.locator(".ks-row.ks-selected").get_attribute("data-name") == row["name"]
    assert not page.errors, page.errors


def _click_box(page, t, i):
    """Click slice i of table t (kernels, copies, host) on the canvas, zoomed in on it."""
    page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, k = tl.model.tables[{json.dumps(t)}];
        const s = k.cols.start_us[{i}], d = k.cols.duration_us[{i}] || 1; tl.showRange(s - d, s + 2 * d, {{ select: false }}); }})()""")
    x, y = page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, b = tl._box({json.dumps(t)}, {i}), r = tl.canvas.getBoundingClientRect();
        return [r.left + (b.x0 + b.x1) / 2, r.top + b.y + b.lh / 2]; }})()""")
    page.mouse.click(x, y)
    return {r.get_attribute("data-prop"): r.locator(".ks-tl-v").inner_text() for r in page.locator(".ks-tl-prop").all()}


def test_properties_pane_of_a_launch_call_a_copy_and_an_idle_gap(site, page):
    rep = show(page, site, "llama", "Timeline")
    host = page.evaluate("""(() => { const h = window.ctl.timeline.model.tables.host, out = [];
        for (let i = 0; i < h.rows; i++) out.push([h.strings.name[h.cols.name[i]], h.strings.kind[h.cols.kind[i]], h.cols.correlation[i]]);
        return out; })()""")
    k = rep.kernels
    # A launch call: its thread, correlation id, the kernel it launched and its call stack.
    i = next(j for j, (n, kind, c) in enumerate(host) if kind == "runtime" and c > 0 and (k["correlation"] == c).any())
    call = rep.runtime[rep.runtime["correlation"] == host[i][2]].iloc[0]
    props = _click_box(page, "host", i)
    assert page.locator(".ks-tl-pane-head b").inner_text() == call["name"]
    assert props["thread"] == str(call["tid"]) and props["correlation id"] == str(int(call["correlation"]))
    assert props["launched"] == k[k["correlation"] == call["correlation"]]["short_name"].iloc[0]
    assert props["call stack"] == _stack(rep, call["tid"], call["start_us"])
    # A copy: its bytes, direction and bandwidth as recorded.
    c = rep.copies.reset_index(drop=True)
    j = int(c["bytes"].idxmax())
    props = _click_box(page, "copies", j)
    assert props["direction"] == c.loc[j, "copy_kind"] and props["duration"] == fmt_us(c.loc[j, "duration_us"])
    assert props["bandwidth"] == f"{c.loc[j, 'bandwidth_gbps']:,.1f} GB/s"
    # An idle gap: its cause in the words of analysis.timeline.CAUSES.
    g = rep.timeline.gaps.reset_index(drop=True)
    n = int(g["duration_us"].idxmax())
    page.evaluate(f"window.ctl.timeline.showRange({g.loc[n, 'start_us']}, {g.loc[n, 'start_us'] + g.loc[n, 'duration_us']}, {{ select: false }})")
    x, y = page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, r = tl.canvas.getBoundingClientRect(), row = tl.rows.find((q) => q.kind === 'gaps');
        return [r.left + tl._t2x({g.loc[n, 'start_us'] + g.loc[n, 'duration_us'] / 2}), r.top + row.y + row.h / 2]; }})()""")
    page.mouse.click(x, y)
    props = {r.get_attribute("data-prop"): r.locator(".ks-tl-v").inner_text() for r in page.locator(".ks-tl-prop").all()}
    assert props["cause"] == vocabulary()["causes"][g.loc[n, "cause"]]["text"]
    assert props["duration"] == fmt_us(g.loc[n, "duration_us"])
    # Esc closes the pane.
    page.keyboard.press("Escape")
    assert not page.locator(".ks-timeline-pane").is_visible()


def test_properties_pane_holds_counters_and_stalls_when_recorded(site, page):
    rep = show(page, site, "counters", "Timeline")
    k = rep.kernels.reset_index(drop=True)
    i = int(k["dram_gbps"].idxmax())
    props = _click_kernel(page, i)
    # The counters' labels are the payload's (trace/counters.py: DERIVED), as every view names them.
    assert props["SM active"] == f"{k.loc[i, 'sm_active_pct']:.0f}%"
    # One number format (format.js): thousands separators.
    assert k.loc[i, "dram_gbps"] >= 1000 and props["DRAM bandwidth"] == f"{k.loc[i, 'dram_gbps']:,.1f} GB/s"
    assert props["DRAM throughput"] == f"{k.loc[i, 'dram_pct']:.0f}%"
    assert props["top stall"] == k.loc[i, "top_stall"]


def test_search_finds_steps_and_highlights_slices_by_regex(site, page):
    rep = show(page, site, "llama", "Timeline")
    q = r"gemm|^aten::(add|mul)_?$"
    rx = re.compile(q, re.I)
    k = rep.kernels
    want = (int((k["name"].str.contains(rx) | k["short_name"].astype(str).str.contains(rx)).sum())
            + int(rep.copies["name"].astype(str).str.contains(rx).sum())
            + int(rep.ops.dropna(subset=["start_us"])["name"].str.contains(rx).sum())
            + int(rep.runtime.dropna(subset=["start_us"])["name"].str.contains(rx).sum()))
    assert want > 10
    page.locator(".ks-tl-find").fill(q)
    assert page.evaluate("window.ctl.timeline.matches.length") == want
    assert page.locator(".ks-tl-find-count").inner_text() == f"{want:,} matches"
    page.locator(".ks-tl-find").press("Enter")
    assert page.locator(".ks-tl-find-count").inner_text() == f"1 of {want:,} matches"
    first = page.evaluate("(() => { const m = window.ctl.timeline.matches[0]; return [m.t, m.i]; })()")
    title = page.locator(".ks-tl-pane-head b").inner_text()
    assert rx.search(title), title
    page.locator(".ks-tl-next").click()
    assert page.locator(".ks-tl-find-count").inner_text() == f"2 of {want:,} matches"
    page.locator(".ks-tl-prev").click()
    assert page.evaluate("(() => { const m = window.ctl.timeline.matches[window.ctl.timeline.matchAt]; return [m.t, m.i]; })()") == first
    # Every match in view is outlined on the overlay (its pixels differ from an empty overlay).
    page.evaluate("(() => { const t = window.ctl.timeline; t.view = [...t.full]; t.draw(); })()")
    inked = page.evaluate("""(() => { const c = window.ctl.timeline.over, d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let j = 3; j < d.length; j += 4) if (d[j]) n++; return n; })()""")
    assert inked > 500
    # A bad regex is taken as plain text, not an error.
    page.locator(".ks-tl-find").fill("aten::mm(")
    assert page.evaluate("window.ctl.timeline.matches.length") == 0 and not page.errors


def _rgb(c, bg=(255, 255, 255)):
    m = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)(?:,\s*([\d.]+))?\)", c)
    if m:
        r, g, b, a = (*map(int, m.groups()[:3]), float(m.group(4) or 1))
    else:
        h = c.lstrip("#")
        r, g, b = int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
        a = int(h[6:8], 16) / 255 if len(h) == 8 else 1.0
    return tuple(a * x + (1 - a) * y for x, y in zip((r, g, b), bg))


def test_legend_has_a_swatch_per_backend_and_copies_are_not_idle_pink(site, page):
    rep = show(page, site, "llama", "Timeline")
    voc = vocabulary()
    items = page.evaluate("""[...document.querySelectorAll('.ks-timeline .ks-legend-item')].map((e) =>
        [e.textContent, e.querySelector('.ks-swatch').style.background])""")
    got = dict(items)
    for b in rep.kernels["backend"].unique():
        assert b in got and _rgb(got[b]) == _rgb(voc["backends"][b]), b
    # Host-to-device copies and "idle, waiting on host" read as different colours.
    a, b = _rgb(voc["copies"]["HtoD"]), _rgb(voc["causes"]["host"]["color"])
    assert sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5 > 100


def test_initial_range_and_a_drag_select_leave_the_lanes_where_they_are(site, page):
    show(page, site, "llama", "Timeline")
    view = page.evaluate("window.ctl.timeline.view")
    assert view[0] >= 0                                   # -0.28 ms before (1% of the span)
    top = box(page, ".ks-timeline-canvas")
    canvas_top = page.evaluate("document.querySelector('.ks-timeline-canvas').getBoundingClientRect().top")
    x, y = page.evaluate("""(() => { const tl = window.ctl.timeline, r = tl.canvas.getBoundingClientRect();
        const row = tl.rows.find((q) => q.label.startsWith('cuda')); return [r.left + tl._t2x(9000), r.top + row.y + 8]; })()""")
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 200, y, steps=6)
    page.mouse.up()
    assert page.locator(".ks-timeline-selection").is_visible()
    assert page.evaluate("document.querySelector('.ks-timeline-canvas').getBoundingClientRect().top") == canvas_top
    assert top["width"] > 0


def test_counter_strip_scale_labels_are_legible(site, page):
    show(page, site, "counters", "Timeline")
    # The darkest pixel of the scale labels ("0-100%", "0-4,644 GB/s") against the page: a
    # contrast ratio of at least 4.5 (WCAG AA); the border colour they had gave ~1.3.
    ratio = page.evaluate("""(() => { const c = document.querySelector('.ks-util-canvas'), dpr = window.devicePixelRatio || 1;
        const d = c.getContext('2d').getImageData(0, 14 * dpr, 100 * dpr, 12 * dpr).data;
        const lum = (r, g, b) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
          .reduce((a, v, j) => a + v * [0.2126, 0.7152, 0.0722][j], 0);
        let best = 1; for (let j = 0; j < d.length; j += 4) if (d[j + 3] > 200) best = Math.max(best, 1.05 / (lum(d[j], d[j + 1], d[j + 2]) + 0.05));
        return best; })()""")
    assert ratio >= 4.5


def test_longest_wait_link_zooms_to_the_gap_and_marks_it(site, page):
    rep = show(page, site, "llama")
    link = page.locator(".ks-fix-evidence[data-view='timeline']").first
    assert "longest wait" in link.inner_text()
    link.click()
    sel = page.evaluate("(() => { const s = window.ctl.timeline.selection; return s && [s.t0, s.t1]; })()")
    view = page.evaluate("window.ctl.timeline.view")
    g = rep.timeline.gaps
    longest = g.loc[g[g["cause"] == "host"]["duration_us"].idxmax()]
    assert sel == pytest.approx([longest["start_us"], longest["start_us"] + longest["duration_us"]], abs=1e-3)
    assert page.locator(".ks-timeline-selection").is_visible()
    # Zoomed to the gap with its own length of context either side (analysis/findings/base.py).
    d = longest["duration_us"]
    assert view == pytest.approx([longest["start_us"] - d, longest["start_us"] + 2 * d], abs=1e-3)


def _clipped(df, t0, t1):
    s, e = df["start_us"], df["start_us"] + df["duration_us"]
    d = (e.clip(upper=t1) - s.clip(lower=t0)).clip(lower=0)
    inside = (d > 0) | ((df["duration_us"] == 0) & (s >= t0) & (s <= t1))
    return df[inside].assign(inside_us=d[inside]).groupby("name")["inside_us"].agg(["count", "sum"])


def test_range_summary_lists_kernels_and_ops_summed_as_python_does(site, page):
    rep = show(page, site, "llama", "Timeline")
    t0, t1 = 8000.0, 12000.0
    page.evaluate(f"window.ctl.timeline.showRange({t0}, {t1})")
    rows = page.evaluate("window.ctl.timeline.selection.summary.rows")
    js = {(r["kind"], r["name"]): (r["count"], r["total"], r["share"]) for r in rows}
    want = {("kernel", n): v for n, v in _clipped(rep.kernels, t0, t1).iterrows()}
    want.update({("CPU op", n): v for n, v in _clipped(rep.ops.dropna(subset=["start_us"]), t0, t1).iterrows()})
    assert set(js) == set(want)
    for key, (count, total) in want.items():
        assert js[key][0] == count, key
        # Times reach the browser as whole nanoseconds: half a ns per end.
        assert js[key][1] == pytest.approx(total, abs=1e-3 * count), key
        assert js[key][2] == pytest.approx(total / (t1 - t0), abs=1e-6), key
    # The table: sortable, costliest first; its cells are what was summed.
    table = page.locator(".ks-sel-rows")
    first = table.locator("tbody tr").first.locator("td").all_inner_texts()
    top = max(want.items(), key=lambda kv: kv[1]["sum"])
    assert first[1] == top[0][0] and first[2] == f"{int(top[1]['count']):,}" and first[3] == fmt_us(top[1]["sum"])
    table.locator("th[data-col='count']").click()
    counts = [int(t.replace(",", "")) for t in table.locator("tbody td:nth-child(3)").all_inner_texts()]
    assert counts == sorted(counts, reverse=True)


# -- 3. share on launch rows -----------------------------------------------------------------------
def test_launch_rows_share_means_what_kernel_rows_share_means(site, page):
    rep = show(page, site, "llama")
    k = rep.kernels
    total = k["duration_us"].sum()
    page.locator(".ks-row.ks-kernel .ks-expand").first.click()
    launch = page.locator(".ks-row.ks-launch").first
    i = int(launch.get_attribute("data-launch"))
    share = launch.locator(".ks-cell").nth(6)
    assert share.inner_text() == f"{k['duration_us'].iloc[i] / total * 100:.1f}%"
    assert "share of all kernel time" in share.get_attribute("title")
