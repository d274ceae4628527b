"""Hardware counters (PM sampling) on the real H200 recording in tests/data/counters/.

The recording (``tests/gpu_tools/record_counters.py pm``) holds the raw samples as CUPTI gave them
(TSC-tick timestamps, the first one 0), the clock calibration pairs taken while torch.profiler ran,
and the Kineto trace of the same step; ``ncu_validation.csv`` is Nsight Compute's per-kernel
measurement of the same workload.
"""
import gzip
import json
import os

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.counters import interval_means, kernel_counters, region_means
from kernelscope.trace.counters import DERIVED_COLUMNS, align, attach_samples, clock_map, placeable, torch_label_metric
from tests.conftest import DATA

REC = DATA / "counters"


def _raw():
    d = np.load(REC / "pm_samples.npz")
    info = json.loads((REC / "pm_info.json").read_text())
    return d["start_ns"], d["end_ns"], d["values"], info


def pm_report():
    """The recorded step with its PM samples placed on the Kineto clock, as the live capture does."""
    s, e, v, info = _raw()
    rep = ks.load(REC / "pm_workload.pt.trace.json.gz")
    notes = attach_samples(rep.trace, s, e, v, info["metrics"], info["calibration"],
                           info={"interval_us": info["interval_ns"] / 1000})
    assert notes == []
    return ks.Report(rep.trace)


@pytest.fixture(scope="module")
def rep():
    return pm_report()


def test_raw_recording_is_in_tsc_ticks():
    s, e, _, info = _raw()
    assert s[0] == 0                      # CUPTI's first sample starts at 0
    assert (e[1:] - s[1:]).min() >= 41999  # 20 us at ~2.1 ticks per ns: not ns
    slope, _, _ = clock_map(info["calibration"])
    assert 2.0 < 1 / slope < 2.2
    assert placeable(s, e).sum() == len(s) - 1


def test_samples_cover_the_region(rep):
    m = rep.metrics
    assert len(m) == 1382
    assert list(m.columns[:7]) == ["device_index", "start_us", "duration_us", *DERIVED_COLUMNS]
    assert "dram__bytes.sum" in m.columns
    # contiguous 20 us samples inside the profiler's span
    assert m["duration_us"].median() == pytest.approx(20.0, abs=0.01)
    gaps = (m["start_us"].iloc[1:].to_numpy() - (m["start_us"] + m["duration_us"]).iloc[:-1].to_numpy())
    assert np.abs(gaps).max() < 0.01
    assert m["start_us"].min() >= 0 and (m["start_us"] + m["duration_us"]).max() <= rep.meta["span_us"]
    assert rep.meta["counters"]["samples"] == 1382
    assert rep.meta["counters"]["clock_ticks_per_ns"] == pytest.approx(2.1, abs=0.01)


def test_per_kernel_values_match_what_the_kernels_do(rep):
    k = rep.kernels.set_index("short_name")
    gemm = rep.kernels[rep.kernels["backend"] == "cuBLAS"]
    assert len(gemm) == 2
    assert (gemm["tensor_pct"] > 90).all() and (gemm["sm_active_pct"] > 94).all()
    assert (gemm["counter_samples"] >= 60).all()
    spin = k.loc["spin_kernel"]              # spins on one SM: nothing else busy
    assert spin["sm_active_pct"] < 5 and spin["dram_pct"] < 3 and spin["tensor_pct"] < 1
    mul = k.loc["elementwise Mul (vectorized x4)"]
    assert mul["dram_pct"] > 85 and mul["tensor_pct"] < 1
    # dram__bytes.sum per sample as GB/s: 88% of the H200's 4.8 TB/s
    assert 4000 < mul["dram_gbps"] < 4500
    c = rep.copies.set_index("name")
    assert c.loc["Memcpy DtoD (Device -> Device)", "dram_pct"] > 85
    h2d = c.loc["Memcpy HtoD (Pinned -> Device)"]
    assert h2d["dram_pct"] < 2 and h2d["sm_active_pct"] < 1
    # 1 GiB over PCIe: DRAM sees the same bytes the copy engine moves
    assert h2d["dram_gbps"] == pytest.approx(h2d["bandwidth_gbps"], rel=0.05)


