"""What the view shows agrees with what Python computed (issue 28), in chromium on real H200
recordings: an Nsight Compute report drawn as a replay (no timeline, no GPU busy, kernel time),
a cuDNN conv's deep dive with one verdict, one peak and one shared-memory block limit, the
kernel table's statistics, shares and measured columns, and dots above the roofline that say
why. The page is the standalone bundle (the same view code as the widget and JupyterLab's)."""
import json

import pytest
from conftest import ARTIFACTS, DATA

import kernelscope as ks
from kernelscope.analysis.counters import kernel_counters
from kernelscope.capture.stalls import attach_stalls
from kernelscope.trace.proton import read_hatchet
from kernelscope.units import fmt_us
from kernelscope.view.bundle import mime_payload
from kernelscope.view.report import view_model
from tests.analysis.test_counters import pm_report
from tests.ui.test_view_page import serve_page, show

pytestmark = pytest.mark.browser
pytest.importorskip("ncu_report")
CONV = 4     # resnet50's first convolution in resnet50_full.ncu-rep


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("trust_site")
    pm = pm_report()
    attach_stalls(pm.trace, read_hatchet(DATA / "counters" / "proton_workload.hatchet"))
    reports = {"resnet": ks.load_ncu(DATA / "ncu_rep" / "resnet50_full.ncu-rep.xz"),
               "mlp": ks.load(DATA / "mlp_train.pt.trace.json.gz"),
               "pm": ks.Report(pm.trace),
               "libs": ks.load(DATA / "wild" / "torch_libs.pt.trace.json.gz", progress=False)}
    for name, rep in reports.items():
        (root / f"{name}.json").write_text(json.dumps(mime_payload(rep)))
    with serve_page(root) as url:
        yield url, reports


def test_ncu_report_is_drawn_as_a_replay(site, page):
    url, reps = site
    show(page, url, "resnet")
    tabs = page.locator(".ks-tab").all_inner_texts()
    assert [t.split(" (")[0] for t in tabs] == ["Kernels", "Backends", "Roofline", "Findings"]
    tiles = page.locator(".ks-tile").evaluate_all("els => els.map(e => e.getAttribute('data-tile'))")
    assert tiles == ["kernel launches", "kernels", "GPU kernel time"]
    assert "measured by Nsight Compute under replay" in page.locator(".ks-tile[data-tile='GPU kernel time']").get_attribute("title")
    head = page.locator(".ks-fixes-head").inner_text()
    assert "share of the kernel time" in head and "wall time" not in head
    first = page.locator(".ks-fix-share").first.inner_text()
    assert first.endswith("of kernel time")
    assert "measured by Nsight Compute" in page.locator(".ks-head .ks-h-total").get_attribute("title")
    assert "CUPTI" not in page.locator(".ks-head .ks-h-mean").get_attribute("title")
    page.locator(".ks-tab[data-tab='Roofline']").click()
    chart = page.locator("[data-panel='Roofline'] svg").first
    assert "FLOP/byte at DRAM, measured by Nsight Compute" in chart.text_content()
    assert "counted from op shapes" not in chart.text_content()
    page.locator(".ks-tab[data-tab='Backends']").click()
    assert "Nsight Compute" in page.locator(".ks-backends-gpu th", has_text="GPU time").get_attribute("title")
    assert not page.errors, page.errors


def test_conv_deep_dive_says_one_thing(site, page):
    url, reps = site
    hd = view_model(reps["resnet"])[0]
    e = hd["kernel_detail"]["launches"][str(CONV)]
    show(page, url, "resnet")
    page.locator(".ks-filter").fill("cuDNN conv")
    page.locator(".ks-row.ks-kernel").first.click()
    kd = page.locator(".ks-kd")
    kd.wait_for()
    assert kd.locator("[data-kd='Speed of light'] .ks-kd-verdict").inner_text().startswith("memory-bound")
    roof = kd.locator("[data-kd='Roofline (FP16 tensor)'] .ks-kd-verdict").inner_text()
    assert roof == e["roofline"]["verdict"] and "compute-bound" not in roof and "memory-bound" in roof
    # one FP16 tensor peak: the deep dive's roof label and the Roofline tab's ceiling
    peak = e["roofline"]["peak_flops_per_s"]
    assert f"FP16 tensor peak {peak / 1e12:.2f} TFLOP/s" in kd.locator(".ks-kd-roofline").text_content()
    tab = next(c for c in hd["roofline"]["ceilings"] if c["label"] == "cuda:0 FP16 tensor peak")
    assert tab["peak_flops_per_s"] == pytest.approx(peak)
    # one shared-memory block limit: the deep dive's (ours and ncu's) and the details panel's
    lim = kd.locator(".ks-kd-limits tr", has_text="shared mem").locator("td").all_inner_texts()
    occ = page.locator(".ks-occupancy tr", has_text="block limit: shared memory").locator("td").inner_text()
    assert lim[0] == lim[1] == occ == str(e["occupancy"]["ncu_limits"]["shared_mem"]).split(".")[0]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "trust_conv_deep_dive.png"), full_page=True)
    assert not page.errors, page.errors


