"""The CUDA graphs tab (js/src/view/graphs.js) in chromium at 1400x900, on the plain page (the
standalone bundle: the view code of the widget and the JupyterLab renderer), on real H200
recordings (tests/data/graphs): each graph with its replays and kernels per replay, and a
replayed kernel's capture in its details and in the timeline's properties pane."""
import json

import pytest
from conftest import ARTIFACTS, DATA
from test_view_page import serve_page, show

import kernelscope as ks
from kernelscope.panels.graphs import KERNEL_FIELDS
from kernelscope.view.bundle import mime_payload

pytestmark = pytest.mark.browser
GRAPHS = DATA / "graphs"
HOSTILE = "<img src=x onerror=window.pwned=1>"
LABEL = {k: lab for k, lab, _ in KERNEL_FIELDS}


@pytest.fixture(scope="module")
def reports():
    hostile = ks.load(GRAPHS / "manual_in_region.pt.trace.json.gz")
    k = hostile.kernels
    hostile.kernels["op"] = k["op"].where(~k["graph"].notna() | (k["op"] != "aten::addmm"), HOSTILE)
    return {"manual": ks.load(GRAPHS / "manual_in_region.pt.trace.json.gz"),
            "compiled": ks.load(GRAPHS / "compiled_capture_in_region.pt.trace.json.gz"),
            "no_watch": ks.load(GRAPHS / "no_watch.ks.json.gz"),
            "mlp": ks.load(DATA / "mlp_train.pt.trace.json.gz"), "hostile": hostile}


@pytest.fixture(scope="module")
def site(tmp_path_factory, reports):
    root = tmp_path_factory.mktemp("graphs")
    for name, rep in reports.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url


@pytest.fixture
def small(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


def _table(page):
    heads = page.locator(".ks-graphs-table thead th").all_inner_texts()
    rows = [r.locator("td").all_inner_texts() for r in page.locator(".ks-graphs-table tbody tr").all()]
    return [h.rstrip(" ▲▼") for h in heads], rows


@pytest.mark.parametrize("name", ["manual", "compiled", "no_watch"])
def test_graphs_tab_lists_each_graph_with_its_replays(site, small, reports, name):
    rep = reports[name]
    show(small, site, name)
    tab = small.locator(".ks-tab[data-tab='CUDA graphs']")
    # One click from the first screen: the tab is on it, without scrolling.
    box = tab.bounding_box()
    assert box and box["y"] + box["height"] <= 900
    assert tab.inner_text() == f"CUDA graphs ({len(rep.graphs)})"
    tab.click()
    heads, rows = _table(small)
    g = rep.graphs
    assert len(rows) == len(g)
    cell = dict(zip(heads, rows[0]))
    assert cell["replays"] == str(g["replays"][0]) and cell["kernels / replay"] == str(g["kernels_per_replay"][0])
    assert cell["graph"].startswith(g["graph"][0])
    if g["unmatched"][0]:
        assert cell["unmatched because"] == g["unmatched"][0]
    ARTIFACTS.mkdir(exist_ok=True)
    small.screenshot(path=str(ARTIFACTS / f"graphs_{name}.png"), full_page=True)
    assert not small.errors, small.errors


def test_a_replayed_kernel_shows_its_capture(site, small, reports):
    rep = reports["manual"]
    k = rep.kernels
    show(small, site, "manual")
    small.locator(".ks-tab[data-tab='CUDA graphs']").click()
    nodes = small.locator(".ks-graph-nodes").first
    nodes.locator("summary").click()
    first = k[k["graph"].notna() & (k["graph_replay"] == 1)].sort_values("graph_node")
    assert nodes.locator("tbody tr").count() == int(rep.graphs["kernels_per_replay"][0]) == len(first)
    # Its kernel link selects the kernel: the details show its capture, for each of its launches.
    nodes.locator(".ks-graph-kernel").first.click()
    assert small.locator(".ks-tab[aria-selected='true']").get_attribute("data-tab") == "Kernels"
    block = small.locator(".ks-details .ks-graph-fields")
    fields = {r.get_attribute("data-field"): r.locator("td").inner_text() for r in block.locator("tr").all()}
    name = first["name"].iloc[0]
    launches = k[k["name"] == name]
    assert fields["graph"] == "capture 1" if launches["graph"].nunique() == 1 else "capture 1" in fields["graph"]
    assert launches["capture_basis"].iloc[0] in fields["capture_basis"]
    assert "graph_unmatched" not in fields
    small.screenshot(path=str(ARTIFACTS / "graphs_kernel_details.png"), full_page=True)
    # The graph's launches open in the kernel table.
    small.locator(".ks-tab[data-tab='CUDA graphs']").click()
    small.locator(".ks-graph-launches").first.click()
    assert str(int(k["graph"].notna().sum())) in small.locator(".ks-table-status").inner_text()
    assert not small.errors, small.errors


def _click_kernel(page, i):
    page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, k = tl.model.tables.kernels;
        const s = k.cols.start_us[{i}], d = k.cols.duration_us[{i}] || 1; tl.showRange(s - d, s + 2 * d, {{ select: false }}); }})()""")
    x, y = page.evaluate(f"""(() => {{ const tl = window.ctl.timeline, b = tl._box('kernels', {i}), r = tl.canvas.getBoundingClientRect();
        return [r.left + (b.x0 + b.x1) / 2, r.top + b.y + b.lh / 2]; }})()""")
    page.mouse.click(x, y)
    return {r.get_attribute("data-prop"): r.locator(".ks-tl-v").inner_text() for r in page.locator(".ks-tl-prop").all()}


@pytest.mark.parametrize("name", ["manual", "no_watch"])
def test_timeline_properties_of_a_replayed_kernel(site, small, reports, name):
    rep = reports[name]
    k = rep.kernels.reset_index(drop=True)
    show(small, site, name)
    small.locator(".ks-tab[data-tab='Timeline']").click()
    i = int(k.index[k["graph_launch"].astype(bool)][-1])
    props = _click_kernel(small, i)
    assert props[LABEL["graph_replay"]] == str(k.loc[i, "graph_replay"])
    if name == "manual":
        assert props[LABEL["graph"]] == k.loc[i, "graph"] and props[LABEL["graph_node"]] == str(k.loc[i, "graph_node"])
        assert props[LABEL["capture_basis"]] == k.loc[i, "capture_basis"] and LABEL["graph_unmatched"] not in props
        assert props["CPU op"] == k.loc[i, "op"]
    else:
        assert props[LABEL["graph_unmatched"]] == k.loc[i, "graph_unmatched"] and LABEL["graph"] not in props
    assert not small.errors, small.errors


def test_no_graphs_tab_without_graphs(site, small):
    show(small, site, "mlp")
    assert small.locator(".ks-tab").count() > 3
    assert small.locator(".ks-tab[data-tab='CUDA graphs']").count() == 0
    assert not small.errors, small.errors


def test_recorded_text_stays_text(site, small):
    show(small, site, "hostile")
    small.locator(".ks-tab[data-tab='CUDA graphs']").click()
    assert HOSTILE in small.locator(".ks-graphs-table").inner_text()
    nodes = small.locator(".ks-graph-nodes").first
    nodes.locator("summary").click()
    assert HOSTILE in nodes.inner_text()
    assert small.locator(".ks-root img").count() == 0
    assert small.evaluate("window.pwned") is None and not small.errors
