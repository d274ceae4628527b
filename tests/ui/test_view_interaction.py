"""The report view as a Perfetto / Nsight Systems / TensorBoard user drives it, in chromium, on
real H200 recordings (a Llama training step, an MLP step): the timeline's tooltip, resizing,
wheel and keys, range selection, launch links, names in slices, highlight from the table; the
kernel table's names, ranges, CSV and copy; the CPU ops and backends lists; the dark theme.

The page is the standalone bundle (the same view code as the widget and JupyterLab's renderer);
JupyterLab at notebook width is in test_view_jupyterlab.py."""
import csv
import io
import json
import pathlib
import sys

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.units import fmt_us
from kernelscope.view.bundle import mime_payload
from tests.ui.test_view_page import PAGE as BASE_PAGE
from tests.ui.test_view_page import serve_page
from tests.view.test_widget import HOSTILE, hostile_report

pytestmark = pytest.mark.browser
LLAMA = "wild/llama_train.pt.trace.json.gz"
THEMES = pathlib.Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
# test_view_page's page as wide as a notebook's output area, in a theme, with room below to scroll.
PAGE = BASE_PAGE.replace('<body style="width:1300px;margin:8px">\n<div id="root"></div>',
                         '<style id="theme"></style><body style="margin:8px;background:var(--jp-layout-color1, #fff)">\n'
                         '<div id="root" style="width:1000px"></div><div id="below" style="height:1500px"></div>')
assert PAGE != BASE_PAGE


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    reports = {"llama": ks.load(DATA / LLAMA), "mlp": ks.load(DATA / "mlp_train.pt.trace.json.gz"),
               "hostile": hostile_report(ks.load(DATA / "attention.pt.trace.json.gz"))}
    for name, rep in reports.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root, PAGE) as url:
        yield url, reports


def show(page, site, name, tab=None, theme=None):
    url, reports = site
    page.goto(f"{url}/index.html")
    page.wait_for_function("typeof window.show === 'function'")
    if theme:
        page.evaluate("css => { document.getElementById('theme').textContent = css; }",
                      (THEMES / f"theme-{theme}-extension" / "index.css").read_text())
    page.evaluate(f"window.show('{name}.json')")
    page.locator(".ks-root").wait_for()
    if tab:
        page.locator(f".ks-tab[data-tab='{tab}']").click()
    return reports[name]


def lane_point(page, lane, t):
    """Page coordinates of time t (us) on the timeline lane named `lane`."""
    return page.evaluate("""([lane, t]) => { const tl = window.ctl.timeline, r = tl.canvas.getBoundingClientRect();
        const row = tl.rows.find((x) => x.label === lane);
        return [r.left + tl._t2x(t), r.top + row.y + row.h / 2]; }""", [lane, t])