def test_alignment_is_at_sample_resolution(rep):
    """Sliding the kernels against the samples: the GEMMs' tensor share peaks, and the spin
    kernel's SM-active share bottoms out, within one 20 us sample of no shift (on this recording
    at -10 and -15 us: the samples sit about half a sample late), and fall off beyond."""
    m, k = rep.metrics, rep.kernels

    def mean(col, rows, shift):
        s = k.loc[rows, "start_us"].to_numpy() + shift
        return float(np.nanmean(interval_means(m, k.loc[rows, "device_index"], s,
                                               s + k.loc[rows, "duration_us"].to_numpy(), [col])[col]))
    shifts = np.arange(-60.0, 61.0, 5.0)
    gemm = k.index[k["backend"] == "cuBLAS"]
    spin = k.index[k["short_name"] == "spin_kernel"]
    tensor = [mean("tensor_pct", gemm, x) for x in shifts]
    active = [mean("sm_active_pct", spin, x) for x in shifts]
    assert abs(shifts[int(np.argmax(tensor))]) <= 20
    assert abs(shifts[int(np.argmin(active))]) <= 20
    assert tensor[0] < max(tensor) - 1.5 and tensor[-1] < max(tensor) - 4
    assert active[0] > min(active) + 4 and active[-1] > min(active) + 10


def test_pm_against_nsight_compute():
    """Per-kernel DRAM throughput from PM samples against ncu's replayed measurement of the same
    kernels (record_counters.py plain under ncu): within 10 points for kernels of >= 200 us."""
    rep = pm_report()
    ncu = ks.load_ncu(REC / "ncu_validation.csv").kernels
    # ncu ran the step twice after the inputs' randn kernels: its last six launches are one step
    last = ncu.tail(len(rep.kernels)).reset_index(drop=True)
    k = rep.kernels.reset_index(drop=True)
    for a, b in zip(k["name"], last["name"]):
        ident = a.replace("(anonymous namespace)", "").split("(")[0].split("<")[0].split("::")[-1]
        assert ident and ident in b
    table = pd.DataFrame({
        "kernel": k["short_name"], "duration_us": k["duration_us"].round(1),
        "pm_dram_pct": k["dram_pct"].round(1),
        "ncu_dram_pct": last["ncu_dram_throughput_avg_pct_of_peak_sustained_elapsed_pct"],
        "pm_tensor_pct": k["tensor_pct"].round(1),
        "ncu_tensor_pct": last["ncu_sm_pipe_tensor_cycles_active_avg_pct_of_peak_sustained_elapsed_pct"],
    })
    long = table[table["duration_us"] >= 200]
    assert len(long) == 6
    assert (long["pm_dram_pct"] - long["ncu_dram_pct"]).abs().max() <= 10
    assert (long["pm_tensor_pct"] - long["ncu_tensor_pct"]).abs().max() <= 10
    if os.environ.get("KS_PRINT_TABLES"):
        print(table.to_string(index=False))


def test_saved_report_keeps_the_samples(rep, tmp_path):
    path = rep.save(tmp_path / "pm.ksreport.json.gz")
    back = ks.load(path)
    pd.testing.assert_frame_equal(back.metrics, rep.metrics, check_dtype=False)
    for c in DERIVED_COLUMNS:
        np.testing.assert_allclose(back.kernels[c], rep.kernels[c])
    assert back.meta["counters"]["samples"] == 1382
    assert back.meta["counters"]["calibration"] == rep.meta["counters"]["calibration"]


def test_region_means_and_clock(rep):
    r = region_means(rep.metrics)[0]
    # the SM clock while sampling ran at its maximum (sampling may lock clocks)
    assert r["sm_clock_mhz"] == pytest.approx(1980, abs=5)
    assert r["samples"] == 1382
    kc = kernel_counters(rep.kernels)
    assert kc.iloc[0]["short_name"] == "cuBLAS GEMM 320x128 (sm90)" and kc.iloc[0]["launches"] == 2


def test_interval_means_edges():
    s = pd.DataFrame({"device_index": [0, 0, 1], "start_us": [0.0, 10.0, 0.0], "duration_us": [10.0, 10.0, 10.0],
                      "dram_pct": [10.0, np.nan, 99.0]})
    m = interval_means(s, [0, 0, 0, 1, None], [2.0, 5.0, 30.0, 1.0, 1.0], [4.0, 15.0, 31.0, 2.0, 2.0], ["dram_pct"])
    assert m["dram_pct"].tolist()[:2] == [10.0, 10.0]      # a NaN sample is left out, not counted as 0
    assert np.isnan(m["dram_pct"][2]) and m["counter_samples"][2] == 0
    assert m["dram_pct"][3] == 99.0                        # samples of its own device only
    assert np.isnan(m["dram_pct"][4])
    assert m["counter_coverage"][1] == pytest.approx(1.0)
    point = interval_means(s, [0], [12.0], [12.0], ["dram_pct"])
    assert point["counter_samples"][0] == 1


