"""The report recorded live on the H200 with ``%%kernelprofile --metrics --stalls``
(tests/gpu_tools/record_live_counters.py, saved to tests/data/counters/live_counters.ksreport.json.gz):
what a saved report with samples and stalls holds, checked on a CPU."""
import numpy as np
import pytest

import kernelscope as ks
from kernelscope.capture.stalls import SOURCE
from kernelscope.view.bundle import mime_payload
from kernelscope.view.codec import read_payload
from tests.conftest import DATA

PATH = DATA / "counters" / "live_counters.ksreport.json.gz"
pytestmark = pytest.mark.skipif(not PATH.exists(), reason=(
    "tests/data/counters/live_counters.ksreport.json.gz not recorded yet: run "
    "tests/gpu_tools/record_live_counters.py on the H200"))


@pytest.fixture(scope="module")
def rep():
    return ks.load(PATH)


def _peak_mid(rep, row, col, pad=150.0):
    m = rep.metrics
    s, e = float(row["start_us"]), float(row["start_us"] + row["duration_us"])
    w = m[(m["start_us"] + m["duration_us"] > s - pad) & (m["start_us"] < e + pad)]
    i = int(np.nanargmax(w[col].to_numpy()))
    return s, float(w["start_us"].iloc[i] + w["duration_us"].iloc[i] / 2), e


def test_samples_and_provenance(rep):
    c = rep.meta["counters"]
    assert c["source"] == "CUPTI PM sampling (kernelscope)" and c["samples"] == len(rep.metrics) > 1000
    assert c["interval_us"] == 20.0 and not c["capped"] and len(c["calibration"]) == 2
    assert c["decode_s"] > 0 and c["image_bytes_per_sample"] > 1000
    assert rep.devices["name"].tolist() == ["NVIDIA H200"]
    assert not [n for n in rep.notes if "not sampled" in n or "dropped" in n]


def test_peaks_lie_inside_their_kernels(rep):
    k = rep.kernels
    gemm = k[(k["tensor_cores"] == True)].sort_values("duration_us").iloc[-1]  # noqa: E712
    s, mid, e = _peak_mid(rep, gemm, "tensor_pct")
    assert s <= mid <= e and gemm["tensor_pct"] > 80
    d2d = rep.copies[rep.copies["copy_kind"] == "DtoD"].sort_values("bytes").iloc[-1]
    s, mid, e = _peak_mid(rep, d2d, "dram_pct")
    assert s <= mid <= e and d2d["dram_pct"] > 70


def test_findings_and_stalls(rep):
    kinds = {f.kind for f in rep.findings}
    assert {"counters", "copy_bound", "latency_bound"} <= kinds
    assert set(rep.stalls["source"]) == {SOURCE}
    # the replay under Proton sampled every kernel the profiled run launched
    assert rep.meta["stalls"]["kernels_matched"] == rep.kernels["name"].nunique() >= 4
    assert rep.kernels.loc[rep.kernels["tensor_cores"] == True, "top_stall"].notna().all()  # noqa: E712
    header = read_payload(mime_payload(rep))[0]
    assert header["counters"]["samples"] == len(rep.metrics) and header["stalls"]["rows"]
