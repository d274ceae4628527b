"""The report view on a plain page (the standalone bundle, same code as the widget and the
JupyterLab renderer) in chromium: every tab draws, and recorded text never becomes markup."""
import contextlib
import functools
import http.server
import json
import threading

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.view.bundle import mime_payload
from kernelscope.view.report import view_model
from tests.view.test_widget import HOSTILE, hostile_report

pytestmark = pytest.mark.browser
STATIC = DATA.parent.parent / "kernelscope" / "static"

PAGE = """<!doctype html><meta charset="utf-8"><body style="width:1300px;margin:8px">
<div id="root"></div>
<script type="module">
import { render } from "./report.js";
window.show = async (url) => {
  const payload = await (await fetch(url)).json();
  window.ctl = await render(document.getElementById("root"), payload);
  return true;
};
</script>"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve_page(root, page=PAGE):
    """``root`` served on 127.0.0.1 as a plain page with the standalone report view (what a saved
    notebook shows without a kernel); yields its URL. The tests put their payloads beside it."""
    (root / "report.js").write_bytes((STATIC / "report.js").read_bytes())
    (root / "index.html").write_text(page)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for name in ("mlp_train", "copies_streams"):
        rep = ks.load(DATA / f"{name}.pt.trace.json.gz")
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    mlp = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    # As %%kernelprofile --top 3 --sort launches shows it (rep.display(top=3, sort="launches")).
    top3 = view_model(mlp, options={"top": 3, "sort": "launches"})
    (root / "mlp_top3.json").write_text(json.dumps(mime_payload(mlp, top3)))
    mlp = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    merged = ks.load_ncu(DATA / "ncu_mlp_train.csv", kernels_report=mlp)
    (root / "mlp_ncu.json").write_text(json.dumps(mime_payload(merged)))
    rep = hostile_report(ks.load(DATA / "attention.pt.trace.json.gz"))
    (root / "hostile.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url


def show(page, site, name):
    page.goto(f"{site}/index.html")
    page.wait_for_function("typeof window.show === 'function'")
    page.evaluate(f"window.show('{name}.json')")
    page.locator(".ks-root").wait_for()


def test_every_tab_draws(site, page):
    rep = ks.load(DATA / "copies_streams.pt.trace.json.gz")
    show(page, site, "copies_streams")
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".ks-tab[data-tab='Timeline']").click()
    lanes = page.evaluate("window.ctl.timeline.rows.map(r => r.label)")
    streams = sorted({f"{d} s{s}" for d, s in zip(rep.kernels["device"], rep.kernels["stream"])}
                     | {f"cuda:{d} s{s}" for d, s in zip(rep.copies["device_index"], rep.copies["stream"])})
    assert sorted(x for x in lanes if x.startswith("cuda:") and not x.endswith("idle")) == streams
    assert "cuda:0 idle" in lanes
    # Host lanes: the outermost CPU ops and the CUDA API calls of each thread that made them.
    threads = sorted(set(rep.ops["tid"].astype(str)) | set(rep.runtime["tid"].astype(str)))
    assert {x.split()[1] for x in lanes if x.startswith("thread ")} == set(threads)
    drawn = page.evaluate("window.ctl.timeline.drawn")
    assert drawn > 0
    page.screenshot(path=str(ARTIFACTS / "view_timeline.png"))
    page.locator(".ks-tab[data-tab='Backends']").click()
    page.locator(".ks-panel[data-panel='Backends'] svg").wait_for()
    bars = page.locator(".ks-panel[data-panel='Backends'] tbody tr").all_inner_texts()
    assert len(bars) == len(rep.backends)
    page.locator(".ks-tab[data-tab='Findings']").click()
    assert page.locator(".ks-finding").count() == len(rep.findings)
    assert "pageable" in page.locator(".ks-panel[data-panel='Findings']").inner_text().lower()
    page.screenshot(path=str(ARTIFACTS / "view_findings.png"))
    assert not page.errors, page.errors


def test_mlp_details_and_occupancy_curves(site, page):
    show(page, site, "mlp_train")
    page.locator(".ks-row.ks-kernel").first.click()
    page.locator(".ks-occ-chart svg").nth(2).wait_for()
    page.screenshot(path=str(ARTIFACTS / "view_details.png"), full_page=True)
    assert not page.errors, page.errors


def test_top_and_sort_from_the_magic(site, page):
    summary = ks.load(DATA / "mlp_train.pt.trace.json.gz").summary()
    show(page, site, "mlp_top3")
    launches = [int(t) for t in page.locator(".ks-row.ks-kernel > .ks-cell:nth-child(4)").all_inner_texts()]
    assert launches == sorted(summary["launches"], reverse=True)[:3] == [12, 10, 4]
    page.locator(".ks-show-all").click()
    assert page.locator(".ks-table-status").inner_text().startswith("25 of 25")


def test_group_by_op_and_timeline_pan(site, page):
    k = ks.load(DATA / "mlp_train.pt.trace.json.gz").kernels
    show(page, site, "mlp_train")
    page.locator(".ks-group-by").select_option("op")
    first = page.locator(".ks-row.ks-group").first.inner_text()
    top_op = k.groupby("op")["duration_us"].sum().idxmax()
    n = k.loc[k["op"] == top_op, "name"].nunique()
    assert first.startswith(f"▾ {top_op}\n{n} kernels")
    page.locator(".ks-tab[data-tab='Timeline']").click()
    canvas = page.locator(".ks-timeline-canvas")
    box = canvas.bounding_box()
    page.locator(".ks-btn[title='zoom in']").click()
    zoomed = page.evaluate("window.ctl.timeline.view")
    # Shift+drag pans (a plain drag selects a range, as in Perfetto).
    page.mouse.move(box["x"] + 600, box["y"] + 30)
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(box["x"] + 400, box["y"] + 30, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    panned = page.evaluate("window.ctl.timeline.view")
    assert page.evaluate("window.ctl.timeline.selection") is None
    assert panned[0] > zoomed[0]                                   # dragged left: later times
    assert abs((panned[1] - panned[0]) - (zoomed[1] - zoomed[0])) < 1e-6 * (zoomed[1] - zoomed[0])
    page.locator(".ks-btn[title='show everything']").click()
    # Hover over a kernel in a lane shows its name and backend; click selects it in the table.
    start = float(k["start_us"].iloc[0]) + float(k["duration_us"].iloc[0]) / 2
    lane = f"{k['device'].iloc[0]} s{k['stream'].iloc[0]}"
    x, y = page.evaluate(f"(() => {{ const t = window.ctl.timeline; const row = t.rows.find(r => r.label === '{lane}'); "
                         f"return [112 + ({start} - t.view[0]) / (t.view[1] - t.view[0]) * (t.width - 112), row.y + row.h / 2]; }})()")
    page.mouse.move(box["x"] + x, box["y"] + y)
    tip = page.locator(".ks-tip")
    assert tip.is_visible() and k["backend"].iloc[0] in tip.inner_text()
    assert not page.errors, page.errors


def test_ncu_metrics_beside_ours(site, page):
    mlp = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    k = ks.load_ncu(DATA / "ncu_mlp_train.csv", kernels_report=mlp).kernels
    gemm = k[k["name"].str.startswith("nvjet")].groupby("name")["duration_us"].sum().idxmax()
    launches = k[k["name"] == gemm]
    show(page, site, "mlp_ncu")
    page.locator(".ks-filter").fill(gemm)
    page.locator(".ks-row.ks-kernel").first.click()
    table = page.locator(".ks-ncu-compare")
    table.wait_for()
    theo = table.locator("tr[data-metric='theoretical occupancy'] td").all_inner_texts()
    ours = launches["theoretical_occupancy"].mean()
    assert theo == [f"{ours:.1%}", f"{launches['ncu_theoretical_occupancy_pct'].mean():.1f}%"]
    assert abs(ours * 100 - launches["ncu_theoretical_occupancy_pct"].mean()) < 0.05   # we match ncu
    ach = table.locator("tr[data-metric='achieved occupancy'] td").all_inner_texts()
    assert ach[1] == f"{launches['ncu_achieved_occupancy_pct'].mean():.1f}%"
    dram = table.locator("tr[data-metric='DRAM throughput'] td").all_inner_texts()
    assert dram[1] == f"{launches['ncu_dram_throughput_pct'].mean():.1f}%"
    page.screenshot(path=str(ARTIFACTS / "view_ncu.png"), full_page=True)
    assert not page.errors, page.errors


def test_hostile_names_stay_text(site, page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    show(page, site, "hostile")
    row = page.locator(".ks-row.ks-kernel").first
    assert row.get_attribute("data-name").startswith(HOSTILE)
    assert HOSTILE in row.locator(".ks-name").get_attribute("title")
    row.click()
    assert page.locator(".ks-details .ks-fullname").inner_text().startswith(HOSTILE)
    for tab in ("Timeline", "Backends", "CPU ops", "Roofline", "Findings"):
        page.locator(f".ks-tab[data-tab='{tab}']").click()
    page.wait_for_timeout(300)
    assert page.locator(".ks-root script, .ks-root img").count() == 0
    assert dialogs == [] and not page.errors


DARK = ("--jp-ui-font-color1:#e6e6e6;--jp-ui-font-color2:#b0b0b0;--jp-layout-color1:#111111;"
        "--jp-layout-color2:#222222;--jp-border-color2:#444444;background:#111111")


def test_charts_follow_a_dark_theme(site, page):
    """Our SVG charts take the notebook theme's colours: light text on a dark page and a grid
    that stays faint (JupyterLab's dark theme sets these --jp-* variables)."""
    show(page, site, "mlp_train")
    page.evaluate(f"document.body.style.cssText += ';{DARK}'")
    page.locator(".ks-row.ks-kernel").first.click()
    page.locator(".ks-occ-chart svg").nth(2).wait_for()
    for tab in ("Backends", "Roofline"):
        page.locator(f".ks-tab[data-tab='{tab}']").click()
        page.locator(f".ks-panel[data-panel='{tab}'] svg.ks-svg").wait_for()
    styles = page.evaluate("""() => [...document.querySelectorAll('svg.ks-svg')].map(svg => {
        const text = svg.querySelector('.ks-axis text'), grid = svg.querySelector('.ks-grid line');
        const g = grid ? getComputedStyle(grid) : null;
        return { text: getComputedStyle(text).fill, grid: g && g.stroke, gridOpacity: g && +g.strokeOpacity };
    })""")
    assert len(styles) >= 5            # three occupancy curves, the backend bars, the roofline

    def luminance(rgb):
        r, g, b = (int(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

    for s in styles:
        assert luminance(s["text"]) > 0.6, s                          # readable on the dark page
        if s["grid"]:
            assert s["gridOpacity"] <= 0.1, s                          # no bright grid
    assert not page.errors, page.errors
