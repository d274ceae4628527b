"""GPU memory from the allocator, on real H200 recordings (benchmarks/training/record.py): a
transformer LM trained with AdamW under profile_memory (lm_steps), the same loop keeping each
step's logits (leak_steps), and an allocator history snapshot of four steps (lm_memory.pickle)."""
from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.memory import BEFORE, MAX_POINTS, memory_analysis
from kernelscope.errors import TraceError
from kernelscope.trace.memory_snapshot import plain_loads

DATA = Path(__file__).resolve().parent.parent / "data" / "training"
LM, LEAK, SNAPSHOT = DATA / "lm_steps.pt.trace.json.gz", DATA / "leak_steps.pt.trace.json.gz", DATA / "lm_memory.pickle"
FACTS = json.loads((DATA / "facts.json").read_text())




def _raw_memory_events(path):
    """The "[memory]" events as the file holds them, read with json (not our reader)."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("name") == "[memory]"]


def test_memory_table_holds_every_allocator_event(lm):
    raw = _raw_memory_events(LM)
    mem = lm.trace.memory
    assert len(mem) == len(raw) == 8592
    assert sorted(mem["bytes"].astype(int).tolist()) == sorted(e["args"]["Bytes"] for e in raw)
    assert set(mem["address"].astype(int)) == {e["args"]["Addr"] for e in raw}
    assert int(mem["total_reserved"].max()) == max(e["args"]["Total Reserved"] for e in raw)
    assert (mem["duration_us"] == 0).all() and mem["start_us"].between(0, lm.meta["span_us"]).all()


def test_each_event_names_the_op_on_its_thread_that_holds_it(lm):
    mem, ops = lm.trace.memory, lm.trace.ops
    has = mem["op_index"].notna()
    assert has.mean() > 0.99
    rows = mem[has]
    o = ops.iloc[rows["op_index"].astype(int).to_numpy()]
    assert (o["tid"].to_numpy() == rows["tid"].to_numpy()).all()
    assert (o["start_us"].to_numpy() <= rows["start_us"].to_numpy() + 1e-6).all()
    assert (rows["start_us"].to_numpy() <= (o["start_us"] + o["duration_us"]).to_numpy() + 1e-6).all()
    assert (o["name"].to_numpy() == rows["op"].to_numpy()).all()
    # The forward's allocations carry the Python line (torch's with_stack: the function's line).
    assert mem["source"].dropna().str.contains(r"record\.py\(\d+\)").any()


def test_the_peak_is_the_traces_highest_total_allocated(lm):
    raw = _raw_memory_events(LM)
    m = lm.memory
    assert m.peak_bytes == max(e["args"]["Total Allocated"] for e in raw) == FACTS["max_allocated"]
    assert m.peak_reserved == max(e["args"]["Total Reserved"] for e in raw) == FACTS["max_reserved"]
    assert m.device == "cuda:0" and m.source == "profile_memory"


def test_the_blocks_live_at_the_peak_add_up_to_it(lm):
    """What held the peak: the blocks allocated in the recording and not freed by then, plus
    what was allocated before the recording began (the allocated total before the first event:
    weights, optimizer state), told as its own row. Together they are the peak, to the byte."""
    raw = sorted(_raw_memory_events(LM), key=lambda e: e["ts"])
    before = raw[0]["args"]["Total Allocated"] - raw[0]["args"]["Bytes"]
    m = lm.memory
    assert m.before_bytes == before > 0
    assert int(m.held["bytes"].sum()) == m.peak_bytes
    row = m.held[m.held["op"] == BEFORE]
    assert len(row) == 1 and int(row["bytes"].iloc[0]) == before
    assert m.held["bytes"].is_monotonic_decreasing
    assert abs(m.held["share"].sum() - 1) < 1e-9
    # The loss's log-softmax and its backward hold the largest blocks (128 MiB each) at the peak.
    ops = m.held["op"].tolist()
    assert {"aten::_log_softmax", "aten::nll_loss_backward", "aten::_log_softmax_backward_data"} <= set(ops[:4])


def test_blocks_from_before_the_recording_freed_before_the_peak_leave_its_sum(lm):
    """A recording that starts mid-loop: some blocks allocated before it are freed before the
    peak (on the H200 a 512-byte one made the rows sum 512 bytes past the peak). Here: the real
    table from its 200th event on."""
    mem = lm.trace.memory.sort_values("start_us", kind="stable").iloc[200:].reset_index(drop=True)
    m = memory_analysis(mem, ops=lm.trace.ops)
    row = int(m.held.loc[m.held["op"] == BEFORE, "bytes"].iloc[0])
    assert row < m.before_bytes                       # some of them were gone by the peak
    assert int(m.held["bytes"].sum()) == m.peak_bytes


def test_the_curve_is_bounded_and_keeps_the_peak(lm):
    s = lm.memory.series
    assert 0 < len(s) <= MAX_POINTS
    assert int(s["allocated"].max()) == lm.memory.peak_bytes
    assert s["time_us"].is_monotonic_increasing
    assert (s["reserved"] >= s["allocated"]).all()
    small = memory_analysis(lm.trace.memory, ops=lm.trace.ops, max_points=50)
    assert len(small.series) <= 50 and int(small.series["allocated"].max()) == lm.memory.peak_bytes


def test_a_steady_loop_does_not_grow_and_gives_no_memory_finding(lm):
    m = lm.memory
    assert m.steps["step"].tolist() == [f"ProfilerStep#{i}" for i in range(3, 15)]
    assert (m.steps["growth"] == 0).all()
    assert m.leak is None
    assert not m.fragmentation["flagged"] and 0 < m.fragmentation["gap_share"] < 0.3
    assert not [f for f in lm.findings if f.kind.startswith("memory")]


def test_a_leaking_loop_gives_a_leak_finding_with_what_stayed(leak):
    m = leak.memory
    growth = m.steps["growth"].to_numpy()
    assert len(growth) == 8 and (growth[1:] > 0).all()
    assert m.leak["growth_per_step"] == pytest.approx(64 * 2**20, rel=0.01)   # a bf16 copy of the logits
    top = m.leak["held"][0]
    assert top["op"] == "aten::clone" and top["bytes"] == 8 * 64 * 2**20
    found = [f for f in leak.findings if f.kind == "memory_leak"]
    assert len(found) == 1
    f = found[0]
    assert f.cost_us == 0 and "64.0 MiB per step over 8 steps" in f.title and "aten::clone" in f.detail
    assert f.link["view"] == "timeline"


def test_fragmentation_is_flagged_past_30_percent_and_256_mib():
    from kernelscope.analysis.memory import fragmentation
    gib = 2**30
    assert fragmentation(gib, int(1.5 * gib))["flagged"]
    assert not fragmentation(gib, int(1.2 * gib))["flagged"]            # 20%
    assert fragmentation(512 * 2**20, 800 * 2**20)["flagged"]          # 56%, 288 MiB
    assert not fragmentation(100 * 2**20, 300 * 2**20)["flagged"]      # 200% but 200 MiB


def test_reserved_far_above_allocated_gives_a_fragmentation_finding(lm):
    """The real table with 1 GiB more reserved throughout (as a run that once held a larger batch
    would show): reserved exceeds allocated by 1.1 GiB (109%) at the peak."""
    from kernelscope.analysis.findings.memory import fragmentation_finding
    mem = lm.trace.memory.copy()
    mem["total_reserved"] = mem["total_reserved"] + 2**30
    m = memory_analysis(mem, ops=lm.trace.ops)
    (f,) = fragmentation_finding(m)
    assert f.kind == "memory_fragmentation" and f.cost_us == 0
    assert f.evidence["gap_bytes"] == m.reserved_at_peak - m.peak_bytes == lm.memory.reserved_at_peak + 2**30 - m.peak_bytes
    assert "expandable_segments" in f.fix and "1.1 GiB (109%)" in f.title


def test_a_saved_report_keeps_the_memory_table(lm, tmp_path):
    path = lm.save(tmp_path / "lm.ksreport.json.gz")
    back = ks.load(path)
    assert len(back.trace.memory) == len(lm.trace.memory)
    for col in ("bytes", "address", "total_allocated", "total_reserved", "op", "source"):
        assert back.trace.memory[col].tolist() == lm.trace.memory[col].tolist(), col
    assert back.memory.peak_bytes == lm.memory.peak_bytes
    assert back.memory.held["bytes"].tolist() == lm.memory.held["bytes"].tolist()


def test_the_snapshot_says_what_held_the_peak_with_its_own_frames():
    m = ks.load_memory(SNAPSHOT)
    assert m.source == "allocator history" and m.device == "cuda:0"
    # Four other steps of the same loop: the history's sizes are the tensors' requests, rounded to
    # the allocator's 512-byte blocks, so the peak is the profiled one's within 0.2%.
    assert m.peak_bytes == pytest.approx(FACTS["max_allocated"], rel=0.002)
    assert int(m.held["bytes"].sum()) == m.peak_bytes
    assert m.before_bytes == 326551040     # weights and AdamW state: the trace's own figure
    lines = m.held["source"].tolist()
    assert any(s.endswith("record.py(52): step") for s in lines)   # the loss line, not the def line
    assert "aten::nll_loss_backward" in m.held["op"].tolist()       # autograd's thread: C++ frames


def test_a_hostile_pickle_is_refused_unread(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(TraceError, match=r"not a plain allocator snapshot: it asks to load posix\.mkdir"):
        ks.load_memory(path)
    assert not marker.exists()
    nested = {"segments": [], "device_traces": [[{"action": "alloc", "frames": [Evil()]}]]}
    with pytest.raises(TraceError, match="refused unread"):
        plain_loads(pickle.dumps(nested))
    assert not marker.exists()


def test_other_pickles_and_files_say_what_they_are(tmp_path):
    p = tmp_path / "list.pickle"
    p.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(TraceError, match="not an allocator snapshot"):
        ks.load_memory(p)
    p.write_bytes(pickle.dumps({"segments": [], "device_traces": [[]]}))
    with pytest.raises(TraceError, match="_record_memory_history"):
        ks.load_memory(p)
    p.write_bytes(b"\x80\x05junk")
    with pytest.raises(TraceError, match="not a readable pickle"):
        ks.load_memory(p)
    with pytest.raises(TraceError, match="ks.load_memory"):
        ks.load(SNAPSHOT)


def test_a_trace_without_profile_memory_has_no_memory():
    rep = ks.load(DATA.parent / "mlp_train.pt.trace.json.gz")
    assert len(rep.trace.memory) == 0 and rep.memory is None
    assert not np.any([f.kind.startswith("memory") for f in rep.findings])