def test_statistics_shares_and_backend_groups(site, page):
    url, reps = site
    rep = reps["mlp"]
    show(page, url, "mlp")
    page.locator(".ks-stats-toggle").click()
    heads = page.locator(".ks-head .ks-cell").all_inner_texts()
    assert {"Median", "Min", "Max", "Std dev"} <= {t.split(" ")[0] if t != "Std dev" else t for t in heads}
    top = rep.summary().iloc[0]
    row = page.locator(f".ks-row.ks-kernel[data-name={json.dumps(top['name'])}]")
    cells = row.locator(".ks-cell")
    texts = dict(zip([t.replace(" ▼", "").replace(" ▲", "") for t in heads], cells.all_inner_texts()))
    assert texts["Median"] == fmt_us(top.median_us) and texts["Std dev"] == fmt_us(top.std_us)
    assert texts["Min"] == fmt_us(top.min_us) and texts["Max"] == fmt_us(top.max_us)
    # sorting by the standard deviation puts the most variable kernel first
    page.locator(".ks-head .ks-h-std").click()
    s = rep.summary().sort_values("std_us", ascending=False, kind="stable")
    assert page.locator(".ks-row.ks-kernel").first.get_attribute("data-name") == s.iloc[0]["name"]
    # a launch row's share is of all kernel time, as its kernel row's is
    page.locator(".ks-head .ks-h-total").click()
    row.locator(".ks-expand").click()
    launch = page.locator(".ks-row.ks-launch").first
    i = int(launch.get_attribute("data-launch"))
    d = float(rep.kernels["duration_us"].iloc[i])
    share = launch.locator(".ks-cell").nth(heads.index("Share")).inner_text()
    assert share == f"{d / rep.kernels['duration_us'].sum() * 100:.1f}%"
    # the backend group's share of kernel time is the Backends tab's
    page.locator(".ks-group-by").select_option("backend")
    aten = page.locator(".ks-row.ks-group", has_text="ATen").inner_text()
    b = rep.backends
    ks_share = b[(b["backend"] == "ATen") & b["gpu_time_us"].notna()]["kernel_share"].iloc[0]
    assert f"{ks_share * 100:.1f}% of kernel time" in aten
    page.locator(".ks-tab[data-tab='Backends']").click()
    cell = page.locator(".ks-backends-gpu tr", has_text="ATen").locator("td").all_inner_texts()
    assert f"{ks_share * 100:.1f}%" in cell
    assert not page.errors, page.errors


def test_measured_columns_sort_and_stalls_named_alike(site, page):
    url, reps = site
    rep = reps["pm"]
    show(page, url, "pm")
    heads = [t.replace(" ▼", "").replace(" ▲", "") for t in page.locator(".ks-head .ks-cell").all_inner_texts()]
    assert {"SM active", "Tensor", "DRAM", "Top stall"} <= set(heads)
    kc = kernel_counters(rep.kernels).set_index("name")
    page.locator(".ks-head .ks-h-tensor").click()
    first = page.locator(".ks-row.ks-kernel").first
    name = first.get_attribute("data-name")
    assert name == kc["tensor_pct"].idxmax()
    cells = dict(zip(heads, first.locator(".ks-cell").all_inner_texts()))
    assert cells["Tensor"] == f"{kc.loc[name, 'tensor_pct']:.0f}%" and cells["SM active"] == f"{kc.loc[name, 'sm_active_pct']:.0f}%"
    top = rep.kernels.loc[rep.kernels["name"] == name, "top_stall"].iloc[0]
    assert cells["Top stall"] == top
    first.click()
    th = page.locator(".ks-stalls tr").first.locator("th").inner_text()
    assert th == page.locator(".ks-stalls tr").first.get_attribute("data-reason")     # the reason's name, as ncu's bars
    assert not page.errors, page.errors


def test_dots_above_the_roof_say_why(site, page):
    url, reps = site
    roof = view_model(reps["libs"])[0]["roofline"]
    above = [p for p in roof["points"] if p["note"]]
    show(page, url, "libs")
    page.locator(".ks-tab[data-tab='Roofline']").click()
    tips = page.locator("[data-panel='Roofline'] circle title").all_text_contents()
    for p in above:
        assert any(p["note"] in t and p["name"] in t for t in tips)
    assert "sit above their roof" in page.locator("[data-panel='Roofline'] .ks-note").inner_text()
    assert not page.errors, page.errors
