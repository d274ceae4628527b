"""Live hardware counters and live warp stalls on a CUDA device (run on the H200):

    KERNELSCOPE_CUPTI_PATH=/tmp/cupti_site python -m pytest -m gpu tests/test_gpu_counters.py -v -s

cupti-python (with its own nvidia-cuda-cupti 13.4) must be importable or in KERNELSCOPE_CUPTI_PATH;
the stall tests need Triton (Proton); the ncu comparison needs ``ncu`` on PATH. ``-s`` prints
the PM-vs-ncu table and the alignment figures for the report.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kernelscope as ks
from kernelscope.capture import counters as cc
from kernelscope.capture.stalls import SOURCE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu_tools"))
from live_counters_workload import SETUP, STEP, make_step  # noqa: E402

OUT = os.environ.get("KS_GPU_OUT")


def _need_cupti():
    try:
        cc.import_cupti()
    except ImportError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def step():
    _need_cupti()
    fn, ns = make_step()
    fn()
    return fn, ns


@pytest.fixture(scope="module")
def rep(step):
    fn, _ = step
    with ks.profile(metrics=True, interval_us=20) as prof:
        fn()
    r = prof.report
    if OUT:
        os.makedirs(OUT, exist_ok=True)
        r.save(os.path.join(OUT, "gpu_counters.ksreport.json.gz"))
    return r


def _no_counter_trouble(r):
    bad = [n for n in r.notes if "counter" in n.lower() or "PM sampl" in n]
    assert bad == [], bad


def _peak_inside(r, row, col, pad_us=150.0):   # the spin kernels around it run ~200 us
    """Where ``col`` peaks among the samples around ``row``'s interval, and whether inside it."""
    m = r.metrics
    s, e = float(row["start_us"]), float(row["start_us"] + row["duration_us"])
    w = m[(m["start_us"] + m["duration_us"] > s - pad_us) & (m["start_us"] < e + pad_us)]
    i = int(np.nanargmax(w[col].to_numpy()))
    mid = float(w["start_us"].iloc[i] + w["duration_us"].iloc[i] / 2)
    print(f"  {col} peak {w[col].iloc[i]:.1f} at {mid:.1f} us; interval [{s:.1f}, {e:.1f}]")
    return s <= mid <= e


def test_samples_are_taken_and_placed(rep):
    _no_counter_trouble(rep)
    m = rep.metrics
    c = rep.meta["counters"]
    print("counters meta:", {k: v for k, v in c.items() if k != "calibration"})
    assert len(m) > 1000 and c["samples"] == len(m) and not c["capped"]
    assert m["duration_us"].median() == pytest.approx(20, abs=0.5)
    span = rep.meta["span_us"]
    assert m["start_us"].min() > -20 and (m["start_us"] + m["duration_us"]).max() < span + 20
    gaps = m["start_us"].to_numpy()[1:] - (m["start_us"] + m["duration_us"]).to_numpy()[:-1]
    assert np.abs(gaps).max() < 1.0      # contiguous across decode chunks
    print("decode took", c["decode_s"], "s for", len(m), "samples; image bytes per sample",
          c["image_bytes_per_sample"])


def test_gemm_tensor_peak_lies_inside_the_gemm(rep):
    k = rep.kernels
    gemm = k[(k["backend"] == "cuBLAS") & (k["duration_us"] > 500)].iloc[0]
    assert gemm["tensor_pct"] > 80
    assert _peak_inside(rep, gemm, "tensor_pct")


def test_copy_dram_peak_lies_inside_the_copy(rep):
    c = rep.copies
    d2d = c[c["copy_kind"] == "DtoD"].sort_values("bytes").iloc[-1]
    assert d2d["dram_pct"] > 70
    assert _peak_inside(rep, d2d, "dram_pct")
    h2d = c[c["copy_kind"] == "HtoD"].sort_values("bytes").iloc[-1]
    assert h2d["sm_active_pct"] < 5 and h2d["dram_pct"] < 5


def test_findings_use_the_counters(rep):
    kinds = {f.kind: f for f in rep.findings}
    print([(f.kind, f.title) for f in rep.findings])
    assert "counters" in kinds and "copy_bound" in kinds
    assert "latency_bound" in kinds     # the spin kernel leaves the SMs idle
    k = rep.kernels
    skinny = k[k["name"].map(k["name"].value_counts()) == 4]
    print(skinny[["short_name", "backend", "tensor_cores", "tensor_pct", "dram_pct"]].drop_duplicates("short_name"))
    assert (skinny["tensor_pct"] < 60).all()        # measured: far below the tensor peak
    if (skinny["tensor_cores"] == True).all():     # noqa: E712 - where the rule knows it is a tensor-core GEMM
        assert "gemm_below_tensor_peak" in kinds