def test_clock_map_refuses_a_broken_calibration():
    assert clock_map([(1, 5)]) is None
    assert clock_map([(10, 5), (5, 9)]) is None
    assert align([7], (1.0, 100, 5), 0).tolist() == [0.102]
    trace = ks.load(REC / "pm_workload.pt.trace.json.gz").trace
    s, e, v, info = _raw()
    notes = attach_samples(trace, s, e, v, info["metrics"], [info["calibration"][0], info["calibration"][0]])
    assert "calibration" in notes[0] and len(trace.counters) == 0
    # a calibration off by an hour puts every sample outside the region: dropped, said so
    (t0, c0, _), (t1, c1, _) = info["calibration"]
    notes = attach_samples(trace, s, e, v, info["metrics"], [(t0 + 3600 * 10**9, c0), (t1 + 3600 * 10**9, c1)])
    assert "none falls inside" in notes[0] and len(trace.counters) == 0


def test_torch_label_vocabulary():
    assert torch_label_metric("DRAM BW (%)") == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    assert torch_label_metric("SM Active (%)") == "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
    assert torch_label_metric("Cycles (Current Kernel)") is None
    assert torch_label_metric("SM Clock (MHz)") is None


def _cupti_importable():
    from kernelscope.capture.counters import import_cupti
    try:
        import_cupti()
    except ImportError as e:
        return str(e)
    return None


def test_reads_torch_counter_tracks(tmp_path, cupti_python):
    """torch 2.14's own Chrome-trace writer for PM counters (``_build_pm_counters`` and
    ``_build_chrome_counters`` in torch/profiler/_cupti/monitor_trace.py), run here on the real PM
    samples of the H200 recording and merged into that step's real Kineto trace, reads back into
    the same columns as kernelscope's own samples.

    The H200's torch is 2.11, which lacks that backend, so no torch-written counter trace could
    be recorded there; this runs torch's real writer on real samples instead of a hand-made file.
    """
    # torch's writer imports cupti-python: the cupti_python fixture finds or installs it
    mt = pytest.importorskip("torch.profiler._cupti.monitor_trace",
                             reason="needs torch >= 2.14 (its CUPTI-monitor trace writer)")
    ours = pm_report()
    s, e, v, info = _raw()
    ok = placeable(s, e)
    slope, t0, c0 = clock_map(info["calibration"])
    # torch's PM frames: start_ns on the trace's clock (unix ns), device_id, one column per metric
    start_ns = t0 + np.round((s[ok].astype(np.int64) - c0) * slope).astype(np.int64)
    frame = {"start_ns": start_ns, "device_id": np.zeros(ok.sum(), np.int64)}
    frame.update({m: v[ok, j] for j, m in enumerate(info["metrics"])})
    with gzip.open(REC / "pm_workload.pt.trace.json.gz") as f:
        doc = json.load(f)
    events = mt._build_chrome_counters(mt._merge_counters(mt._build_pm_counters(frame, {0})),
                                       int(doc["baseTimeNanoseconds"]))
    assert {e["pid"] for e in events} == {"GPU 0 Counters"}
    assert "HBM BW (%)" in {e.get("name") for e in events}
    doc["traceEvents"].extend(events)
    path = tmp_path / "torch_counters.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    rep = ks.load(path)
    assert rep.meta["counters"]["source"].endswith("torch.profiler counter tracks)")
    assert len(rep.metrics) == len(ours.metrics)
    np.testing.assert_allclose(rep.metrics["start_us"], ours.metrics["start_us"], atol=0.002)
    for c in DERIVED_COLUMNS:
        np.testing.assert_allclose(rep.kernels[c], ours.kernels[c], rtol=1e-3, atol=0.05)
    # torch's labels lose the rollup; the values are the same metrics
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed" in rep.metrics.columns


