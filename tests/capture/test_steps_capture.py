"""Training-loop steps recorded live: ks.profile(schedule=...) with prof.step(), and
%%kernelprofile --steps N. torch.profiler runs on the CPU, so the schedule, the cycles and the
step rows are tested here for real; the GPU paths are marked gpu (run on the H200)."""
import textwrap

import pytest

torch = pytest.importorskip("torch")

import kernelscope as ks
from kernelscope.analysis.steps import PARTS
from kernelscope.capture.schedule import steps_schedule


def _work(n=3):
    x = torch.ones(32, 32)
    for _ in range(n):
        x = torch.mm(x, x) / 32
    return x


def test_schedule_records_the_active_steps():
    with ks.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(6):
            _work()
            prof.step()
    rep = prof.report
    t = rep.steps
    assert t["index"].tolist() == [2, 3, 4]                 # wait step 0, warm-up step 1
    assert (rep.ops["name"] == "aten::mm").sum() == 9          # only the active steps' ops
    assert (t["cpu_ops"] >= 3).all()
    sums = t[[f"{p}_us" for p in PARTS]].sum(axis=1)
    assert ((sums - t["step_us"]).abs() <= 0.01 * t["step_us"]).all()
    assert rep.meta["cuda_event_us"] is None                 # the region held more than its steps
    assert not [n for n in rep.notes if "another torch.profiler" in n]   # torch's own cycles are no rivals


def test_cycles_keep_earlier_steps_as_rows_only():
    with ks.profile(schedule=steps_schedule(wait=1, warmup=1, active=5, cycle=2)) as prof:
        for _ in range(8):
            _work()
            prof.step()
    rep = prof.report
    assert rep.steps["index"].tolist() == [2, 3, 4, 5, 6]
    assert (rep.ops["name"] == "aten::mm").sum() == 3          # only the last cycle (step 6) held whole
    assert len(rep.meta["earlier_steps"]) == 4
    # the earlier steps' times were on their own cycle's clock: not placed on this timeline
    assert rep.steps["start_us"].isna().tolist() == [True] * 4 + [False]
    assert any("4 earlier steps are kept as their rows of rep.steps only" in n for n in rep.notes)
    again = ks.Report.from_dict(rep.to_dict())                 # a saved report keeps them
    assert again.steps["index"].tolist() == [2, 3, 4, 5, 6]


def test_a_schedule_stopped_before_any_active_step_says_so():
    with ks.profile(schedule=torch.profiler.schedule(wait=2, warmup=1, active=2)) as prof:
        _work()
        prof.step()
    assert len(prof.report.steps) == 0
    assert any("the schedule recorded no step" in n for n in prof.report.notes)


def test_kernelprofile_steps_runs_wait_warmup_and_n_steps():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    sh.user_ns.update(torch=torch, runs=0)
    r = sh.run_cell(textwrap.dedent("""\
        %%kernelprofile --steps 3 -o rep_steps --no-display
        runs += 1
        w = torch.mm(torch.ones(8, 8), torch.ones(8, 8))
        """))
    assert r.success, r.error_in_exec
    assert sh.user_ns["runs"] == 5                            # 1 wait + 1 warm-up + 3 recorded
    rep = sh.user_ns["rep_steps"]
    assert rep.steps["index"].tolist() == [2, 3, 4]
    assert (rep.ops["name"] == "aten::mm").sum() == 3
    for line in ("--steps 0", "--wait 1", "--steps 2 --repeat 2"):
        with pytest.raises(Exception, match="--steps|--wait"):
            sh.run_cell_magic("kernelprofile", line, "pass\n")


@pytest.mark.gpu
def test_gpu_steps_have_kernels_and_the_breakdown():
    x = torch.randn(1024, 1024, device="cuda")
    with ks.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=4)) as prof:
        for _ in range(6):
            for _ in range(10):
                x = torch.relu(x @ x / 1024)
            x.sum().item()
            prof.step()
    t = prof.report.steps
    assert t["index"].tolist() == [2, 3, 4, 5]
    assert (t["kernels"] >= 20).all() and (t["kernel_us"] > 0).all() and (t["gpu_busy_us"] > 0).all()
    sums = t[[f"{p}_us" for p in PARTS]].sum(axis=1)
    assert ((sums - t["step_us"]).abs() <= 0.01 * t["step_us"]).all()


@pytest.mark.gpu
def test_gpu_thousand_steps_stay_bounded():
    # On the H200 (2026-12-03) each step here was 20 launches (10 cuBLAS GEMMs, 10 elementwise
    # kernels): the report held one 100-step cycle's 2,000, the other 900 steps as their rows
    # only, and the process's peak grew 35 MB from a 100-step loop to this 1,000-step one.
    x = torch.randn(256, 256, device="cuda")
    with ks.profile(schedule=steps_schedule(1, 1, 1000)) as prof:
        for _ in range(1002):
            for _ in range(5):
                x = torch.tanh(x @ x / 256)
            prof.step()
    rep = prof.report
    assert len(rep.steps) == 1000 and rep.steps["index"].iloc[-1] == 1001
    per_step = int(rep.steps["kernels"].max())
    assert 0 < len(rep.kernels) <= 100 * per_step            # one cycle's launches held
    assert rep.steps["kernels"].iloc[:900].gt(0).all()       # the dropped cycles' rows are whole
    assert any("earlier steps are kept as their rows" in n for n in rep.notes)
