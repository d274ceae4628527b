"""Training-loop steps (analysis/steps.py, rep.steps, findings/steps.py) on the H200 recordings of
benchmarks/training/record.py: a transformer LM under schedule(wait=1, warmup=2, active=12) and the
same model leaking (schedule(wait=0, warmup=1, active=8))."""
import gzip
import json

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.steps import PARTS, step_summary, step_table
from tests.conftest import DATA

LM = DATA / "training" / "lm_steps.pt.trace.json.gz"
LEAK = DATA / "training" / "leak_steps.pt.trace.json.gz"




def test_twelve_steps_with_their_numbers(lm):
    t = lm.steps
    assert t["index"].tolist() == list(range(3, 15))
    assert t["step"].tolist() == [f"ProfilerStep#{i}" for i in range(3, 15)]
    assert lm.steps is t                                        # computed once
    # each step ran the same loop body: 308 kernels, 13 copies, 36 memsets
    assert set(t["kernels"]) == {308} and set(t["copies"]) == {13} and set(t["memsets"]) == {36}
    assert t["kernels"].sum() + t["collectives"].sum() == len(lm.kernels)


def test_breakdown_sums_to_each_steps_time(lm, leak):
    for rep in (lm, leak):
        t = rep.steps
        parts = t[[f"{p}_us" for p in PARTS]].to_numpy(float)
        assert (parts >= 0).all()
        np.testing.assert_allclose(parts.sum(axis=1), t["step_us"], rtol=0.01)
        # the GPU's parts are its busy time: kernels, copies and memsets counted once
        np.testing.assert_allclose(t[["kernel_us", "memcpy_us", "memset_us", "communication_us"]].sum(axis=1),
                                   t["gpu_busy_us"], rtol=1e-6)
        assert (t["start_us"].to_numpy()[1:] >= t["end_us"].to_numpy()[:-1]).all()      # steps never overlap


def test_step_spans_from_the_host_ranges_and_the_gpu_work_they_launched(lm):
    """The host range is the ProfilerStep#N user_annotation; the GPU range holds every kernel its
    launch calls asked for, backward's (launched from the autograd thread) too. Kineto's own
    gpu_user_annotation ends with the forward pass: it is not what a step ran."""
    with gzip.open(LM, "rt") as f:
        events = json.load(f)["traceEvents"]
    base = min(e["ts"] for e in events if e.get("name") == "ProfilerStep#3" and e.get("cat") == "user_annotation")
    cpu = {e["name"]: e["dur"] for e in events if e.get("cat") == "user_annotation" and "ProfilerStep" in e["name"]}
    gpu = {e["name"]: e for e in events if e.get("cat") == "gpu_user_annotation" and "ProfilerStep" in e["name"]}
    t = lm.steps.set_index("step")
    np.testing.assert_allclose([cpu[s] for s in t.index], t["cpu_us"], rtol=1e-6)
    first = gpu["ProfilerStep#3"]
    offset = t.loc["ProfilerStep#3", "start_us"]          # our clock at the step's host start
    assert t.loc["ProfilerStep#3", "gpu_start_us"] == pytest.approx(first["ts"] - base + offset, abs=0.01)
    assert t.loc["ProfilerStep#3", "gpu_end_us"] > first["ts"] - base + offset + first["dur"] + 15000
    assert (t["gpu_end_us"] <= t["end_us"]).all()      # the host waited for the GPU each step (profiled)


def test_median_spread_and_no_slow_first_step(lm):
    s = step_summary(lm.steps)
    assert s["steps"] == 12 and s["first"] == []            # two warm-up steps came before step 3
    assert s["median_us"] == pytest.approx(29829.7, abs=0.1)
    st = s["steady"]
    assert st["from_index"] == 3 and st["p90_us"] == pytest.approx(30928.0, abs=0.1)
    assert st["max_over_median"] == pytest.approx(1.0655, abs=1e-4) and st["cv"] < 0.03
    assert s["slowest"]["index"] == 3 and s["slowest"]["grew"][:2] == ["other", "cpu_exec"]
    m = s["median_step"]
    assert sum(m["parts"].values()) == pytest.approx(m["step_us"], rel=1e-6)
    # steps this steady say nothing worth a finding
    assert not [f for f in lm.findings if f.kind in ("slow_first_steps", "step_spread")]


def test_first_step_told_apart_from_the_steady_state(leak):
    s = step_summary(leak.steps)
    assert [f["index"] for f in s["first"]] == [1]
    f = s["first"][0]
    assert f["ratio"] == pytest.approx(1.2286, abs=1e-4) and f["grew"][0] == "cpu_exec"
    assert f["more"] == {"allocations": 1}
    assert s["steady"]["from_index"] == 2 and s["steady"]["steps"] == 7
    (finding,) = [x for x in leak.findings if x.kind == "slow_first_steps"]
    assert finding.cost_us == pytest.approx(f["step_us"] - s["median_us"])
    assert finding.title.startswith("ProfilerStep#1 took 1.23x the median step")
    assert finding.link["mark_start_us"] == leak.steps["start_us"].iloc[0]


def test_no_steps_no_rows():
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    assert len(rep.steps) == 0 and list(rep.steps.columns) == list(step_table(rep).columns)
    assert step_summary(rep.steps) == {}


def test_spread_finding_names_the_part_that_grew(lm):
    import pandas as pd

    from kernelscope.analysis.findings.steps import step_findings
    t = lm.steps.copy()
    t.loc[5, "step_us"] += 20000.0
    t.loc[5, "dataloader_us"] += 20000.0          # a step that waited 20 ms for its batch
    fake = type("R", (), {"steps": t})()
    (f,) = step_findings(fake, None)
    assert f.kind == "step_spread" and f.evidence["part"] == "dataloader" and f.evidence["slowest"] == 8
    assert "DataLoader workers" in f.fix and f.cost_us > 20000.0
    assert isinstance(pd.DataFrame([f.evidence]), pd.DataFrame)


def test_saved_report_keeps_the_steps(lm, tmp_path):
    p = lm.save(tmp_path / "lm.ksreport.json.gz")
    again = ks.load(p)
    np.testing.assert_allclose(again.steps["step_us"], lm.steps["step_us"])
