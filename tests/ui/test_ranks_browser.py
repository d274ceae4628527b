"""The multi-rank view in chromium: the real H200 rank traces as lanes, the stragglers and the
collectives, the rank selector; on a plain page (standalone bundle, what a saved notebook shows
without a kernel) and in the live widget of a real JupyterLab kernel, where picking a rank opens
that rank's full report from Python."""
import json
import shutil

import nbformat
import pytest
from conftest import ARTIFACTS, DATA
from test_view_page import serve_page
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks
from kernelscope.render.text import fmt_us
from kernelscope.view.bundle import mime_payload
from kernelscope.view.ranks import ranks_view_model

pytestmark = pytest.mark.browser
RANKS = DATA / "ranks"


@pytest.fixture(scope="module")
def ranks_rep():
    return ks.load_ranks(RANKS, workers=1)


@pytest.fixture(scope="module")
def site(tmp_path_factory, ranks_rep):
    root = tmp_path_factory.mktemp("ranks-site")
    (root / "ranks.json").write_text(json.dumps(mime_payload(ranks_rep, ranks_view_model(ranks_rep))))
    # A rank file with markup in its name and a damaged body: named in the notes, as text.
    d = tmp_path_factory.mktemp("hostile-ranks")
    shutil.copy(RANKS / "rank0.pt.trace.json.gz", d / "rank0.pt.trace.json.gz")
    (d / "<img src=x onerror=alert(1)>.pt.trace.json").write_text('{"traceEvents": [')
    hostile = ks.load_ranks(d, workers=1)
    (root / "hostile.json").write_text(json.dumps(mime_payload(hostile, ranks_view_model(hostile))))
    with serve_page(root) as url:
        yield url


def show(page, site, name):
    page.goto(f"{site}/index.html")
    page.wait_for_function("typeof window.show === 'function'")
    page.evaluate(f"window.show('{name}.json')")
    page.locator(".ks-ranks").wait_for()


def test_lanes_stragglers_collectives(site, page, ranks_rep):
    show(page, site, "ranks")
    ARTIFACTS.mkdir(exist_ok=True)
    assert page.evaluate("window.ctl.lanes.ranks") == [0, 1]
    assert page.evaluate("window.ctl.lanes.drawn") > 0
    # The straggler is marked on its lane label.
    assert "slowest rank" in page.locator(".ks-tiles").inner_text()
    assert page.locator(".ks-tile-value").nth(2).inner_text() == "1 (3/3)"
    page.screenshot(path=str(ARTIFACTS / "ranks_lanes.png"))
    rows = page.locator(".ks-rank-table tbody tr")
    assert rows.count() == 2
    assert fmt_us(ranks_rep.ranks.loc[1, "compute_us"]) in rows.nth(1).inner_text()

    page.locator(".ks-tab[data-tab='Steps']").click()
    strag = page.locator(".ks-stragglers tbody tr")
    assert strag.count() == 3
    for i, lag in enumerate(ranks_rep.stragglers["lag_us"]):
        cells = strag.nth(i).locator("td").all_inner_texts()
        assert cells[1] == "1" and cells[2] == fmt_us(lag)

    page.locator(".ks-tab[data-tab='Collectives']").click()
    comm = page.locator(".ks-comm tbody tr").all_inner_texts()
    assert any("AllReduce" in r and "32.0 MiB" in r for r in comm)

    # Clicking rank 1's lane opens the Kernels tab on rank 1 (its 60 extra GEMMs lead).
    page.locator(".ks-tab[data-tab='Ranks']").click()
    box = page.locator(".ks-rank-lanes").bounding_box()
    page.mouse.click(box["x"] + 300, box["y"] + 20 + 18 + 9)
    assert page.locator(".ks-panel[data-panel='Kernels']").is_visible()
    assert page.locator(".ks-rank-select").input_value() == "1"
    first = page.locator(".ks-rank-kernels tbody tr").first.locator("td").all_inner_texts()
    top = ranks_rep.summary().query("rank == 1").iloc[0]
    assert first[0] == top["short_name"] and first[2] == "60"
    # No live kernel here: no button to open the full report.
    assert page.locator(".ks-open-rank").count() == 0
    page.locator(".ks-rank-select").select_option("0")
    assert page.locator(".ks-rank-kernels tbody tr").count() == len(ranks_rep.summary().query("rank == 0"))
    page.screenshot(path=str(ARTIFACTS / "ranks_kernels.png"))
    assert not page.errors


def test_hostile_file_name_stays_text(site, page):
    page.on("dialog", lambda d: (_ for _ in ()).throw(AssertionError("a file name ran as script")))
    show(page, site, "hostile")
    notes = page.locator(".ks-notes").inner_text()
    assert "<img src=x onerror=alert(1)>" in notes
    assert page.locator(".ks-ranks img").count() == 0 and not page.errors


def test_live_widget_opens_a_rank(lab, page):
    for name in ("rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"):
        (lab.root / "ranks").mkdir(exist_ok=True)
        shutil.copy(RANKS / name, lab.root / "ranks" / name)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell('import kernelscope as ks\nrr = ks.load_ranks("ranks", workers=1)\nrr.widget()')]
    nb.cells[0].id = "cell-0"
    nbformat.write(nb, str(lab.root / "ranks_live.ipynb"))
    logs = []
    page.on("console", lambda m: logs.append(m.text))
    lab.open(page, "ranks_live.ipynb")
    wait_idle(page)
    out = run_cell(page, 0).locator(".jp-OutputArea-output")
    try:
        out.locator(".ks-ranks").wait_for(timeout=30_000)
    except Exception:  # noqa: BLE001 - any failure to draw: show the page's errors
        raise AssertionError(f"{page.errors} {logs[-20:]}") from None
    out.locator(".ks-tab[data-tab='Kernels']").click()
    out.locator(".ks-rank-select").select_option("1")
    out.locator(".ks-open-rank").click()
    # Python opened rank 1's trace and sent its full report: the single-rank view, below.
    full = out.locator(".ks-rank-full .ks-root")
    full.wait_for(timeout=60_000)
    tiles = full.locator(".ks-tile-value").all_inner_texts()
    assert "129" in tiles        # rank 1's launches (rank 0 has 69)
    page.screenshot(path=str(ARTIFACTS / "ranks_live_rank1.png"))
    lab.shutdown_kernels()
