"""Live memory capture: ks.profile(memory=True) and %%kernelprofile --memory (torch.profiler's
profile_memory), and the allocator history's snapshot joined at the stop. torch's CPU allocator
records the same [memory] events, so the recording, rep.memory and saved reports are tested here
for real; the GPU paths (the caching allocator, the history's lines) are marked gpu (the H200)."""
import pickle

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

import kernelscope as ks
from kernelscope.capture.memory import attach_history, window_us
from kernelscope.capture.schedule import steps_schedule
from kernelscope.panels.memory import memory_panel
from kernelscope.trace.memory_snapshot import match_allocations, snapshot_table
from kernelscope.trace.model import MEMORY_COLUMNS, Trace, frame

MIB = 2**20


def _grow(keep, n=4):
    for _ in range(n):
        keep.append(torch.ones(256, 1024))          # 1 MiB each, kept


def test_memory_off_by_default_and_on_records_the_cpu_allocator():
    with ks.profile() as prof:
        kept = []
        _grow(kept)
    assert len(prof.report.trace.memory) == 0 and prof.report.memory is None
    with ks.profile(memory=True) as prof:
        kept = []
        _grow(kept)
    rep = prof.report
    mem = rep.trace.memory
    assert (mem["name"] == "[memory]").all() and (mem["device_type"] == 0).all()
    assert (mem["bytes"] == MIB).sum() >= 4
    m = rep.memory
    assert m.device == "cpu" and m.source == "profile_memory"
    assert m.peak_bytes >= 4 * MIB
    assert int(m.held["bytes"].sum()) == m.peak_bytes          # the blocks at the peak add up to it
    ones = m.held[m.held["op"] == "aten::ones"]                   # aten::empty named by the op around it
    assert int(ones["bytes"].sum()) >= 4 * MIB


def test_live_memory_round_trips_through_a_saved_report(tmp_path):
    with ks.profile(memory=True) as prof:
        kept = []
        _grow(kept, 3)
    path = prof.report.save(tmp_path / "mem.ksreport.json.gz")
    again = ks.load(path).memory
    assert again.peak_bytes == prof.report.memory.peak_bytes
    assert again.held.equals(prof.report.memory.held)


def test_memory_under_a_schedule_covers_the_last_cycle():
    kept = []
    with ks.profile(memory=True, schedule=steps_schedule(1, 1, 6, cycle=3)) as prof:
        for _ in range(8):
            _grow(kept, 1)
            prof.step()
    rep = prof.report
    assert rep.steps["index"].tolist() == [2, 3, 4, 5, 6, 7]
    m = rep.memory
    # the steps of the last cycle, each keeping its 1 MiB block
    assert m.steps["step"].tolist() == ["ProfilerStep#5", "ProfilerStep#6", "ProfilerStep#7"]
    assert m.steps["growth"].tolist() == [MIB] * 3
    assert m.before_bytes >= 5 * MIB                              # the earlier steps' blocks


def test_decorator_keeps_memory():
    @ks.profile(memory=True)
    def step(keep):
        _grow(keep, 2)
    step([])
    assert step.report.memory is not None and step.report.memory.device == "cpu"


# -- the allocator history joined to a recording (tables made as torch writes them) ----------

def _action(action, addr, size, t_us, line):
    frames = [{"filename": "/x/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
              {"filename": "/home/me/train.py", "line": line, "name": "step"}]
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t_us, "frames": frames}


def _snapshot(origin_us):
    """A history of three allocations, one before the region, and its segments at the end."""
    acts = [_action("alloc", 1 << 20, 1000, origin_us - 50, 10),        # before the region
            _action("alloc", 2 << 20, 4096, origin_us + 100, 11),
            _action("alloc", 3 << 20, 8192, origin_us + 220, 12),
            _action("free_requested", 2 << 20, 4096, origin_us + 300, 13)]
    seg = {"device": 0, "total_size": 2 * MIB, "blocks": [
        {"state": "active_allocated", "size": 1024}, {"state": "active_allocated", "size": 8192}]}
    return {"segments": [seg], "device_traces": [acts]}


def _trace(origin_us, events):
    rows = [{"name": "[memory]", "device_type": 1, "device_index": 0, "tid": 1, "start_us": t, "duration_us": 0.0,
             "bytes": b, "address": a, "total_allocated": tot, "total_reserved": 2 * MIB, "op": "aten::mm",
             "op_index": None, "source": None} for t, b, a, tot in events]
    mem = frame({c: [r[c] for r in rows] for c in MEMORY_COLUMNS}, MEMORY_COLUMNS)
    tables = {**Trace.empty().tables(), "memory": mem}
    return Trace(**tables, meta={"time_origin_ns": int(origin_us * 1000), "span_us": 400.0})


def test_history_lines_join_the_profilers_allocations():
    origin = 1_796_000_000_000_000
    # the profiler's clock puts each allocation 3 us before the history's
    t = _trace(origin, [(97.0, 4096, 2 << 20, 5120), (217.0, 8192, 3 << 20, 13312), (297.0, -4096, 2 << 20, 9216)])
    attach_history(t, _snapshot(origin))
    info = t.meta["memory_history"]
    assert info["used"] == "lines" and info["matched"] == 2 and info["events"] == 3   # the earlier one left out
    assert t.memory["source"].tolist()[:2] == ["/home/me/train.py(11): step", "/home/me/train.py(12): step"]
    assert pd.isna(t.memory["source"].iloc[2])                     # a free keeps what it had
    m = ks.Report(t).memory
    assert m.source == "profile_memory + allocator history"
    assert m.held[["op", "source"]].values.tolist()[0] == ["aten::mm", "/home/me/train.py(12): step"]


