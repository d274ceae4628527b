"""Findings from measured counters, on the real H200 recording (tests/data/counters/)."""
import pytest

import kernelscope as ks
from kernelscope.analysis.findings import counters as cf
from tests.analysis.test_counters import pm_report


@pytest.fixture()
def rep():
    return pm_report()


def _kinds(rep):
    return [f.kind for f in rep.findings]


def test_findings_from_the_recording(rep):
    kinds = _kinds(rep)
    assert {"counters", "copy_bound", "latency_bound"} <= set(kinds)
    # the bf16 GEMMs run at 93% of the tensor pipe's peak: nothing to say about them
    assert "gemm_below_tensor_peak" not in kinds
    by = {f.kind: f for f in rep.findings}
    copy = by["copy_bound"]
    assert copy.severity == "high" and copy.evidence["sm_active_pct"] < 1
    assert copy.evidence["gbps"] == pytest.approx(54.8, abs=0.5)
    assert copy.cost_us == pytest.approx(19593, abs=1)
    spin = by["latency_bound"]
    assert spin.title.startswith("spin_kernel leaves most SMs idle")
    assert spin.evidence["sm_active_pct"] < 5 and spin.evidence["counter_samples"] >= 20
    head = by["counters"]
    assert head.severity == "info" and "may lock the GPU clocks" in head.detail
    assert head.evidence["sm_clock_mhz"] == pytest.approx(1980, abs=5)


def test_gemm_rule_on_the_real_gemm(rep, monkeypatch):
    """The same GEMMs judged against a bar above their 93%: the rule fires with the SMs-busy
    explanation (DRAM at 19%, SMs 96% active)."""
    monkeypatch.setattr(cf, "GEMM_LOW_TENSOR_PCT", 95.0)
    f = [x for x in cf.counter_findings(rep, rep.timeline) if x.kind == "gemm_below_tensor_peak"]
    assert len(f) == 1
    assert f[0].title == "cuBLAS GEMM 320x128 (sm90) keeps the tensor cores busy 93% of their peak"
    assert "tile quantization" in f[0].detail and f[0].evidence["launches"] == 2


def test_latency_rule_with_busy_sms(rep, monkeypatch):
    """The layer norm keeps its SMs busy at ~80% DRAM; with a DRAM bar above that it reads as
    latency-bound (SMs busy), not as an under-filled grid."""
    monkeypatch.setattr(cf, "LATENCY_MAX_DRAM_PCT", 85.0)
    f = {x.evidence["kernel"]: x for x in cf.counter_findings(rep, rep.timeline) if x.kind == "latency_bound"}
    ln = [v for k, v in f.items() if "layer_norm" in k]
    assert ln and ln[0].title.startswith("vectorized_layer_norm_kernel is latency-bound")


def test_short_kernels_are_not_judged(rep, monkeypatch):
    monkeypatch.setattr(cf, "COUNTER_MIN_SAMPLES", 100)
    assert not [f for f in cf.counter_findings(rep, rep.timeline) if f.kind in ("latency_bound",)]


def test_no_samples_no_counter_findings():
    rep = ks.load(pm_report().trace.meta["source"])
    assert not {"counters", "copy_bound", "latency_bound"} & set(_kinds(rep))
