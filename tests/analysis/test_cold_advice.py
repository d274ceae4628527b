"""Issue 41: a cold first run reads as a first run (fix: warm up), priced at what warming up
gave, not as steady-state overhead (syncs, host-bound, an idle GPU); a warm step recorded under a
fresh profiler does not. H200 recordings of benchmarks/advice (tests/data/advice, RECORDINGS.md),
each cold "before" the first call in a fresh process, its "after" the same call after a warm-up;
``gains.json`` holds the realized gain (median unprofiled first call minus warm call, ms)."""
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.cold_start import FIRST_LAUNCH_CALL_US, SLOW_CALL_US, cold_start
from kernelscope.analysis.priorities import what_to_fix
from tests.conftest import DATA

ADVICE = DATA / "advice"
GAINS = json.loads((ADVICE / "gains.json").read_text())
COLD = ["cudnn_benchmark_first_call", "triton_first_call", "first_ops_in_process"]
WARM = ["small_ops_chain", "adam_per_parameter", "lm_head_50257"]
# Steady-state items that must not hold a first run's time.
STEADY = ("syncs", "host_bound", "launch_bound", "gpu_idle", "host_idle")


def _load(name, variant="before"):
    return ks.load(ADVICE / f"{name}.{variant}.ksreport.json.gz")


def _items(rep):
    return what_to_fix(rep.findings, rep.wall_time_us)


@pytest.mark.parametrize("name", COLD)
def test_a_cold_first_call_leads_with_the_first_run_priced_at_the_warm_up_gain(name):
    rep = _load(name)
    top = _items(rep)[0]
    assert top["kind"] == "cold_start" and top["title"].startswith("This looks like a first run")
    assert top["fix"] == "This looks like a first run: profile it again or use --warmup 1."
    ratio = GAINS[name]["gain_ms"] / (top["cost_us"] / 1e3)
    assert 0.5 <= ratio <= 1.5, (name, top["cost_us"], GAINS[name]["gain_ms"])
    # Each microsecond once: no steady-state item prices what the first run holds.
    steady = sum(f.cost_us for f in rep.findings if f.kind in STEADY)
    assert steady < 0.1 * top["cost_us"], [(f.kind, f.cost_us) for f in rep.findings if f.kind in STEADY]


def test_cudnn_benchmark_search_is_the_first_run_not_the_users_syncs():
    """ResNet-18 with cudnn.benchmark=True, first call: 231 cudaEventSynchronize/DeviceSynchronize
    inside the first aten::cudnn_convolution of each shape. It read "234 host-blocking calls ...
    idled the GPU 370 ms: keep values on the GPU instead of .item()", then host-bound."""
    rep = _load("cudnn_benchmark_first_call")
    f = next(f for f in rep.findings if f.kind == "cold_start")
    ev = f.evidence
    assert ev["search_syncs"] >= 200 and ev["search_calls"] >= 10 and ev["search_us"] > 400e3
    assert "cuDNN's algorithm search" in f.title and "cudnn.benchmark" in f.detail
    assert not any(f.kind == "syncs" for f in rep.findings)
    # The after run (warm, the same shapes) searches nothing and is no first run.
    warm = cold_start(_load("cudnn_benchmark_first_call", "after"))
    assert warm["search_syncs"] == 0 and not warm["cold"]


def test_a_triton_first_call_is_its_jit_compile():
    """One 6 us launch after 1 s with nothing recorded (Triton compiling in Python): it read
    "The GPU was idle 100.0% of the 1.01 s wall time"."""
    rep = _load("triton_first_call")
    ev = rep.findings[0].evidence
    assert ev["jit"][0]["kernel"] == "grid_stride_add" and ev["jit_us"] > 900e3
    assert "JIT-compiled kernel (grid_stride_add)" in rep.findings[0].detail


def test_first_ops_in_process_pay_module_loading_and_library_setup():
    """sum, matmul, softmax as a process's first CUDA calls: 76 ms in the first aten::mm (cuBLAS
    initializing), 11 ms in the first aten::sum beside its 5.6 ms launch. It read host-bound."""
    rep = _load("first_ops_in_process")
    ev = rep.findings[0].evidence
    ops = {s["op"]: s["host_us"] for s in ev["slow_ops"]}
    assert ops["aten::mm"] > 70e3 and ops["aten::sum"] > 10e3
    assert ev["load_us"] > 5e3


@pytest.mark.parametrize("variant", ["before", "after"])
@pytest.mark.parametrize("name", WARM)
def test_a_warm_step_is_no_first_run(name, variant):
    rep = _load(name, variant)
    assert "cold_start" not in [f.kind for f in rep.findings]


@pytest.mark.parametrize("name", COLD)
def test_the_warm_call_after_a_warm_up_is_no_first_run(name):
    """These were recorded before the capture fix (990034b): 27-35 ms of kernelscope's own set-up
    open each region, with no op and no launch in it. That is no first run either."""
    rep = _load(name, "after")
    assert rep.wall_time_us > 25e3
    assert "cold_start" not in [f.kind for f in rep.findings]


def _first_launch_slowed(name, us):
    """The warm step with its first launch call taking ``us`` (the profiler's start-up landing on
    it, 2.5-3.7 ms in a warm process on the H200) and everything after it that much later."""
    from kernelscope.reports.report import Report
    tr = ks.load(ADVICE / f"{name}.before.ksreport.json.gz").trace
    rt = tr.runtime
    first = rt[rt["name"].str.contains("Launch")].sort_values("start_us").iloc[0]
    t0, delta = float(first["start_us"]), us - float(first["duration_us"])
    for table in ("runtime", "ops", "kernels", "copies", "syncs"):
        df = getattr(tr, table).copy()
        if not len(df):
            continue
        s = df["start_us"].astype(float)
        around = (s <= t0) & (s + df["duration_us"].astype(float) > t0)
        df.loc[around, "duration_us"] = df.loc[around, "duration_us"] + delta
        df.loc[s > t0, "start_us"] = s[s > t0] + delta
        if "launch_start_us" in df:
            later = df["launch_start_us"] > t0
            df.loc[later, "launch_start_us"] = df.loc[later, "launch_start_us"] + delta
        setattr(tr, table, df)
    for key in ("cuda_event_us", "span_us"):
        if tr.meta.get(key):
            tr.meta[key] += delta
    return Report(tr)


def test_the_profilers_start_up_on_a_warm_steps_first_launch_is_no_first_run():
    """A warm step under a fresh profiler read "This looks like a first run: 3.3-3.7 ms went to
    module loading" (issue 41): its first launch call paid the profiler's start-up. The region's
    first launch is taken for module loading from 5 ms on, and an op's first call is judged on
    its host time outside its launches."""
    rep = _first_launch_slowed("small_ops_chain", 3600.0)
    assert SLOW_CALL_US < 3600.0 < FIRST_LAUNCH_CALL_US
    assert rep.runtime["duration_us"].max() >= 3600.0
    c = cold_start(rep)
    assert c["load_us"] == 0 and not c["first_calls"] and not c["slow_ops"] and not c["cold"]
    assert "cold_start" not in [f.kind for f in rep.findings]
    # A first launch of 9 ms (a lazily loaded module, issue 41's four-launch recording) is one.
    assert cold_start(_first_launch_slowed("small_ops_chain", 9000.0))["load_us"] >= 9000.0
