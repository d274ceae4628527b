"""The kernel deep dive (js/src/view/kernel.js) in chromium, on real H200 Nsight Compute reports:
selecting a kernel opens speed of light, the roofline dot, occupancy, memory, stall bars, hot
spots with SASS and Nsight Compute's advice, with the numbers the Python side computed."""
import json

import pytest
from conftest import ARTIFACTS, DATA
from test_view_page import serve_page, show

import kernelscope as ks
from kernelscope.view.bundle import mime_payload
from kernelscope.view.report import view_model

pytestmark = pytest.mark.browser
pytest.importorskip("ncu_report")
REP = DATA / "ncu_rep"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("kd_site")
    tri = ks.load_ncu(REP / "triton_kernels.ncu-rep.xz",
                      kernels_report=ks.load(REP / "ncu_triton_kernels.pt.trace.json.gz"))
    (root / "triton.json").write_text(json.dumps(mime_payload(tri)))
    (root / "torch_ops.json").write_text(json.dumps(mime_payload(ks.load_ncu(REP / "torch_ops.ncu-rep.xz"))))
    hostile = ks.load_ncu(REP / "attention.ncu-rep.xz")
    evil = "<img src=x onerror=alert(1)>"
    hostile.ncu_detail["rules"]["message"] = evil
    hostile.ncu_detail["hotspots"]["location"] = evil
    hostile.ncu_detail["sass"]["sass"] = evil
    (root / "hostile.json").write_text(json.dumps(mime_payload(hostile)))
    with serve_page(root) as url:
        yield url, tri


def _open(page, url, name, kernel):
    show(page, url, name)
    page.locator(".ks-filter").fill(kernel)
    page.locator(".ks-row.ks-kernel").first.click()
    kd = page.locator(".ks-kd")
    kd.wait_for()
    return kd


def test_strided_kernel_deep_dive(site, page):
    url, rep = site
    kd = _open(page, url, "triton", "strided_kernel")
    detail = view_model(rep)[0]["kernel_detail"]["launches"]["1"]
    assert kd.get_attribute("data-launch") == "1"
    assert "measured by Nsight Compute" in kd.locator(".ks-kd-sub").first.inner_text()
    # every block of the short details page is there
    titles = kd.locator(".ks-kd-title").all_inner_texts()
    assert titles == ["Speed of light", "Roofline (FP32)", "Occupancy", "Memory", "Warp stalls",
                      "Source hot spots", "Nsight Compute's advice"]
    sol = kd.locator("[data-kd='Speed of light']")
    assert sol.locator("[data-bar='Memory'] .ks-kd-val").text_content() == f"{detail['sol']['memory_pct']:.1f}%"
    assert sol.locator(".ks-kd-verdict").inner_text().startswith("memory-bound")
    # the roofline: three dots (DRAM, L2, L1) under three memory roofs and the FP32 peak
    roof = kd.locator(".ks-kd-roofline")
    assert roof.locator(".ks-kd-dot").count() == 3 and roof.locator(".ks-kd-ceiling").count() == 3
    assert "FP32 peak" in roof.text_content()
    occ = kd.locator("[data-kd='Occupancy']")
    assert occ.locator("[data-bar='achieved'] .ks-kd-val").text_content() == f"{detail['occupancy']['achieved'] * 100:.1f}%"
    assert occ.locator("[data-bar='theoretical'] .ks-kd-val").text_content() == "100.0%"
    mem = kd.locator("[data-kd='Memory']")
    assert mem.locator(".ks-kd-poor").inner_text().startswith("poor: global loads use 12% of the bytes")
    assert mem.locator("tr[data-metric='sectors per request'] td").inner_text() == "32.0, 16.0"
    bars = kd.locator("[data-kd='Warp stalls'] [data-bar]")
    assert bars.first.get_attribute("data-bar") == "mio_throttle"
    assert "What usually fixes it" in kd.locator(".ks-kd-stall-top").inner_text()
    hot = kd.locator(".ks-kd-hot > li").first
    assert hot.get_attribute("data-location") == "record_ncu.py:55"
    hot.locator("summary").click()
    assert "LDG" in hot.locator(".ks-kd-sass-hot").inner_text()
    advice = kd.locator(".ks-kd-advice > li")
    assert advice.count() == len(detail["advice"])
    assert "UncoalescedGlobalAccess" in [advice.nth(i).get_attribute("data-rule") for i in range(advice.count())]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "kernel_deep_dive.png"), full_page=True)
    assert not page.errors, page.errors


def test_gemm_roofline_and_no_line_info(site, page):
    url, _ = site
    kd = _open(page, url, "torch_ops", "nvjet")
    # A replay's time at stake is Nsight Compute's estimates, not "computed ... from the trace".
    stake = page.locator(".ks-fixes-head .ks-note").inner_text()
    assert "from the trace" not in stake and "Nsight Compute's estimated speedups" in stake
    assert kd.locator(".ks-kd-title").nth(1).inner_text() == "Roofline (BF16 tensor)"
    assert kd.locator("[data-kd='Roofline (BF16 tensor)'] .ks-kd-verdict").inner_text().startswith("compute-bound")
    assert kd.locator(".ks-kd-hot > li").first.get_attribute("data-location").startswith("PC 0x")
    assert not page.errors, page.errors


def test_recorded_text_stays_text(site, page):
    url, _ = site
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    kd = _open(page, url, "hostile", "cudnn")
    for s in kd.locator("summary").all():
        s.click()
    assert "<img" in kd.locator(".ks-kd-msg").first.inner_text()
    page.wait_for_timeout(200)
    assert page.locator(".ks-root img, .ks-root script").count() == 0 and dialogs == []
    assert not page.errors, page.errors


def test_open_ncu_report_file_in_jupyterlab(lab, page):
    import lzma
    with lzma.open(REP / "triton_kernels.ncu-rep.xz") as f:
        (lab.root / "tri.ncu-rep").write_bytes(f.read())
    lab.shutdown_kernels()
    lab.open(page, "tri.ncu-rep")
    view = page.locator(".ks-lab-file .ks-root")
    view.wait_for(timeout=60_000)
    assert view.locator(".ks-source").inner_text() == "tri.ncu-rep"
    view.locator(".ks-row.ks-kernel").first.click()       # the longest: strided_kernel
    kd = view.locator(".ks-kd")
    kd.wait_for()
    assert kd.get_attribute("data-launch") == "1"
    assert kd.locator(".ks-kd-roofline .ks-kd-dot").count() == 3
    assert lab.kernels() == []      # the server read the report; no kernel was started
