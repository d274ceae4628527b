"""Replayed CUDA graph kernels matched to what captured them, on real H200 recordings
(benchmarks/graphs/record.py): torch.profiler's own traces, with the graph watch's records of the
same runs (``*.watch.gz``, JSON, what ``ks.profile`` keeps in ``meta["graph_captures"]``)."""
import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.graph_match import NO_WATCH
from kernelscope.reports.report import Report
from kernelscope.trace.kineto import read_kineto

DATA = Path(__file__).resolve().parents[1] / "data" / "graphs"


def _trace(name, watch=True):
    t = read_kineto(str(DATA / f"{name}.pt.trace.json.gz"))
    if watch and (DATA / f"{name}.watch.gz").exists():
        with gzip.open(DATA / f"{name}.watch.gz", "rt") as f:
            t.meta["graph_captures"] = json.load(f)
    return t


def _graph(rep):
    k = rep.kernels
    return k[k["graph_launch"].fillna(False).astype(bool)]


def test_capture_inside_the_recording_needs_no_watch():
    rep = Report(_trace("manual_in_region"))
    g = _graph(rep)
    assert len(g) == 27 and g["graph_unmatched"].isna().all()
    ops = rep.trace.ops.iloc[g["op_index"].astype(int)]
    assert "graph_capture" not in set(ops["cat"])            # the capture's own op rows
    mm = ops[ops["name"] == "aten::addmm"]
    assert len(mm) == 9 and mm["input_dims"].map(lambda d: d[1]).tolist()[0] == [512, 256]
    assert set(g["capture_basis"]) == {"launch order in the recorded capture; names checked by the ops' kernel families"}
    t = rep.graphs
    assert t[["replays", "kernels_per_replay", "attributed"]].values.tolist() == [[3, 9, 1.0]]
    assert t["captured"].iloc[0] == "in the recording" and t["capture_us"].iloc[0] > 0


def test_decode_graphs_per_batch_size_each_replay_has_its_own_shapes():
    rep = Report(_trace("decode"))
    g = _graph(rep)
    assert len(g) == 6 * 28 and g["graph_unmatched"].isna().all()
    first = g[g["op"] == "aten::mm"].sort_values("start_us").groupby("correlation", sort=False).head(1)
    first = first.sort_values("launch_start_us")
    batch = [rep.trace.ops.iloc[int(i)]["input_dims"][0][0] for i in first["op_index"]]
    assert batch == [8, 1, 4, 2, 8, 1]          # the order the replays ran in
    assert sorted(rep.graphs["replays"]) == [1, 1, 2, 2]
    # step() calls the layers itself (no parent forward runs): each module is named by its class
    assert set(g["capture_module"].dropna()) == {"Embedding", "RMSNorm", "Linear"}
    assert g["source"].str.contains("record.py").all()


def test_gemm_inside_a_graph_gets_shape_based_numbers_like_an_eager_one():
    rep = Report(_trace("decode"))
    roof = rep.roofline if hasattr(rep, "roofline") else None
    g = _graph(rep)
    row = rep.trace.ops.iloc[int(g.loc[g["op"] == "aten::mm", "op_index"].iloc[0])]
    assert row["cat"] == "graph_capture" and row["input_types"] == ["c10::BFloat16", "c10::BFloat16"]
    from kernelscope.analysis.roofline import op_counts
    flops, _ = op_counts(row["name"], row["input_dims"], row["input_types"])[:2]
    assert flops == 2 * 8 * 512 * 1536
    assert roof is None or len(roof)


def test_parallel_branches_and_reduce_overhead():
    fork = Report(_trace("forked"))
    assert _graph(fork)["graph_unmatched"].isna().all()
    assert set(_graph(fork)["op"]) == {"aten::mm", "aten::relu", "aten::mul", "aten::add"}
    comp = Report(_trace("compiled_before_region"))
    g = _graph(comp)
    assert len(g) == 180 and g["graph_unmatched"].isna().all()
    conv = g[g["op"] == "aten::convolution"]
    assert len(conv) == 69
    assert {comp.trace.ops.iloc[int(i)]["input_dims"][0][0] for i in conv["op_index"]} == {8}
    assert g["op"].str.startswith("triton_").sum() > 0
    inside = Report(_trace("compiled_capture_in_region"))
    assert _graph(inside)["graph_unmatched"].isna().all() and "aten::cudnn_convolution" in set(_graph(inside)["op"])