# -- timeline ---------------------------------------------------------------------------------
def test_tooltip_on_the_lowest_gpu_lane_stays_inside_the_viewport(site, page):
    rep = show(page, site, "llama", "Timeline")
    k = rep.kernels
    lane = f"{k['device'].iloc[0]} s{k['stream'].iloc[0]}"
    last = k[k["start_us"] == k["start_us"].max()].iloc[0]      # at the right edge too
    # Scroll so that the GPU lanes sit at the bottom of the window, where the tip cannot go below.
    page.evaluate("""lane => { const tl = window.ctl.timeline, row = tl.rows.find(r => r.label === lane);
        const y = tl.canvas.getBoundingClientRect().top + window.scrollY + row.y + row.h;
        window.scrollTo(0, y - window.innerHeight + 4); }""", lane)
    for kernel, before, after in ((k.iloc[len(k) // 2], 40, 40), (last, 60, 0.5)):
        # Zoomed so the kernel is wide enough to point at (the second one at the right edge).
        s0, e0 = float(kernel["start_us"]), float(kernel["start_us"] + kernel["duration_us"])
        page.evaluate(f"(() => {{ const t = window.ctl.timeline; t.view = [{s0 - before}, {e0 + after}]; t.draw(); }})()")
        x, y = lane_point(page, lane, (s0 + e0) / 2)
        page.mouse.move(x, y)
        tip = page.locator(".ks-timeline .ks-tip")
        assert tip.is_visible()
        lines = tip.inner_text().split("\n")
        assert lines[0] == kernel["short_name"] and kernel["backend"] in lines[1] and lines[2].startswith("op: ")
        box = tip.bounding_box()
        vw, vh = page.viewport_size["width"], page.viewport_size["height"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= vw and box["y"] >= 0 and box["y"] + box["height"] <= vh, box
        # ... and no ancestor's overflow clips it: the whole tip is drawn.
        clipped = page.evaluate("""() => { const tip = document.querySelector('.ks-timeline .ks-tip').getBoundingClientRect();
            const out = []; for (let e = document.querySelector('.ks-timeline .ks-tip').parentElement; e; e = e.parentElement) {
              const cs = getComputedStyle(e); if (cs.overflow === 'visible' && cs.overflowY === 'visible') continue;
              const r = e.getBoundingClientRect();
              if (tip.top < r.top - 0.5 || tip.bottom > r.bottom + 0.5 || tip.left < r.left - 0.5 || tip.right > r.right + 0.5) out.push(e.className); }
            return out; }""")
        assert clipped == [], clipped
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "timeline_tooltip_bottom.png"))
    assert not page.errors, page.errors


def test_canvas_follows_its_container(site, page):
    show(page, site, "mlp", "Timeline")
    width = lambda: page.evaluate("[window.ctl.timeline.canvas.getBoundingClientRect().width, "
                                  "document.querySelector('.ks-timeline-wrap').clientWidth]")
    assert width()[0] == width()[1] > 900
    # The container narrows (a sidebar opens) and widens: the canvas follows with no zoom or click.
    for w in ("640px", "1200px"):
        page.evaluate(f"document.getElementById('root').style.width = '{w}'")
        page.wait_for_function("() => { const c = window.ctl.timeline.canvas; return Math.abs(c.getBoundingClientRect().width"
                               " - document.querySelector('.ks-timeline-wrap').clientWidth) < 1; }", timeout=5000)
        assert int(w[:-2]) - 10 <= width()[0] <= int(w[:-2])     # the root's padding, the wrapper's borders
    # The window resizes with the container following it.
    page.evaluate("document.getElementById('root').style.width = 'auto'")
    page.set_viewport_size({"width": 900, "height": 900})
    page.wait_for_function("() => Math.abs(window.ctl.timeline.canvas.getBoundingClientRect().width - "
                           "document.querySelector('.ks-timeline-wrap').clientWidth) < 1", timeout=5000)
    assert 860 <= width()[0] <= 890
    assert page.evaluate("window.ctl.timeline.width") == width()[1]
    assert not page.errors, page.errors


def test_wheel_scrolls_the_page_ctrl_wheel_zooms_shift_wheel_pans(site, page):
    show(page, site, "mlp", "Timeline")
    box = page.locator(".ks-timeline-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
    view = lambda: page.evaluate("window.ctl.timeline.view")
    v0, y0 = view(), page.evaluate("window.scrollY")
    page.mouse.wheel(0, 300)                          # plain wheel: the page scrolls, no zoom
    page.wait_for_function(f"window.scrollY > {y0}")
    assert view() == v0
    page.evaluate("window.scrollTo(0, 0)")
    page.keyboard.down("Control")                      # ctrl+wheel: zoom at the pointer
    y1 = page.evaluate("window.scrollY")
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    v1 = view()
    assert v1[1] - v1[0] < (v0[1] - v0[0]) * 0.8 and page.evaluate("window.scrollY") == y1
    page.keyboard.down("Shift")                        # shift+wheel: pan, same span
    page.mouse.wheel(0, 200)
    page.keyboard.up("Shift")
    v2 = view()
    assert v2[0] > v1[0] and v2[1] - v2[0] == pytest.approx(v1[1] - v1[0])
    page.mouse.wheel(-200, 0)                          # a sideways swipe (deltaX): pan back
    v3 = view()
    assert v3[0] < v2[0] and page.evaluate("window.scrollY") == y1


def test_wasd_keys_and_they_stay_in_the_timeline(site, page):
    show(page, site, "mlp", "Timeline")
    page.evaluate("window.keysSeen = []; document.addEventListener('keydown', e => window.keysSeen.push(e.key))")
    box = page.locator(".ks-timeline-canvas").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 8)       # on the axis: focus, no pick
    view = lambda: page.evaluate("window.ctl.timeline.view")
    v0 = view()
    page.keyboard.press("w")
    v1 = view()
    assert v1[1] - v1[0] < v0[1] - v0[0]
    page.keyboard.press("d")
    v2 = view()
    assert v2[0] > v1[0] and v2[1] - v2[0] == pytest.approx(v1[1] - v1[0])
    page.keyboard.press("a")
    assert view()[0] == pytest.approx(v1[0])
    page.keyboard.press("s")
    assert view()[1] - view()[0] > v1[1] - v1[0]
    # Handled keys do not reach the page (in a notebook, A inserts a cell and D D deletes one).
    assert page.evaluate("window.keysSeen") == []


def test_drag_selects_a_range_and_says_what_ran_in_it(site, page):
    rep = show(page, site, "llama", "Timeline")
    k = rep.kernels
    lane = f"{k['device'].iloc[0]} s{k['stream'].iloc[0]}"
    page.evaluate("window.ctl.timeline.showRange(8000, 12000, { select: false })")
    x0, y = lane_point(page, lane, 9000)
    x1, _ = lane_point(page, lane, 10500)
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move(x1, y, steps=8)
    page.mouse.up()
    sel = page.evaluate("(() => { const s = window.ctl.timeline.selection; return [s.t0, s.t1, s.summary.launches.length, s.summary.kernelTime]; })()")
    t0, t1, n, busy = sel
    us_per_px = page.evaluate("(() => { const t = window.ctl.timeline; return (t.view[1] - t.view[0]) / (t.width - 112); })()")
    assert t0 == pytest.approx(9000, abs=2 * us_per_px) and t1 == pytest.approx(10500, abs=2 * us_per_px)
    # What ran inside: the launches that overlap it, their time clipped to it (from the recording).
    end = k["start_us"] + k["duration_us"]
    inside = k[(end >= t0) & (k["start_us"] <= t1)]
    assert n == len(inside) > 0
    # Times reach the browser as whole nanoseconds (render.view._encode_time): half a ns per end.
    assert busy == pytest.approx((end.clip(upper=t1) - k["start_us"].clip(lower=t0)).clip(lower=0)[inside.index].sum(),
                                 abs=1e-3 * len(inside))
    bar = page.locator(".ks-timeline-selection")
    text = bar.inner_text()
    assert bar.locator(".ks-sel-duration").inner_text() == fmt_us(t1 - t0)
    assert f"{len(inside)} kernel launches" in text and f"{fmt_us(t0)} – {fmt_us(t1)}" in text
    # Those launches in the kernel table: its status counts them.
    bar.locator(".ks-sel-table").click()
    status = page.locator(".ks-table-status").inner_text()
    assert f"{len(inside)} of {len(k)} launches" in status and "filtered to the launches in" in status
    rows = page.locator(".ks-row.ks-kernel").count()
    assert rows == min(inside["name"].nunique(), 16)
    page.locator(".ks-clear-filter").click()
    assert page.locator(".ks-table-status").inner_text().startswith(f"{k['name'].nunique()} of {k['name'].nunique()} kernel rows")
    assert not page.errors, page.errors


def test_hover_links_a_kernel_to_its_launch_call(site, page):
    rep = show(page, site, "llama", "Timeline")
    k, rt = rep.kernels, rep.runtime
    kern = k.iloc[100]
    call = rt[rt["correlation"] == kern["correlation"]].iloc[0]
    page.evaluate(f"window.ctl.timeline.showRange({float(call['start_us']) - 20}, {float(kern['start_us'] + kern['duration_us']) + 20}, {{ select: false }})")
    x, y = lane_point(page, f"{kern['device']} s{kern['stream']}", float(kern["start_us"] + kern["duration_us"] / 2))
    page.mouse.move(x, y)
    assert page.evaluate("window.ctl.timeline.hover.i") == 100
    linked = page.evaluate("(() => { const t = window.ctl.timeline; const h = t.model.tables.host; const r = t._linked(t.hover)[0];"
                           " return [h.strings.name[h.cols.name[r]], h.cols.start_us[r], h.cols.correlation[r]]; })()")
    assert linked[0] == call["name"] and linked[1] == pytest.approx(call["start_us"]) and linked[2] == kern["correlation"]
    assert f"launched by {call['name']}" in page.locator(".ks-timeline .ks-tip").inner_text()
    # ... and the call to its kernel.
    x, y = lane_point(page, f"thread {call['tid']} CUDA API", float(call["start_us"] + call["duration_us"] / 2))
    page.mouse.move(x, y)
    assert f"launched: {kern['short_name']}" in page.locator(".ks-timeline .ks-tip").inner_text()
    page.screenshot(path=str(ARTIFACTS / "timeline_launch_link.png"))


def test_nested_ops_annotations_and_names_in_slices(site, page):
    rep = show(page, site, "llama", "Timeline")
    page.evaluate("""() => { window.texts = []; const orig = CanvasRenderingContext2D.prototype.fillText;
        CanvasRenderingContext2D.prototype.fillText = function (t, x, y, w) {
          if (this.canvas.classList.contains('ks-timeline-canvas'))
            window.texts.push([t, x, y, Math.min(w ?? Infinity, this.measureText(t).width), this.canvas.width / devicePixelRatio]);
          return orig.apply(this, arguments); }; }""")
    step = rep.ops[rep.ops["name"] == "Optimizer.step#AdamW.step"].iloc[0]
    page.evaluate(f"window.ctl.timeline.showRange({float(step['start_us']) - 50}, {float(step['start_us'] + step['duration_us']) + 50}, {{ select: false }})")
    texts = page.evaluate("window.texts")
    drawn = [t[0] for t in texts]
    assert "Optimizer.step#AdamW.step" in drawn                   # the record_function range, named in its slice
    assert any(t.startswith("aten::_foreach") for t in drawn)     # an op nested in it, one level down
    host = page.evaluate("window.ctl.timeline.rows.find(r => r.label.startsWith('thread') && r.label.endsWith('ops')).levels")
    from kernelscope.analysis.op_tree import op_tree
    ops = rep.ops.reset_index(drop=True)
    tid = ops.loc[ops["name"] == "Optimizer.step#AdamW.step", "tid"].iloc[0]
    assert host == int(op_tree(ops)[ops["tid"] == tid]["depth"].max()) + 1
    # Axis labels (y = 12) end inside the canvas: the last one is not cut.
    axis = [t for t in texts if t[2] == 12 and t[0].endswith(("us", "ms", " s"))]
    assert axis and all(x + w <= cw + 0.5 for _, x, _, w, cw in axis)
    page.screenshot(path=str(ARTIFACTS / "timeline_nested_ops.png"))


def test_table_selection_highlights_the_kernel_on_the_timeline(site, page):
    rep = show(page, site, "mlp")
    name = rep.summary()["name"].iloc[0]
    page.locator(f".ks-row.ks-kernel[data-name='{name}']").click()
    page.locator(".ks-tab[data-tab='Timeline']").click()
    codes = page.evaluate("[...window.ctl.timeline.hl]")
    assert page.evaluate(f"window.ctl.timeline.model.tables.kernels.strings.name[{codes[0]}]") == name and len(codes) == 1
    # Pixels: a launch of the kernel in its backend colour, another kernel's launch faded.
    colours = page.evaluate("""name => { const t = window.ctl.timeline, k = t.model.tables.kernels;
        const ctx = t.canvas.getContext('2d'), dpr = devicePixelRatio; const code = k.strings.name.indexOf(name);
        const at = (i) => { const b = t._box('kernels', i); return [...ctx.getImageData(Math.round(((b.x0 + b.x1) / 2) * dpr), Math.round((b.y + b.lh / 2) * dpr), 1, 1).data]; };
        const boxes = [...Array(k.rows).keys()].map((i) => t._box('kernels', i));
        const mine = boxes.filter((b, i) => k.cols.name[i] === code);
        // The widest of each kind; the other kernel's one well clear of the highlighted launches.
        let on = -1, off = -1, wOn = 0, wOff = 0;
        boxes.forEach((b, i) => { const w = b.x1 - b.x0;
          if (k.cols.name[i] === code && w > wOn) { on = i; wOn = w; }
          if (k.cols.name[i] !== code && w > wOff && !mine.some((m) => m.x0 - 4 < b.x1 && m.x1 + 4 > b.x0)) { off = i; wOff = w; } });
        return [at(on), at(off)]; }""", name)
    on, off = colours
    assert on[3] == 255 and max(on[:3]) - min(on[:3]) > 30          # a saturated backend colour
    assert off[3] < 100                                              # faded: mostly the page shows through
    page.keyboard.press("Escape")


# -- kernel table -------------------------------------------------------------------------------
def test_names_first_shapes_behind_a_toggle_ranges_for_varying_grids(site, page):
    rep = show(page, site, "llama")
    heads = page.locator(".ks-head .ks-cell").evaluate_all("els => els.map(e => e.dataset.col)")
    assert heads == ["expand", "short", "backend", "launches", "total", "mean", "share", "occ"]
    k = rep.kernels
    g = k.assign(blocks=k["grid_x"] * k["grid_y"] * k["grid_z"]).groupby("name")
    varying = g["blocks"].nunique()
    name = varying[varying > 1].index[0]
    lo, hi = int(g["blocks"].min()[name]), int(g["blocks"].max()[name])
    waves = g["waves"].agg(["min", "max"]).loc[name]
    page.locator(".ks-shape-toggle").click()
    heads = page.locator(".ks-head .ks-cell").evaluate_all("els => els.map(e => e.dataset.col)")
    assert heads[-5:] == ["grid", "block", "regs", "smem", "waves"]
    page.locator(".ks-filter").fill(name)
    row = page.locator(f".ks-row.ks-kernel[data-name='{name}']")
    cells = dict(zip(heads, row.locator(".ks-cell").all_inner_texts()))
    assert cells["grid"] == f"{lo:,}–{hi:,}"
    assert cells["waves"] == f"{waves['min']:.2f}–{waves['max']:.2f}"
    # Headers are never cut, with the shape columns shown too.
    cut = page.locator(".ks-head .ks-cell").evaluate_all("els => els.filter(e => { const l = e.querySelector('.ks-h-label'); "
                                                         "return l && l.getBoundingClientRect().right > e.getBoundingClientRect().right + 0.5; }).map(e => e.dataset.col)")
    assert cut == []
    # The details say the launches differ instead of showing one launch's grid and waves.
    row.click()
    details = page.locator(".ks-details").inner_text()
    assert f"{lo:,}–{hi:,} blocks" in details and f"{waves['min']:.2f}–{waves['max']:.2f} (differs between launches)" in details
    # Expanded launch rows: every cell's text fits (the share of the kernel's time included).
    row.locator(".ks-expand").click()
    launch_rows = page.locator(".ks-row.ks-launch")
    assert launch_rows.count() == int(g.size()[name])
    # (The wide name cell may end in an ellipsis at this width: its title holds the CPU op.)
    cut = launch_rows.first.locator(".ks-cell").evaluate_all("els => els.slice(2).filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)")
    assert cut == []
    assert launch_rows.first.locator(".ks-cell").nth(1).get_attribute("title").startswith("CPU op: ")
    share = launch_rows.first.locator(".ks-cell").nth(heads.index("share")).inner_text()
    assert share.endswith("%") and "of ke" not in share
    assert not page.errors, page.errors


def test_kernel_column_resizes(site, page):
    show(page, site, "mlp")
    cell = page.locator(".ks-head .ks-h-short")
    w0 = cell.bounding_box()["width"]
    grip = cell.locator(".ks-col-resize").bounding_box()
    page.mouse.move(grip["x"] + 3, grip["y"] + 5)
    page.mouse.down()
    page.mouse.move(grip["x"] - 120, grip["y"] + 5, steps=6)
    page.mouse.up()
    w1 = cell.bounding_box()["width"]
    assert w1 == pytest.approx(w0 - 123, abs=3)
    name_w = page.locator(".ks-row.ks-kernel .ks-name").first.bounding_box()["width"]
    assert name_w == pytest.approx(w1, abs=1)                  # the rows follow the header


def test_filter_status_gives_launches_and_time(site, page):
    rep = show(page, site, "llama")
    k = rep.kernels
    total = k["duration_us"].sum()
    assert page.locator(".ks-table-status").inner_text().startswith(
        f"{k['name'].nunique()} of {k['name'].nunique()} kernel rows · {len(k)} launches · {fmt_us(total)} kernel time")
    page.locator(".ks-backend-filter").select_option("cuBLAS")
    sub = k[k["backend"] == "cuBLAS"]
    status = page.locator(".ks-table-status").inner_text()
    assert status.startswith(f"{sub['name'].nunique()} of {k['name'].nunique()} kernel rows · {len(sub)} of {len(k)} launches · "
                             f"{fmt_us(sub['duration_us'].sum())} of {fmt_us(total)} kernel time")


def test_csv_export_holds_every_matching_row(site, page):
    rep = show(page, site, "mlp")
    with page.expect_download() as dl:
        page.locator(".ks-export-csv").click()
    assert dl.value.suggested_filename == "mlp_train-kernels.csv"
    rows = list(csv.DictReader(io.StringIO(pathlib.Path(dl.value.path()).read_text(encoding="utf-8"))))
    s = rep.summary()
    assert [r["name"] for r in rows] == s["name"].tolist()          # the table's order: total, largest first
    for r, (_, want) in zip(rows, s.iterrows()):
        assert int(r["launches"]) == want["launches"] and r["backend"] == want["backend"] and r["short_name"] == want["short_name"]
        assert float(r["total_us"]) == pytest.approx(want["total_us"], abs=1e-3)
        assert float(r["mean_us"]) == pytest.approx(want["mean_us"], abs=1e-3)
        assert float(r["share"]) == pytest.approx(want["share"], abs=1e-6)
    first = rep.kernels[rep.kernels["name"] == s["name"].iloc[0]].iloc[0]
    assert int(rows[0]["grid_blocks_min"]) == first["grid_x"] * first["grid_y"] * first["grid_z"]
    assert float(rows[0]["theoretical_occupancy_min"]) == pytest.approx(first["theoretical_occupancy"], abs=1e-4)
    # Filtered: only the rows left.
    page.locator(".ks-filter").fill("nvjet")
    with page.expect_download() as dl:
        page.locator(".ks-export-csv").click()
    names = [r["name"] for r in csv.DictReader(io.StringIO(pathlib.Path(dl.value.path()).read_text(encoding="utf-8")))]
    assert names and all("nvjet" in n for n in names) and len(names) == s["name"].str.contains("nvjet").sum()


def test_csv_keeps_hostile_names_as_text(site, page):
    rep = show(page, site, "hostile")
    with page.expect_download() as dl:
        page.locator(".ks-export-csv").click()
    rows = list(csv.DictReader(io.StringIO(pathlib.Path(dl.value.path()).read_text(encoding="utf-8"))))
    assert sorted(r["name"] for r in rows) == sorted(rep.kernels["name"].unique())
    assert any(r["name"].startswith(HOSTILE) for r in rows)


def test_copy_a_kernels_full_name(site, page, browser):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site[0])
    rep = show(page, site, "llama")
    name = rep.summary()["name"].iloc[0]
    page.locator(f".ks-row.ks-kernel[data-name='{name}']").click()
    page.locator(".ks-copy-name").click()
    assert page.evaluate("navigator.clipboard.readText()") == name
    page.evaluate("navigator.clipboard.writeText('')")
    page.locator(".ks-body").focus()
    page.keyboard.press("Control+c")                 # on the table: the selected rows' full names
    page.wait_for_function("async () => (await navigator.clipboard.readText()).length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == name


# -- other tabs ----------------------------------------------------------------------------------
def test_backends_keep_cpu_ops_apart_from_launches(site, page):
    rep = show(page, site, "llama", "Backends")
    b = rep.backends
    gpu, cpu = b[b["gpu_time_us"].notna()], b[b["gpu_time_us"].isna()]
    panel = page.locator(".ks-panel[data-panel='Backends']")
    assert panel.locator(".ks-backends-gpu tbody tr").count() == len(gpu)
    assert panel.locator(".ks-backends-cpu thead th").all_inner_texts()[1].startswith("CPU ops")
    assert panel.locator(".ks-backends-cpu tbody tr").count() == len(cpu)
    # The GPU bars name GPU backends only: no empty CPU facet.
    bars = panel.locator("svg .ks-rects rect").evaluate_all("els => els.map(e => e.dataset.key)")
    assert sorted(bars) == sorted(gpu["backend"])


def test_cpu_ops_sort_filter_and_inclusive_gpu_time(site, page):
    rep = show(page, site, "llama", "CPU ops")
    from kernelscope.analysis.op_tree import op_summary
    s = op_summary(rep.ops, rep.kernels)
    # Every op name is listed (116 in this step), and the note says so rather than "the costliest".
    note = page.locator(".ks-panel[data-panel='CPU ops'] .ks-note").first.inner_text()
    assert note.startswith(f"Host time of torch ops: {len(rep.ops):,} calls of {len(s)} ops recorded. ")
    table = page.locator(".ks-ops")
    assert table.locator("tbody tr").count() == len(s)
    heads = table.locator("thead th").all_inner_texts()
    assert all(h.strip() for h in heads) and "GPU total" in heads[7] and "host time" in heads[2]
    table.locator("thead th[data-col='gpu_inclusive_us']").click()
    first = table.locator("tbody tr").first.locator("td").all_inner_texts()
    top = s.sort_values("gpu_inclusive_us", ascending=False).iloc[0]
    assert first[0] == top["name"] and first[7].strip().endswith(fmt_us(top["gpu_inclusive_us"]))
    page.locator(".ks-list-filter").fill("linear")
    names = table.locator("tbody tr td:first-child").all_inner_texts()
    assert names and all("linear" in n for n in names)
    linear = s.set_index("name").loc["aten::linear"]
    row = table.locator("tbody tr", has=page.locator("td:first-child", has_text="aten::linear")).first.locator("td").all_inner_texts()
    assert row[6] == "-" and row[7].strip().endswith(fmt_us(linear["gpu_inclusive_us"]))   # a parent: no self GPU time, its children's


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_selected_row_is_readable_in_the_jupyterlab_themes(site, page, theme):
    """JupyterLab's own theme stylesheets: the selected row's text against its background."""
    show(page, site, "mlp", theme=theme)
    row = page.locator(".ks-row.ks-kernel").nth(1)
    row.click()
    page.mouse.move(0, 0)
    fg, bg, page_bg = row.evaluate("e => { const cs = getComputedStyle(e); return [cs.color, cs.backgroundColor, "
                                   "getComputedStyle(document.querySelector('.ks-root')).backgroundColor]; }")

    def rgb(c):
        # rgb(r, g, b) / rgba(...), or color(srgb r g b / a) (0..1) as color-mix() computes
        inner = c[c.index("(") + 1:c.rindex(")")]
        scale = 255.0 if inner.startswith("srgb") else 1.0
        v = [float(x) for x in inner.removeprefix("srgb").replace("/", " ").replace(",", " ").split()]
        return [x * scale for x in v[:3]], (v[3] if len(v) > 3 else 1.0)

    def over(c, base):
        (r, a), (b, _) = rgb(c), rgb(base)
        return [x * a + y * (1 - a) for x, y in zip(r, b)]

    def lum(v):
        v = [x / 255 for x in v]
        v = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in v]
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]

    back = over(bg, page_bg)
    text = over(fg, "rgb(" + ",".join(str(x) for x in back) + ")")
    hi, lo = sorted([lum(text), lum(back)], reverse=True)
    assert (hi + 0.05) / (lo + 0.05) >= 4.5, (theme, fg, bg)        # WCAG AA for normal text
    assert back != over(page_bg, page_bg)                            # and it still looks selected
    if theme == "dark":
        # No bright grid on the timeline either: its lines take the theme's border colour.
        page.locator(".ks-tab[data-tab='Timeline']").click()
        grid = page.evaluate("getComputedStyle(window.ctl.timeline.el).getPropertyValue('--ks-border').trim()")
        line = page.evaluate("g => { const d = document.createElement('div'); d.style.color = g; document.body.append(d); "
                             "const c = getComputedStyle(d).color; d.remove(); return c; }", grid)
        assert lum(rgb(line)[0]) < 0.2
        page.screenshot(path=str(ARTIFACTS / "dark_timeline.png"))
        # ... nor on the roofline: its grid lines as drawn (stroke at its opacity, over the page)
        # stay dark, and its text light.
        page.locator(".ks-tab[data-tab='Roofline']").click()
        chart = page.locator(".ks-panel[data-panel='Roofline'] svg.ks-scatter-chart")
        strokes = chart.locator(".ks-grid line").evaluate_all(
            "els => els.map(e => { const cs = getComputedStyle(e); return [cs.stroke, +cs.strokeOpacity]; })")
        assert strokes
        for stroke, opacity in strokes:
            (c, a) = rgb(stroke)
            drawn = [x * a * opacity + y * (1 - a * opacity) for x, y in zip(c, rgb(page_bg)[0])]
            assert lum(drawn) < 0.05, (stroke, opacity)
        text = chart.locator(".ks-axis text").first.evaluate("e => getComputedStyle(e).fill")
        assert lum(over(text, page_bg)) > 0.3
        page.screenshot(path=str(ARTIFACTS / "dark_roofline.png"))


