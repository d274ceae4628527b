"""Issue 41: every microsecond once across "what to fix first", on real H200 recordings. Findings
carry the time their cost is made of (``Finding.spans``): the syncs' idle is in the syncs item
alone, one copy is one item, the time before the GPU's first work and after its last is its own
low item, a merged item costs the union of its parts, and no high finding vanishes in a merge."""
import dataclasses
import glob
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.findings import HOST_KINDS, Finding
from kernelscope.analysis.findings.base import outside_parts
from kernelscope.analysis.findings.host import wall_base
from kernelscope.analysis.intervals import Spans
from kernelscope.analysis.priorities import FIX_LIST_MAX, what_to_fix
from kernelscope.panels.fixes import fixes_panel
from tests.conftest import DATA


def _items(rep):
    return what_to_fix(rep.findings, rep.wall_time_us)


def _held(rep, item) -> list:
    """The findings an item holds: its own and those merged into it."""
    titles = {item["title"], *item["also"]}
    return [f for f in rep.findings if f.title in titles]


def _reports():
    return sorted(glob.glob(str(DATA / "**" / "*.pt.trace.json.gz"), recursive=True)
                  + glob.glob(str(DATA / "**" / "*.ksreport.json.gz"), recursive=True))


# -- the syncs' idle: in one item ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["tuning/helion_tuning.ksreport.json.gz", "ranks/rank0.pt.trace.json.gz",
                                  "tuning/triton_tuning.ksreport.json.gz", "mlp_train.pt.trace.json.gz"])
def test_sync_idle_is_in_exactly_one_item(name):
    """Sync-heavy runs (91-97% of the wall time idles after a synchronization) with a host finding
    beside: the syncs item holds the sync idle (less what a first run, autotuning's compiles,
    claims first), the host item none of it, and the shares add up to at most the wall."""
    rep = ks.load(DATA / name)
    sync = Spans.of_rows(rep.gaps[rep.gaps["cause"] == "sync"])
    items = _items(rep)
    # Beside the syncs, only a first run may hold sync idle (it claims first: Helion's autotuning
    # compiles between its synchronizations); a host item keeps none of it (a gap's edges aside).
    held = {it["kind"]: sum(f.spans.overlap(sync) for f in _held(rep, it) if f.spans is not None) for it in items}
    holders = [k for k, v in held.items() if v > 1e-4 * sync.length]
    assert holders in (["syncs"], ["cold_start", "syncs"])
    syncs = next(f for f in rep.findings if f.kind == "syncs")
    # Each microsecond once: the first run (which claims first) and the syncs hold disjoint parts.
    cold = next((f for f in rep.findings if f.kind == "cold_start" and f.spans is not None), None)
    if cold is not None:
        assert syncs.spans.overlap(cold.spans) <= 1e-6 * sync.length
    else:
        assert syncs.spans.length == pytest.approx(sync.length, rel=1e-3)
    assert syncs.cost_us <= sync.length * (1 + 1e-9)
    assert sum(it["share_of_wall"] for it in items) <= 1 + 1e-9


def test_links_at_the_same_gap_do_not_merge_different_time():
    """On a 1M-event training trace (mlp_train tiled) the longest wait was a sync gap, so the
    launch-bound item's link marked the same gap as the syncs item's: the syncs item joined it as
    "the same time as" while the host item had left that time to it, and 5.21 s (37%) was in
    neither. The same on mlp_train itself, its host finding pointed at the syncs' gap: both stay."""
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    sync = next(f for f in rep.findings if f.kind == "syncs")
    findings = [dataclasses.replace(f, link=sync.link) if f.kind == "host_bound" else f for f in rep.findings]
    items = what_to_fix(findings, rep.wall_time_us)
    by = {it["kind"]: it for it in items}
    assert not by["host_bound"]["also"] and by["syncs"]["cost_us"] == pytest.approx(sync.cost_us)
    # Their time does not overlap: every item costs what its finding does, none is cut.
    assert all(it["cost_us"] == pytest.approx(findings[it["finding"]].cost_us) and not it["within"] for it in items)
    # The host item's own link marks time it holds, not the syncs' gap.
    host = next(f for f in rep.findings if f.kind == "host_bound")
    mark = Spans.of("cuda:0", [host.link["mark_start_us"]], [host.link["mark_end_us"]])
    assert host.spans.overlap(mark) == pytest.approx(mark.length)


# -- one copy, one item ---------------------------------------------------------------------------

def test_one_copy_is_one_item():
    """live_counters: one 19.37 ms host-to-device copy was two items, serialized copies 79% and the
    copy-bound phase 21% (cut to the wall time left), their links marking the same interval."""
    rep = ks.load(DATA / "counters" / "live_counters.ksreport.json.gz")
    c = rep.copies[rep.copies["copy_kind"] == "HtoD"].iloc[0]
    copy = Spans.of(c["device"], [c["start_us"]], [c["start_us"] + c["duration_us"]])
    items = _items(rep)
    on_it = [it for it in items if any(f.spans is not None and f.spans.overlap(copy) > 0 for f in _held(rep, it))]
    assert len(on_it) == 1
    it = on_it[0]
    # The costlier of the two speaks (the copy-bound phase's 19.37 ms, or the serialized copies'
    # where they price it as high), the other is in its ``also``.
    kinds = {"serialized_copies", "copy_bound"}
    assert it["kind"] in kinds and it["cost_text"] == "19.37 ms" and it["share_text"] == "79% of wall time"
    other = next(f for f in rep.findings if f.kind in kinds - {it["kind"]})
    assert it["also"] == [other.title] and other.kind not in [x["kind"] for x in items]


