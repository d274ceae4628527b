"""Timeline analysis on real H200 recordings: busy time, gaps and their causes, streams, launches.

The expected numbers are recomputed here from the raw Chrome-trace JSON with plain Python loops,
independently of kernelscope's reader and of the numpy code under test.
"""
import gzip
import json
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kernelscope as ks
from kernelscope.analysis.intervals import intersection_length, merge_intervals, union_length
from kernelscope.analysis.timeline import activities, gaps_table
from kernelscope.reports.report import Report
from kernelscope.trace.model import Trace
from tests.conftest import DATA, written_out_union

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_events(name):
    with gzip.open(DATA / f"{name}.pt.trace.json.gz", "rt") as f:
        return json.load(f)["traceEvents"]


def raw_gpu_intervals(name, cats=GPU_CATS):
    """(start, end, stream, name, correlation) of every GPU activity, in microseconds.

    Timestamps are ~1e12 us, where a double resolves only ~1e-4 us: shift them to the first
    event before adding durations, so that an interval's length is its recorded duration.
    """
    ev = [e for e in raw_events(name) if e.get("ph") == "X" and e.get("cat") in cats]
    t0 = min(e["ts"] for e in ev)
    return sorted((e["ts"] - t0, e["ts"] - t0 + e["dur"], e["args"]["stream"], e["name"],
                   e["args"]["correlation"]) for e in ev)


def written_out_busy(name):
    iv = raw_gpu_intervals(name)
    busy = written_out_union([(s, e) for s, e, *_ in iv])
    window = max(e for _, e, *_ in iv) - min(s for s, *_ in iv)
    return busy, window


@pytest.fixture(scope="module")
def reports():
    names = ["launch_bound", "mlp_train", "attention", "copies_streams", "graphs", "triton_kernels"]
    return {n: ks.load(DATA / f"{n}.pt.trace.json.gz") for n in names}


# -- interval arithmetic ----------------------------------------------------------------------

def test_merge_and_union_small_cases():
    s, e = merge_intervals([5, 0, 2, 10, 12], [6, 3, 4, 12, 13])
    assert s.tolist() == [0, 5, 10] and e.tolist() == [4, 6, 13]
    assert union_length([], []) == 0.0
    assert union_length([0, 0], [1, 1]) == 1.0
    assert intersection_length(([0, 20], [10, 30]), ([5], [25])) == 10.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 50)), max_size=40))
def test_union_matches_a_grid_count(pairs):
    # Integer intervals: the union length is the number of unit cells any interval covers.
    starts = [a for a, _ in pairs]
    ends = [a + d for a, d in pairs]
    cells = set()
    for a, b in zip(starts, ends):
        cells.update(range(a, b))
    assert union_length(starts, ends) == len(cells)
    assert union_length(starts, ends) == written_out_union(list(zip(starts, ends)))


# -- busy time ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("launch_bound", 0.0713), ("mlp_train", 0.1274), ("attention", 0.8171),
    ("copies_streams", 0.9687), ("graphs", 0.9273),
])
def test_busy_share_matches_written_out_union(reports, name, expected):
    busy, window = written_out_busy(name)
    dev = reports[name].timeline.device()
    assert dev["busy_us"] == pytest.approx(busy, abs=1e-6)
    assert dev["window_us"] == pytest.approx(window, abs=1e-6)
    assert dev["busy_share"] == pytest.approx(busy / window, rel=1e-9)
    assert dev["busy_share"] == pytest.approx(expected, abs=5e-4)
    # Wall-time share uses the profiler's span (no CUDA events in these recordings).
    assert dev["wall_busy_share"] == pytest.approx(busy / reports[name].meta["span_us"], rel=1e-9)


def test_issue_figures(reports):
    # The issue's description of the fixtures: launch-bound ~7% busy, MLP ~13%, attention ~80%.
    assert round(reports["launch_bound"].busy["busy_share"].iloc[0], 2) == 0.07
    assert round(reports["mlp_train"].busy["busy_share"].iloc[0], 2) == 0.13
    assert 0.78 < reports["attention"].busy["busy_share"].iloc[0] < 0.85