def test_pm_against_ncu(rep, tmp_path):
    """ncu's dram__throughput per kernel of the same step against the PM samples' time-weighted
    mean over each kernel of >= 200 us: within 10 points."""
    ncu = shutil.which("ncu")
    if ncu is None:
        pytest.skip("ncu not on PATH")
    csv = tmp_path / "ncu.csv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "gpu_tools"),
                                                       os.environ.get("PYTHONPATH", "")]))
    subprocess.run([ncu, "--clock-control", "none", "--metrics",
                    "dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,"
                    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                    "--csv", "--log-file", str(csv), sys.executable,
                    os.path.join(ROOT, "tests", "gpu_tools", "live_counters_workload.py")],
                   check=True, env=env, timeout=400, capture_output=True)
    n = ks.load_ncu(csv).kernels
    k = rep.kernels.reset_index(drop=True)
    last = n.tail(len(k)).reset_index(drop=True)    # ncu ran the step twice: its last launches are one step
    rows = []
    for a, b in zip(k.itertuples(), last.itertuples()):
        ident = a.name.replace("(anonymous namespace)", "").split("(")[0].split("<")[0].split("::")[-1]
        assert ident and ident in b.name, (a.name, b.name)
        rows.append((a.short_name, a.duration_us, a.dram_pct,
                     b.ncu_dram_throughput_avg_pct_of_peak_sustained_elapsed_pct,
                     a.tensor_pct, b.ncu_sm_pipe_tensor_cycles_active_avg_pct_of_peak_sustained_elapsed_pct))
    print(f"\n{'kernel':40} {'us':>8} {'PM DRAM%':>9} {'ncu DRAM%':>9} {'PM tensor%':>10} {'ncu tensor%':>11}")
    for r in rows:
        print(f"{r[0][:40]:40} {r[1]:8.1f} {r[2]:9.1f} {r[3]:9.1f} {r[4]:10.1f} {r[5]:11.1f}")
    long = [r for r in rows if r[1] >= 200]
    assert long
    assert max(abs(r[2] - r[3]) for r in long) <= 10


def test_decode_and_cap(step, monkeypatch):
    """All samples of the region come back in one decode, back to back; over the cap the first
    ones are kept and the report says so."""
    fn, _ = step
    with ks.profile(metrics=True, lean=True) as prof:
        fn()
    m = prof.report.metrics
    assert len(m) > 1000
    gaps = m["start_us"].to_numpy()[1:] - (m["start_us"] + m["duration_us"]).to_numpy()[:-1]
    assert np.abs(gaps).max() < 1.0, "samples lost"
    monkeypatch.setattr(cc, "MAX_SAMPLES", 300)
    with ks.profile(metrics=True, lean=True) as prof:
        fn()
    r = prof.report
    assert r.meta["counters"]["capped"] and len(r.metrics) <= 300
    assert any("kept the first 300 samples" in n for n in r.notes)
    assert len(r.kernels) >= 7


def test_refused_metric_keeps_the_profile(step):
    fn, _ = step
    with ks.profile(metrics=["sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum"]) as prof:
        fn()
    r = prof.report
    note = [n for n in r.notes if "hardware counters were not sampled" in n]
    print(note)
    assert note and "sm__throughput" in note[0] and "dram__bytes.sum" in note[0]
    assert len(r.metrics) == 0 and len(r.kernels) >= 7
    # and sampling works again afterwards in the same process (CUPTI's profiler deinit counted)
    with ks.profile(metrics=["dram__bytes.sum"]) as prof:
        fn()
    assert len(prof.report.metrics) > 100 and "dram_gbps" in prof.report.kernels.columns


def test_magic_metrics_and_stalls(step):
    pytest.importorskip("IPython")
    pytest.importorskip("triton.profiler")
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    assert sh.run_cell(SETUP, store_history=True).success   # a notebook cell: --stalls replays it
    r = sh.run_cell("%%kernelprofile --metrics --stalls --no-display -o rep_ms\n" + STEP, store_history=True)
    assert r.success, r.error_in_exec
    rep = sh.user_ns["rep_ms"]
    print("notes:", rep.notes)
    assert len(rep.metrics) > 1000
    s = rep.stalls
    # every kernel the profiled run launched got its stall row from the replay
    assert set(s["name"]) >= set(rep.kernels["name"]) and set(s["source"]) == {SOURCE}
    print(s[["name", "samples", "top_stall"]].to_string())
    gemm = rep.kernels[rep.kernels["backend"] == "cuBLAS"]
    assert gemm["top_stall"].notna().all()
    assert rep.meta["stalls"]["kernels_matched"] == rep.kernels["name"].nunique()
    # this process's torch.profiler still records: Proton sampled in the replay's own process
    r = sh.run_cell("%%kernelprofile --no-display -o rep_after\n" + STEP)
    assert r.success and len(sh.user_ns["rep_after"].kernels) >= 7


def test_plain_profile_is_unchanged_by_sampling_support(step):
    fn, _ = step
    with ks.profile() as prof:
        fn()
    r = prof.report
    assert len(r.metrics) == 0 and "tensor_pct" not in r.kernels.columns
    assert not [n for n in r.notes if "counter" in n]