def test_history_rows_become_the_table_where_the_profiler_has_none():
    origin = 1_796_000_000_000_000
    t = _trace(origin, [])
    attach_history(t, _snapshot(origin))
    assert t.meta["memory_history"]["used"] == "table"
    m = ks.Report(t).memory
    assert m.source == "allocator history" and m.events == 3
    # the history's totals are counted back from its segments: 1024 allocated before the region
    assert m.before_bytes == 1024 and m.peak_bytes == 1024 + 4096 + 8192
    assert any("train.py(12)" in s for s in m.held["source"])


def test_a_history_ring_that_starts_late_is_said():
    origin = 1_796_000_000_000_000
    snap = _snapshot(origin)
    snap["device_traces"][0] = snap["device_traces"][0][2:]
    t = _trace(origin, [(217.0, 8192, 3 << 20, 13312)])
    attach_history(t, snap)
    assert any("allocator history begins 0.2 ms into the recording" in n for n in t.meta["notes"])


def test_window_falls_back_to_the_wall_clock():
    assert window_us(Trace.empty({"time_origin_ns": 2_000, "span_us": 3.0}), (0, 10)) == (2.0, 5.0)
    assert window_us(Trace.empty(), (4_000, 9_000)) == (4.0, 9.0)
    assert window_us(Trace.empty(), None) == (None, None)


def test_matching_ignores_frees_other_devices_and_smaller_blocks():
    mem = pd.DataFrame({"device_type": [1, 1, 1, 0], "device_index": [0, 1, 0, -1], "address": [5, 5, 6, 5],
                        "bytes": [512, 512, 512, 512], "start_us": [1.0, 1.0, 2.0, 1.0]})
    hist = pd.DataFrame({"device_type": [1, 1], "device_index": [0, 0], "address": [5, 6],
                         "bytes": [512, 1024], "start_us": [1.0, 2.0]})
    assert match_allocations(mem, hist).tolist() == [0, -1, -1, -1]


def test_snapshot_table_from_an_origin():
    snap = _snapshot(1_000_000)
    t = snapshot_table(pickle.loads(pickle.dumps(snap)), origin_us=1_000_000)
    assert np.allclose(t["start_us"].to_numpy(dtype=float), [-50.0, 100.0, 220.0, 300.0])


# -- on a GPU (the lead runs these on the H200) ------------------------------------------------

def _train(model, opt, x, steps, prof):
    for _ in range(steps):
        loss = model(x).square().mean()           # the line that allocates the activations
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        prof.step()


def _model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    return model, torch.optim.AdamW(model.parameters()), torch.randn(2048, 1024, device="cuda")


@pytest.mark.gpu
def test_gpu_training_loop_memory_answers_what_held_the_peak():
    model, opt, x = _model()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    with ks.profile(memory=True, schedule=torch.profiler.schedule(wait=1, warmup=1, active=4)) as prof:
        _train(model, opt, x, 6, prof)
    rep = prof.report
    m = rep.memory
    assert m is not None and m.device.startswith("cuda") and m.source == "profile_memory"
    assert m.peak_bytes <= torch.cuda.max_memory_allocated()
    assert int(m.held["bytes"].sum()) == m.peak_bytes
    ops = set(m.held["op"])
    assert ops & {"aten::addmm", "aten::gelu", "aten::mm", "aten::gelu_backward"}, m.held
    assert len(m.steps) == 4 and m.leak is None
    assert len(m.series) and memory_panel(m)["headline"].startswith("peak ")


@pytest.mark.gpu
def test_gpu_history_gives_the_lines_of_the_test_file():
    model, opt, x = _model()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    try:
        with ks.profile(memory=True, schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) as prof:
            _train(model, opt, x, 5, prof)
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    rep = prof.report
    assert prof.memory_snapshot is not None
    info = rep.meta["memory_history"]
    assert info["used"] == "lines" and info["matched"] >= 0.9 * info["allocations"], info
    m = rep.memory
    assert m.source == "profile_memory + allocator history"
    here = [s for s in m.held["source"] if "test_memory_capture.py" in s]
    assert here, m.held
    again = ks.Report.from_dict(rep.to_dict()).memory               # a saved report keeps the lines
    assert again.source == m.source and again.held.equals(m.held)


@pytest.mark.gpu
def test_gpu_lean_recording_takes_the_history_as_its_memory():
    x = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=10_000)
    try:
        with ks.profile(memory=True, lean=True) as prof:
            kept = [x @ x for _ in range(4)]                     # the line that holds the peak
            torch.cuda.synchronize()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    info = prof.report.meta["memory_history"]
    m = prof.report.memory
    assert m is not None and len(kept) == 4
    if info["used"] == "table":
        assert m.source == "allocator history"
        assert any("test_memory_capture.py" in s for s in m.held["source"])
    else:                                                     # torch recorded [memory] events without CPU ops
        assert info["used"] == "lines"