def test_gap_total_is_window_minus_busy(reports):
    for name, rep in reports.items():
        dev = rep.timeline.device()
        assert rep.gaps["duration_us"].sum() == pytest.approx(dev["window_us"] - dev["busy_us"], rel=1e-9), name
        assert (rep.gaps["duration_us"] > 0).all()


def test_per_stream_busy_and_overlap_on_copies_streams(reports):
    rep = reports["copies_streams"]
    iv = raw_gpu_intervals("copies_streams")
    by_stream = {}
    for s, e, stream, *_ in iv:
        by_stream.setdefault(stream, []).append((s, e))
    rows = rep.busy[rep.busy["stream"].notna()].set_index("stream")
    assert sorted(rows.index.tolist()) == sorted(by_stream) == [7, 38, 42]
    for stream, ivs in by_stream.items():
        assert rows.loc[stream, "busy_us"] == pytest.approx(written_out_union(ivs), abs=1e-6)
    # Overlap of streams 38 (pinned copies) and 42 (the GEMMs), written out pairwise: the
    # intervals of one stream never overlap each other.
    ov = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in by_stream[38] for s2, e2 in by_stream[42])
    o = rep.timeline.overlap.set_index(["stream_a", "stream_b"])
    assert o.loc[(38, 42), "overlap_us"] == pytest.approx(ov, abs=1e-6)
    assert ov == pytest.approx(2685.693 + 2693.628, abs=1e-6)  # both GEMMs ran inside a copy
    assert o.loc[(38, 42), "share_of_b"] == pytest.approx(1.0)
    assert o.loc[(7, 38), "overlap_us"] == 0 and o.loc[(7, 42), "overlap_us"] == 0


# -- gaps and causes -----------------------------------------------------------------------------