def test_counter_events_of_other_tools_are_ignored(tmp_path):
    with gzip.open(REC / "pm_workload.pt.trace.json.gz") as f:
        doc = json.load(f)
    doc["traceEvents"] += [
        {"ph": "C", "name": "Power (W)", "pid": "GPU 0 Counters", "ts": doc["traceEvents"][5]["ts"], "args": {"": 300.0}},
        {"ph": "C", "name": "Total Allocated", "pid": 0, "ts": doc["traceEvents"][5]["ts"], "args": {"Total Allocated": 5}},
        {"ph": "C", "name": "HBM BW (%)", "pid": "GPU x Counters", "ts": 1.0, "args": {"": 3.0}},
        {"ph": "C", "name": "HBM BW (%)", "pid": "GPU 0 Counters", "ts": 1.0, "args": {"": "high"}},
    ]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    rep = ks.load(path)
    assert len(rep.metrics) == 0 and "counter_samples" not in rep.kernels.columns
    assert any("Power (W)" in n for n in rep.notes)


def test_view_payload_carries_the_samples(rep):
    from kernelscope.view.bundle import mime_payload
    from kernelscope.view.codec import decode_payload, read_payload
    p = mime_payload(rep)
    hd = read_payload(p)[0]["counters"]
    assert hd["samples"] == 1382 and hd["interval_us"] == 20.0
    assert [t["column"] for t in hd["tracks"]] == list(DERIVED_COLUMNS)
    assert all(t["color"].startswith("#") and t["meaning"] for t in hd["tracks"])
    assert "Measured by CUPTI PM sampling" in hd["note"] and "may lock GPU clocks" in hd["note"]
    cols = decode_payload(p)
    np.testing.assert_allclose(cols["counters"]["start_us"], rep.metrics["start_us"])
    np.testing.assert_allclose(cols["counters"]["tensor_pct"], rep.metrics["tensor_pct"], rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(cols["kernels"]["dram_pct"], rep.kernels["dram_pct"], rtol=1e-6)
    assert "dram_pct" in cols["copies"]
    # without samples the payload is as before
    plain = read_payload(mime_payload(ks.load(REC / "pm_workload.pt.trace.json.gz")))[0]
    assert plain["counters"] is None and "counters" not in plain["tables"]


def test_text_and_html_name_the_source(rep):
    text = repr(rep)
    assert "hardware counters (CUPTI PM sampling (kernelscope), every 20 us" in text
    html = rep._repr_html_()
    assert "measured by CUPTI PM sampling (kernelscope) every 20 us" in html
    assert ">93%<" in html      # the GEMMs' tensor share


def test_sampling_session_failures_are_notes(monkeypatch):
    """The live session's own failure paths that run without a GPU: cupti-python missing (the
    install hint), present beside an older libcupti that torch loaded (how to get the newer one
    loaded), or present but no driver (CUPTI's own error); either way nothing is held."""
    from kernelscope.capture import counters as cc
    pm = cc.PmSampling(True, 20, 0)
    assert pm.metrics == list(cc.DEFAULT_METRICS)
    pm.prepare()
    assert not pm.ok and len(pm.notes) == 1
    note = pm.notes[0]
    loaded = cc.loaded_cupti_version()
    if _cupti_importable() is None and loaded is not None and loaded < cc.MIN_CUPTI_VERSION:
        assert f"already loaded in this process is {loaded // 10000}.{loaded // 100 % 100}" in note
        assert "nvidia-cuda-cupti>=13.4" in note and "PYTHONPATH" in note
    elif _cupti_importable() is None:
        assert "PM sampling could not start" in note and "another tool may hold CUPTI" in note
    else:
        assert 'pip install "kernelscope[counters]"' in note and "PYTHONPATH" in note
    pm.start()
    pm.stop()
    assert pm.collect() is None and cc._users == 0
    monkeypatch.setenv("KERNELSCOPE_CUPTI_PATH", "/nonexistent/cupti")
    monkeypatch.setitem(__import__("sys").modules, "cupti", None)     # as if not installed
    with pytest.raises(ImportError, match="KERNELSCOPE_CUPTI_PATH=/nonexistent/cupti did not provide it"):
        cc.import_cupti()
    with pytest.raises(ValueError, match="interval_us"):
        cc.PmSampling(True, 0.5, 0)
    with pytest.raises(ValueError, match="CUPTI metric names"):
        cc.PmSampling(["", "x"], 20, 0)