def test_graph_captured_before_the_recording_without_a_watch_says_so():
    rep = Report(_trace("before_region", watch=False))
    g = _graph(rep)
    assert len(g) == 27 and g["op"].isna().all() and set(g["graph_unmatched"]) == {NO_WATCH}
    saved = ks.load(str(DATA / "no_watch.ks.json.gz"))
    assert set(_graph(saved)["graph_unmatched"]) == {NO_WATCH}
    assert rep.graphs["captured"].iloc[0] == "unknown: not attributed"


def test_a_replay_in_another_order_is_unmatched_not_mislabelled():
    t = _trace("manual_in_region")
    k = t.kernels
    rows = np.flatnonzero(k["graph_launch"].fillna(False).to_numpy(dtype=bool))
    first = k.iloc[rows].sort_values("start_us").groupby("correlation").head(9)
    one = first[first["correlation"] == first["correlation"].iloc[0]].sort_values("start_us")
    # The replay's GEMM and its layer norm swap places: launch order would put a GEMM on layer_norm.
    gemm = one.index[one["name"].str.contains("nvjet")][0]
    norm = one.index[one["name"].str.contains("layer_norm")][0]
    a, b = k.at[gemm, "start_us"], k.at[norm, "start_us"]
    k.loc[gemm, "start_us"], k.loc[norm, "start_us"] = b, a
    rep = Report(t)
    g = _graph(rep)
    bad = g[g["correlation"] == one["correlation"].iloc[0]]
    assert bad["op"].isna().all() and bad["graph_unmatched"].str.contains("launch order puts").all()
    assert g[g["correlation"] != one["correlation"].iloc[0]]["graph_unmatched"].isna().all()


def test_captures_that_could_each_be_the_replay_leave_it_unmatched():
    t = _trace("decode")
    recs = t.meta["graph_captures"]["records"]
    # Give batch size 2's graph batch size 1's grids: two captures now fit batch 1's replays,
    # captured with different shapes, so neither is chosen.
    b1 = next(r for r in recs if "[1, 512]" in json.dumps([n.get("input_dims") for n in r["nodes"]]))
    b2 = next(r for r in recs if "[2, 512]" in json.dumps([n.get("input_dims") for n in r["nodes"]]))
    for n1, n2 in zip(b1["nodes"], b2["nodes"]):
        for key in ("name", "grid", "block"):
            n2[key] = copy.deepcopy(n1[key])
    g = _graph(Report(t))
    un = g[g["graph_unmatched"].notna()]
    assert len(un) == 3 * 28 and un["op"].isna().all()      # batch 8 and 4 still matched
    why = un.groupby("correlation")["graph_unmatched"].first().value_counts()
    # batch 1's two replays fit both captures; batch 2's one replay now fits none.
    assert why.filter(like="2 captured graphs have exactly these kernels").sum() == 2
    assert why.get("no capture in the recording or the graph watch has these kernels") == 1


def test_a_replay_no_capture_has_is_unmatched():
    t = _trace("forked")
    for n in t.meta["graph_captures"]["records"][0]["nodes"]:
        n["grid"] = [g + 1 for g in n["grid"]]
    g = _graph(Report(t))
    assert g["op"].isna().all()
    assert set(g["graph_unmatched"]) == {"no capture in the recording or the graph watch has these kernels"}


def test_saved_report_keeps_the_attribution(tmp_path):
    rep = Report(_trace("decode"))
    back = ks.load(rep.save(str(tmp_path / "decode.ks.json")))
    a, b = _graph(rep), _graph(back)
    assert b["op"].tolist() == a["op"].tolist() and b["graph"].tolist() == a["graph"].tolist()
    assert back.graphs["replays"].tolist() == rep.graphs["replays"].tolist()


@pytest.mark.parametrize("name", ["manual_in_region", "decode"])
def test_findings_and_first_screen_still_build(name):
    rep = Report(_trace(name))
    assert rep.findings is not None and rep.first_screen() is not None


def test_an_fp32_gemm_replayed_from_a_graph_gets_the_eager_ones_advice():
    def fp32(rep):
        # the finding's title without its measured times: "... 5 launches of aten::mm took"
        f = next(f for f in rep.findings if f.kind == "fp32_gemm")
        return f.title.split(" took")[0]
    eager = Report(_trace("fp32_eager"))
    graph = Report(_trace("fp32_graph"))
    assert _graph(graph)["op"].tolist() == ["aten::mm"] * 5
    assert fp32(graph) == fp32(eager) == "fp32 GEMMs on CUDA cores: 5 launches of aten::mm"