def test_launch_bound_gaps_all_wait_on_the_host(reports):
    rep = reports["launch_bound"]
    ev = raw_events("launch_bound")
    t0 = min(e["ts"] for e in ev if e.get("cat") == "kernel")
    launch_ts = {e["args"]["correlation"]: e["ts"] - t0 for e in ev
                 if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"}
    iv = raw_gpu_intervals("launch_bound")
    # Written out: one stream, no overlap, so each gap is next start - previous end, and it is
    # the host's when the next launch call began after the previous kernel ended.
    host = [(b[0] - a[1]) for a, b in zip(iv, iv[1:]) if launch_ts[b[4]] > a[1]]
    assert len(host) == len(iv) - 1 == 1999
    g = rep.gaps
    assert (g["cause"] == "host").all() and len(g) == 1999
    assert g["duration_us"].sum() == pytest.approx(sum(host), abs=1e-6)
    assert g["duration_us"].median() == pytest.approx(statistics.median(host), abs=1e-6)


def test_mlp_sync_gaps_follow_the_pageable_copies(reports):
    rep = reports["mlp_train"]
    iv = raw_gpu_intervals("mlp_train")
    # Written out: after each pageable HtoD copy, .cuda() calls cudaStreamSynchronize and the GPU
    # sits idle until the host launches again.
    expected = []
    for i, (_s, _e, _stream, name, _corr) in enumerate(iv):
        if name == "Memcpy HtoD (Pageable -> Device)":
            busy_until = max(x[1] for x in iv[: i + 1])
            expected.append(iv[i + 1][0] - busy_until)
    sync = rep.gaps[rep.gaps["cause"] == "sync"]
    assert len(sync) == 2
    assert sync["duration_us"].sum() == pytest.approx(sum(expected), abs=1e-6)
    assert sync["duration_us"].sum() == pytest.approx(426.88, abs=0.01)
    assert set(sync["blocking_call"]) == {"cudaStreamSynchronize"}
    assert set(sync["blocking_op"]) == {"aten::copy_"}
    causes = rep.gaps.groupby("cause")["duration_us"].sum()
    assert causes["host"] > 0.9 * (causes.sum() - causes["sync"])


def test_graph_replay_gaps_are_queued(reports):
    rep = reports["graphs"]
    ls = rep.timeline.launch_stats.iloc[0]
    assert ls["graph_kernels"] == 2000 and ls["graph_launches"] == 2
    assert set(rep.gaps["cause"]) == {"queued"}
    # Inside a replay the GPU moves from kernel to kernel in about 0.1 us.
    assert ls["median_gap_us"] < 0.2


def test_launch_stats_launch_bound(reports):
    rep = reports["launch_bound"]
    ls = rep.timeline.launch_stats.iloc[0]
    iv = raw_gpu_intervals("launch_bound")
    window = iv[-1][1] - iv[0][0]
    assert ls["launches"] == 2000 and ls["kernels"] == 2000
    assert ls["launches_per_ms"] == pytest.approx(2000 / (window / 1e3), rel=1e-9)
    assert ls["median_kernel_us"] == pytest.approx(statistics.median(e - s for s, e, *_ in iv), rel=1e-6)
    calls = sorted((e["ts"], e["dur"]) for e in raw_events("launch_bound")
                   if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
    assert ls["median_launch_call_us"] == pytest.approx(statistics.median(d for _, d in calls), rel=1e-6)
    assert ls["median_launch_interval_us"] == pytest.approx(
        statistics.median(b[0] - a[0] for a, b in zip(calls, calls[1:])), rel=1e-6)


def test_blocking_calls_mlp(reports):
    b = reports["mlp_train"].timeline.blocking
    assert (b["kind"] == "copy").sum() == 2 and (b["kind"] == "sync").sum() == 4
    assert set(b.loc[b["kind"] == "sync", "name"]) == {"cudaStreamSynchronize", "cudaDeviceSynchronize"}
    # x_cpu.cuda() in the step: the copy and its stream sync run inside aten::to.
    inner = b[b["op"] == "aten::copy_"]
    assert len(inner) == 4 and set(inner["outer_op"]) == {"aten::to"}
    assert b.loc[b["op"].isna(), "outer_op"].isna().all()


def test_report_properties_and_empty_report(reports):
    rep = reports["attention"]
    assert rep.busy is rep.timeline.busy and rep.gaps is rep.timeline.gaps
    empty = Report(Trace.empty())
    assert len(empty.busy) == 0 and len(empty.gaps) == 0 and empty.findings == []


def test_streams_cause_for_work_queued_on_another_stream(reports):
    # Reorder the real copies_streams activities: put the GEMMs right after the pinned copies
    # ended, with their launches issued earlier: the gap is a cross-stream wait.
    rep = reports["copies_streams"]
    a = activities(rep.kernels, rep.copies)
    pinned = a[a["name"].str.contains("Pinned")].reset_index(drop=True)
    gemm = a[a["kind"] == "kernel"].reset_index(drop=True).copy()
    gemm["start_us"] = pinned["end_us"] + 3.0
    gemm["end_us"] = gemm["start_us"] + gemm["duration_us"]
    both = __import__("pandas").concat([pinned, gemm], ignore_index=True)
    g = gaps_table(both)
    first = g.iloc[0]
    assert first["cause"] == "streams" and first["duration_us"] == pytest.approx(3.0)
    assert first["before_stream"] == 38 and first["after_stream"] == 42


def test_timeline_of_saved_report_is_identical(reports, tmp_path):
    rep = reports["mlp_train"]
    back = ks.load(rep.save(tmp_path / "r.ksreport.json.gz"))
    assert back.gaps["duration_us"].tolist() == rep.gaps["duration_us"].tolist()
    assert back.gaps["cause"].tolist() == rep.gaps["cause"].tolist()
    np.testing.assert_allclose(back.busy["busy_us"], rep.busy["busy_us"])