def test_the_api_other_panels_link_evidence_through(site, page):
    """What the first screen calls (table.js / timeline.js headers): a filtered, selected table
    and a timeline range, each reachable from the report's controller."""
    rep = show(page, site, "mlp")
    s = rep.summary()
    name = s[s["name"].str.contains("nvjet")]["name"].iloc[-1]
    page.evaluate(f"window.ctl.table.apply({{ filter: 'nvjet', select: [{json.dumps(name)}] }})")
    names = [r.get_attribute("data-name") for r in page.locator(".ks-row.ks-kernel").all()]
    assert names and all("nvjet" in n for n in names)
    assert page.locator(".ks-row.ks-selected").get_attribute("data-name") == name
    assert page.locator(".ks-details .ks-fullname").inner_text() == name
    k = rep.kernels
    t0, t1 = float(k["start_us"].iloc[10]), float(k["start_us"].iloc[20])
    page.evaluate(f"window.ctl.showTab('Timeline').timeline.showRange({t0}, {t1})")
    view = page.evaluate("window.ctl.timeline.view")
    pad = (t1 - t0) * 0.05
    assert view == pytest.approx([t0 - pad, t1 + pad])
    assert page.locator(".ks-timeline-selection .ks-sel-duration").inner_text() == fmt_us(t1 - t0)
    # The table's selection is highlighted there.
    assert page.evaluate("[...window.ctl.timeline.hl].map(c => window.ctl.timeline.model.tables.kernels.strings.name[c])") == [name]


