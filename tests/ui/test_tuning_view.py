"""The "Tuning" block of a kernel's details (standalone bundle, chromium), on the H200 tuning
recordings: a user's Triton matmul with its twelve candidates, Inductor's max-autotune choices
shown beside the cuBLAS kernel that won, and a kernel whose variant could not be identified."""
import json

import pytest

import kernelscope as ks
from kernelscope.view.bundle import mime_payload
from tests.conftest import DATA
from tests.ui.test_view_page import serve_page, show

pytestmark = pytest.mark.browser
TUNING = DATA / "tuning"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    reps = {n: ks.load(TUNING / f"{n}.ksreport.json.gz") for n in ("triton_tuning", "inductor_tuning", "inductor_links")}
    # A real engine inspector JSON on a trace whose kernel names are constructed from its tactics
    # (tests/analysis/test_tensorrt_layers.py says what is real).
    from tests.analysis.test_tensorrt_layers import ENGINE, _tactics, engine_trace_file
    t = _tactics()      # one whole pass of the engine, then one that starts a layer late
    reps["tensorrt"] = ks.load(engine_trace_file(root, t + t[1:] + t[:1]), tensorrt_layers=ENGINE)
    for n, rep in reps.items():
        (root / f"{n}.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url, reps


def _select(page, name):
    page.evaluate(f"window.ctl.setSelection([{json.dumps(name)}])")
    page.locator(".ks-details .ks-tuning").wait_for()
    return page.locator(".ks-details .ks-tuning")


def test_candidates_of_a_triton_kernel(site, page):
    url, reps = site
    show(page, url, "triton_tuning")
    block = _select(page, "matmul_kernel")
    text = block.inner_text()
    assert "produced by\tTriton" in text or "produced by Triton" in text.replace("\t", " ")
    assert "triton.autotune: matmul_kernel at 2048, 2048, 2048" in text and "12 candidates" in text
    rows = block.locator("table.ks-candidates[data-tuning='0'] tbody tr")
    assert rows.count() == 12
    first = rows.nth(0).inner_text()
    win = reps["triton_tuning"].autotune.iloc[0]
    assert first.startswith("★ " + win["config"])             # fastest first, the winner marked
    # the spilling candidate says so, and its occupancy is our calculator's
    spill = block.locator("table.ks-candidates[data-tuning='0'] tbody tr", has_text="BLOCK_M=256, BLOCK_N=128").inner_text()
    assert "674" in spill and "12.5%" in spill
    # click a header: sorted by spills, most first
    block.locator("table.ks-candidates[data-tuning='0'] th[data-col='spills']").click()
    assert "674" in rows.nth(0).inner_text()


def test_a_variant_that_cannot_be_told(site, page):
    url, _ = site
    show(page, url, "triton_tuning")
    text = _select(page, "scale_kernel").inner_text()
    assert "not identified: several compiled variants match this launch" in text


def test_inductor_choice_beside_the_cublas_kernel(site, page):
    url, reps = site
    show(page, url, "inductor_tuning")
    k = reps["inductor_tuning"].kernels
    cublas = k[(k["backend"] == "cuBLAS") & (k["op"] == "aten::mm")]["name"].iloc[0]
    block = _select(page, cublas)
    text = block.inner_text()
    assert "inductor max-autotune: mm at mm(1024x1024, 1024x1024)" in text and "17 candidates" in text
    assert "★ extern_kernels.mm" in text
    assert "from its name" in text and "xmma" in text


def test_a_tensorrt_kernel_names_its_layer(site, page):
    from tests.analysis.test_tensorrt_layers import FIRST, SHARED
    url, _ = site
    show(page, url, "tensorrt")
    text = _select(page, FIRST).inner_text().replace("\t", " ")
    assert "produced by TensorRT" in text and "TensorRT layer Conv_0 + Relu_1 (CaskConvolution)" in text
    text = _select(page, SHARED).inner_text().replace("\t", " ")
    assert "TensorRT layer 4 layers (CaskConvolution), each launch's from the engine's layer order" in text
    assert "4 launches: one of 4 layers (CaskConvolution) that share this tactic" in text


def test_a_candidate_links_to_the_launches_that_ran_it(site, page):
    """A candidate's launch count is a link: clicking the winner's narrows the kernel table to
    the launches that ran it (the rows Python linked in rep.autotune) and keeps its kernel selected."""
    url, reps = site
    show(page, url, "triton_tuning")
    win = reps["triton_tuning"].autotune.iloc[0]
    assert win["winner"] and win["launches"] == len(win["kernel_rows"]) > 0
    block = _select(page, "matmul_kernel")
    link = block.locator("table.ks-candidates[data-tuning='0'] tbody tr").nth(0).locator("button.ks-candidate-launches")
    assert link.inner_text() == f"{win['launches']:,}"
    link.click()
    page.wait_for_function("window.ctl.table.state.launches !== null")
    shown = page.evaluate("Array.from(window.ctl.table.state.launches.keys()).filter(i => window.ctl.table.state.launches[i])")
    assert shown == sorted(win["kernel_rows"])
    assert page.evaluate("window.ctl.selected") == ["matmul_kernel"]
    label = page.evaluate("window.ctl.table.state.label")
    assert label == f"that ran {win['config']} (the winner of matmul_kernel)"
    assert label in page.locator(".ks-panel[data-panel='Kernels']").inner_text()
    # a candidate no launch ran (add_kernel's losers, tuned before the region) has no link
    page.evaluate("window.ctl.table.apply({launches: null})")
    block = _select(page, "add_kernel")
    rows = block.locator("table.ks-candidates tbody tr")
    assert rows.count() == 4 and block.locator("button.ks-candidate-launches").count() == 1


def test_an_inductor_tuning_beside_the_compiled_kernel_of_its_winner(site, page):
    """The compiled template kernel's details show the tuning whose winner it runs; the winner's
    launch count links to its benchmark launches and that kernel's launch."""
    url, reps = site
    show(page, url, "inductor_links")
    a = reps["inductor_links"].autotune
    win = a[a["winner"]].iloc[0]
    block = _select(page, win["compiled_kernel"])
    table = block.locator(f"table.ks-candidates[data-tuning='{int(win['tuning'])}']")
    first = table.locator("tbody tr").nth(0)
    assert first.inner_text().startswith("★ " + win["config"])
    link = first.locator("button.ks-candidate-launches")
    assert link.inner_text() == f"{win['launches']:,}"
    link.click()
    page.wait_for_function("window.ctl.table.state.launches !== null")
    shown = page.evaluate("Array.from(window.ctl.table.state.launches.keys()).filter(i => window.ctl.table.state.launches[i])")
    assert shown == sorted(win["kernel_rows"])
    assert page.evaluate("window.ctl.table.state.label") == (
        f"that ran {win['config']} (the winner of {win['kernel']}; {int(win['benchmark_launches'])} of them the tuner's own)")