def test_each_pageable_copy_is_in_one_item():
    """mlp_train's two pageable input copies ran on the compute stream: whichever copy findings
    speak of them, one item holds each (the pageable finding's time is each copy's part beyond the
    link's rate)."""
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    pageable = next(f for f in rep.findings if f.kind == "pageable_copies")
    assert pageable.spans.length == pytest.approx(pageable.cost_us)
    items = _items(rep)
    c = rep.copies
    for r in c[c["src_memory"] == "Pageable"].itertuples():
        copy = Spans.of(r.device, [r.start_us], [r.start_us + r.duration_us])
        on_it = [x for x in items if any(f.spans is not None and f.spans.overlap(copy) > 0 for f in _held(rep, x))]
        assert len(on_it) == 1 and pageable.title in (on_it[0]["title"], *on_it[0]["also"])


# -- the time outside the GPU's work: its own low item -----------------------------------------

@pytest.mark.parametrize("name", ["wild/llama_train.pt.trace.json.gz", "triton_kernels.pt.trace.json.gz",
                                  "mlp_train.pt.trace.json.gz", "trust/jax_cell.ksreport.json.gz"])
def test_time_outside_the_gpu_work_is_its_own_low_item(name):
    rep = ks.load(DATA / name)
    dev = rep.timeline.device()
    base = wall_base(dev, rep.timeline)
    before, after, outside = outside_parts(dev, rep.timeline, base)
    assert before + after == pytest.approx(base - dev["window_us"]) and before + after > 0.05 * base
    items = _items(rep)
    assert items[-1]["kind"] == "outside_gpu_work" and items[-1]["severity"] == "low"
    assert items[-1]["cost_us"] == pytest.approx(before + after)
    assert "the profiler's start-up and the cell's own Python" in items[-1]["title"]
    # The idle items price only the time inside the GPU's first-to-last window.
    for f in rep.findings:
        if f.kind in HOST_KINDS:
            assert f.spans.overlap(outside) == 0
            assert f.cost_us <= dev["window_us"] - dev["busy_us"] + 1e-6


def test_a_short_region_leads_with_its_cause_not_the_start_up():
    """triton_kernels: 2.16 ms of profiler span, 0.24 ms from the first kernel to the last. The
    "high" idle GPU item (94%) was mostly the profiler's start-up: now the idle inside the
    window leads, at its own size, and the start-up (89%) is a low item after it."""
    rep = ks.load(DATA / "triton_kernels.pt.trace.json.gz")
    items = _items(rep)
    assert [x["kind"] for x in items] == ["gpu_idle", "outside_gpu_work"] and items[1]["severity"] == "low"
    assert items[0]["share_of_wall"] <= 0.06 and items[1]["share_text"] == "89% of wall time"


# -- merges keep every finding's time --------------------------------------------------------------

def _f(kind, cost, starts, ends, severity="high"):
    return Finding(kind, severity, kind, "", cost_us=float(cost), fix="fix it",
                   spans=Spans.of("cuda:0", starts, ends))


def test_a_merged_item_costs_the_union_of_its_parts():
    findings = [_f("a", 100, [0], [100]),
                _f("b", 50, [50], [100]),                # all inside a: joins it
                _f("c", 40, [80], [120]),                # half new: its own item, cut to its part
                _f("d", 30, [0, 300], [27, 303])]        # 10% new: joins a, which grows by it
    items = what_to_fix(findings, 1000.0)
    assert [(x["kind"], x["cost_us"]) for x in items] == [("a", 103.0), ("c", 20.0)]
    assert items[0]["also"] == ["b", "d"] and "Same time as: b; d" in items[0]["note"]
    assert items[1]["within"] == "20.0 us of its 40.0 us is already in the items above"
    assert items[1]["severity"] == "low"      # cut to 2% of the wall time


@pytest.mark.parametrize("path", _reports(), ids=lambda p: p.split("/data/")[-1])
def test_no_high_finding_vanishes_and_shares_add_up(path):
    rep = ks.load(path)
    items = _items(rep)
    listed = {t for it in items for t in (it["title"], *it["also"])}
    for f in rep.findings:
        if f.severity == "high" and f.cost_us > 0:
            assert f.title in listed or len(items) == FIX_LIST_MAX, f.title
    if rep.wall_time_us:
        assert sum(it["cost_us"] or 0 for it in items) <= rep.wall_time_us * (1 + 1e-9)


def test_the_intervals_stay_out_of_the_payload():
    """A launch-bound trace has a gap per kernel: the spans are on the Finding only, never in its
    JSON, the first screen's list or the view's panel."""
    rep = ks.load(DATA / "wild" / "llama_train.pt.trace.json.gz")
    assert any(f.spans is not None for f in rep.findings)
    keys = {"rank", "kind", "severity", "title", "cost_us", "cost_text", "share_of_wall", "share_text", "cause",
            "fix", "link", "finding", "also", "within", "note"}
    assert all(set(it) == keys for it in _items(rep))
    text = json.dumps(fixes_panel(rep)) + json.dumps([f.to_dict() for f in rep.findings])
    assert "spans" not in text


def test_where_only_the_start_up_costs_time_what_the_run_says_leads():
    """graphs: two CUDA-graph replays busy 93% of their window; the 57% before the first and after
    the last is the only time at stake. What the run says (the graphs apply) comes first, with no
    time at stake, and the host's idle finding, whose time the start-up item holds, is no item."""
    rep = ks.load(DATA / "graphs.pt.trace.json.gz")
    items = _items(rep)
    assert [(x["kind"], x["cost_us"] is None) for x in items] == [("cuda_graphs", True), ("outside_gpu_work", False)]
    idle = next(f for f in rep.findings if f.kind == "gpu_idle")
    assert idle.cost_us == 0 and idle.severity == "info" and "an item of its own holds it" in idle.detail