def test_roofline_dots_sized_by_time_costliest_named_memory_roof_with_bandwidth(site, page):
    rep = show(page, site, "llama", "Roofline")
    from tests.view.test_widget import view_model
    roof = view_model(rep)[0]["roofline"]        # what Python sends: points and ceilings
    panel = page.locator(".ks-panel[data-panel='Roofline']")
    dots = panel.locator(".ks-scatter-dots circle").evaluate_all(
        "els => els.map(e => [e.dataset.key, +e.getAttribute('r'), e.querySelector('title').textContent])")
    assert len(dots) == len(roof["points"]) > 10
    # Dot area grows with GPU time: largest dot first, the durations (in each dot's tooltip) fall.
    by_r = sorted(dots, key=lambda d: -d[1])
    shown = [d[2].split("\n")[2].rsplit(" · ", 1)[1] for d in by_r]
    assert shown == [fmt_us(p["duration_us"]) for p in sorted(roof["points"], key=lambda p: -p["duration_us"])]
    assert all(a[1] >= b[1] for a, b in zip(by_r, by_r[1:])) and by_r[0][1] > 3 * by_r[-1][1]
    costliest = max(roof["points"], key=lambda p: p["duration_us"])
    assert by_r[0][0] == costliest["name"]
    # The few costliest kernel names are written beside their dots, apart from each other.
    top = []
    for p in sorted(roof["points"], key=lambda p: -p["duration_us"]):
        if p["name"] not in top:
            top.append(p["name"])
    labels = panel.locator(".ks-point-label")
    want = [n if len(n) <= 30 else n[:29] + "…" for n in top[:3]]
    assert labels.all_text_contents() == want
    boxes = labels.evaluate_all("els => els.map(e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })")
    svg = panel.locator("svg.ks-scatter-chart").bounding_box()
    for i, a in enumerate(boxes):
        assert svg["x"] <= a[0] and a[2] <= svg["x"] + svg["width"] and svg["y"] <= a[1] and a[3] <= svg["y"] + svg["height"]
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    # The memory roof says its bandwidth, the compute roof its peak (and where they come from).
    roofs = panel.locator(".ks-roof-label").all_text_contents()
    for c in roof["ceilings"]:
        assert c["memory_label"] in roofs and c["peak_label"] in roofs
        assert f"{c['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s" in c["memory_label"]
    page.screenshot(path=str(ARTIFACTS / "roofline_llama.png"))
    assert not page.errors, page.errors
