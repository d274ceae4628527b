"""Analyses vectorized over the columns give what the plain per-row loops give, on real traces.

Each reference here is the loop the analysis used to be (a walk with a stack for CPU-op self
times, one op instance at a time for the roofline), written out in the test.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.backends import nearest_enclosing, op_self_time
from kernelscope.analysis.peaks import device_peaks
from kernelscope.analysis.roofline import _MATMUL, above_roof_note, op_counts, roofline
from tests.conftest import DATA

TRACES = sorted(DATA.rglob("*.pt.trace.json.gz"))


def stack_parents(end, group, eps=1e-6):
    out, stack, cur = [-1] * len(end), [], None
    for i, e in enumerate(end):
        if group[i] != cur:
            stack, cur = [], group[i]
        while stack and e > end[stack[-1]] + eps:
            stack.pop()
        if stack:
            out[i] = stack[-1]
        stack.append(i)
    return out


def test_nearest_enclosing_is_the_stack_walk():
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 50))
        scale = float(rng.choice([1.0, 1e10, 1e18, 1e-7]))
        end = rng.choice([rng.random(n) * 10, np.round(rng.random(n) * 5), np.sort(rng.random(n))]) * scale
        if rng.random() < 0.3:
            end[rng.integers(0, n, 3)] = np.nan     # NaN ends: the walk never pops for them
        group = np.sort(rng.integers(0, 3, n))
        assert nearest_enclosing(end, group).tolist() == stack_parents(end.tolist(), group.tolist())


def stack_self_time(ops):
    """The op self times of a walk with a stack per thread (the analysis before vectorizing)."""
    self_us = ops["duration_us"].astype(float).fillna(0.0).to_numpy().copy()
    start = ops["start_us"].astype(float).to_numpy()
    end = start + ops["duration_us"].astype(float).fillna(0.0).to_numpy()
    dur = end - start
    tids = ops["tid"].astype(str).to_numpy()
    order = np.lexsort((-dur, start, tids)).tolist()
    child = [0.0] * len(end)
    stack, cur = [], None
    for i in order:
        if tids[i] != cur:
            stack, cur = [], tids[i]
        while stack and end[i] > end[stack[-1]] + 1e-6:
            stack.pop()
        if stack:
            child[stack[-1]] += dur[i]
        stack.append(i)
    return np.maximum(self_us - np.asarray(child), 0.0)


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_self_times_and_roofline_match_the_loops(path):
    rep = ks.load(path)
    assert op_self_time(rep.ops).tolist() == stack_self_time(rep.ops).tolist()
    ours, ref = roofline(rep), loop_roofline(rep)
    assert len(ours) == len(ref)
    for col in ref.columns:
        a, b = ours[col].tolist(), ref[col].tolist()
        same = [x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
                or (x is None and y is None) for x, y in zip(a, b)]
        assert all(same), (col, [(x, y) for x, y, s in zip(a, b, same) if not s][:3])


def test_tf32_kernels_of_fp32_matmuls_match_the_loops():
    """No recording here runs an fp32 matmul on TF32 kernels: a real DDP rank's fp32 GEMM kernels
    renamed as cuBLAS names its TF32 ones, so the roofline's TF32 precision (looked up only for the
    fp32 matmuls' kernels) is checked against the loop too."""
    rep = ks.load(DATA / "ranks" / "rank1.pt.trace.json.gz")
    k = rep.kernels
    mm = k["op"].isin(list(_MATMUL)).to_numpy()
    k.loc[mm, "name"] = k.loc[mm, "name"].astype(object) + "_tf32"
    ours, ref = roofline(rep), loop_roofline(rep)
    assert (ours["precision"] == "tf32").sum() > 0 and (ours["precision"] == "fp32").sum() > 0
    pd.testing.assert_series_equal(ours["precision"].astype(object), ref["precision"].astype(object))
    pd.testing.assert_series_equal(ours["peak_tflops"], ref["peak_tflops"])


def loop_roofline(report) -> pd.DataFrame:
    """The roofline one op instance at a time, as it was computed before it was vectorized."""
    k = report.kernels
    ops = report.ops
    k = k[k["op_index"].notna() & k["duration_us"].notna()] if len(k) else k
    rows = []
    if len(k) and len(ops):
        peaks_of = {i: device_peaks(n) for i, n in zip(report.devices["index"].tolist(),
                                                       report.devices["name"].tolist())}
        agg = k.groupby("op_index", sort=False)["duration_us"].agg(["sum", "size", "idxmax"])
        tops = k.loc[agg["idxmax"]]
        for j, (op_index, dur, n) in enumerate(zip(agg.index.tolist(), agg["sum"].tolist(), agg["size"].tolist())):
            i = int(op_index)
            if i < 0 or i >= len(ops) or not dur > 0:
                continue
            o = ops.iloc[i]
            counts = op_counts(o["name"], o["input_dims"], o["input_types"], o["flops"])
            if counts is None:
                continue
            flops, nbytes, precision, source = counts
            top = tops.iloc[j]
            kname = top["name"]
            peaks = peaks_of.get(top["device_index"])
            if precision == "fp32" and o["name"] in _MATMUL and "tf32" in str(kname).lower():
                precision = "tf32"
            peak_t = peaks.peak_tflops(precision) if peaks and precision else None
            peak_b = peaks.memory_gbps if peaks else None
            sec = dur * 1e-6
            ach_t = flops / sec / 1e12 if flops is not None else np.nan
            ach_b = nbytes / sec / 1e9
            inten = flops / nbytes if flops is not None and nbytes else np.nan
            attain, share, bound = np.nan, np.nan, None
            if peak_b:
                if peak_t and flops is not None:
                    mem_roof = inten * peak_b / 1e3
                    attain = min(peak_t, mem_roof)
                    bound = "compute" if peak_t <= mem_roof else "memory"
                    share = ach_t / attain
                else:
                    share, bound = ach_b / peak_b, "memory"
            rows.append({"op": o["name"], "op_index": i, "kernel": kname, "short_name": top["short_name"],
                         "device": top["device"], "precision": precision, "kernels": int(n),
                         "duration_us": float(dur), "flops": flops, "bytes": nbytes, "flops_source": source,
                         "intensity": inten, "achieved_tflops": ach_t, "achieved_gbps": ach_b,
                         "peak_tflops": peak_t, "peak_gbps": peak_b, "attainable_tflops": attain,
                         "roof_share": share, "bound": bound, "peaks_source": peaks.source if peaks else None,
                         "roof_note": above_roof_note(bound, share)})
    from kernelscope.analysis.roofline import ROOFLINE_COLUMNS
    return pd.DataFrame(rows, columns=ROOFLINE_COLUMNS)


def frame_host_in_gaps(ops, gaps, top=3):
    """host_in_gaps as it was written over the ops table (filter, sort, groupby per thread)."""
    from kernelscope.analysis.intervals import covered_length, merge_intervals
    out = {"idle_us": 0.0, "covered_us": 0.0, "uncovered_us": 0.0, "top_ops": []}
    if gaps is None or not len(gaps):
        return out
    gs, ge = merge_intervals(gaps["start_us"], gaps["end_us"])
    out["idle_us"] = float((ge - gs).sum())
    o = ops if ops is not None and len(ops) else None
    if o is not None and "cat" in o:
        o = o[~o["cat"].astype(str).str.contains("annotation")]
    if o is None or not len(o):
        out["uncovered_us"] = out["idle_us"]
        return out
    o = o.sort_values(["tid", "start_us"], kind="stable")
    s = o["start_us"].to_numpy(float)
    e = s + o["duration_us"].fillna(0).to_numpy(float)
    prev_end = pd.Series(e, index=o.index).groupby(o["tid"].to_numpy()).transform(
        lambda x: x.cummax().shift(1)).to_numpy(float)
    outer = ~(s < np.nan_to_num(prev_end, nan=-np.inf))
    s, e, names = s[outer], e[outer], o["name"].astype(str).to_numpy()[outer]
    ms, me = merge_intervals(s, e)
    out["covered_us"] = float(covered_length(gs, ge, ms, me).sum())
    out["uncovered_us"] = max(out["idle_us"] - out["covered_us"], 0.0)
    each = covered_length(gs, ge, s, e)
    by = pd.Series(each).groupby(names).sum().sort_values(ascending=False)
    out["top_ops"] = [{"op": str(n), "us": float(v)} for n, v in by.head(top).items() if v > 0]
    return out


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_host_in_gaps_on_arrays_is_the_frame_version(path):
    from kernelscope.analysis.timeline import host_in_gaps
    rep = ks.load(path)
    gaps = rep.gaps[rep.gaps["cause"] != "queued"]
    assert host_in_gaps(rep.ops, gaps) == frame_host_in_gaps(rep.ops, gaps)
    # Ops without a thread or an end, as a saved report may hold them, are read as before too.
    ops = rep.ops.copy()
    if len(ops) > 3:
        ops.loc[ops.index[::3], "tid"] = None
        ops.loc[ops.index[1::5], "duration_us"] = np.nan
    assert host_in_gaps(ops, gaps) == frame_host_in_gaps(ops, gaps)


def frame_same_dots_once(pts):
    """same_dots_once as it was written: a groupby over the six key columns."""
    keys = [c for c in ["kernel", "short_name", "op", "precision", "intensity", "device"] if c in pts.columns]
    if not len(pts) or not keys:
        return pts.assign(count=1)
    d = pts["duration_us"].astype(float).fillna(0.0)
    w = pts.assign(_fl=pts["achieved_tflops"].astype(float) * d, _rs=pts["roof_share"].astype(float) * d, _d=d)
    g = w.groupby(keys, dropna=False, sort=False)
    out = g.first()
    tot = g["_d"].sum()
    out["duration_us"] = tot
    with np.errstate(invalid="ignore", divide="ignore"):
        out["achieved_tflops"] = np.where(tot > 0, g["_fl"].sum() / tot, g["achieved_tflops"].mean())
        out["roof_share"] = np.where(tot > 0, g["_rs"].sum(min_count=1) / tot, g["roof_share"].mean())
    out["count"] = g.size()
    return out.reset_index().drop(columns=["_fl", "_rs", "_d"])


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_same_dots_once_by_codes_is_the_groupby(path):
    from kernelscope.analysis.roofline import same_dots_once
    rl = roofline(ks.load(path))
    for pts in (rl, rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]):
        pd.testing.assert_frame_equal(same_dots_once(pts), frame_same_dots_once(pts))


def test_same_dots_once_takes_what_a_first_row_lacks_from_later_rows():
    """A dot's values are its rows' first non-missing ones (groupby's first()): where a group's
    first row lacks one (text, a number, an object column), a later row of the group gives it,
    and a group with none stays missing, as the groupby over every row has it."""
    from kernelscope.analysis.roofline import same_dots_once
    rl = roofline(ks.load(DATA / "launch_bound.pt.trace.json.gz"))
    pts = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()].reset_index(drop=True)
    assert len(pts) > 100 and pts["kernel"].nunique() == 2
    pts["roof_note"] = pd.Series([None] * len(pts), dtype=object)
    pts.loc[50:, "roof_note"] = "later"                         # both groups: a later row has it
    pts["peaks_source"] = pts["peaks_source"].where(pts.index % 7 == 3)    # text, first rows missing
    pts.loc[: len(pts) - 2, "flops"] = np.nan                   # one group's rows all missing but one
    other = pts["kernel"] != pts["kernel"].iloc[0]
    pts.loc[other, "peak_gbps"] = np.nan                         # one group has none
    got, ref = same_dots_once(pts), frame_same_dots_once(pts)
    # The text that fills the object column comes out typed as text (as pandas types it on
    # assignment; so it did before the groupby was replaced).
    ref["roof_note"] = ref["roof_note"].astype(got["roof_note"].dtype)
    pd.testing.assert_frame_equal(got, ref)
    assert got["roof_note"].tolist() == ["later", "later"] and got["peak_gbps"].isna().sum() == 1


def frame_op_summary(ops, kernels):
    """op_summary as it was written: two groupbys by the name column."""
    from kernelscope.analysis.op_tree import op_gpu_time, op_tree
    cols = ["name", "calls", "total_us", "self_us", "mean_us", "kernels", "gpu_us", "kernels_inclusive",
            "gpu_inclusive_us"]
    ops = ops.reset_index(drop=True)
    tree = op_tree(ops)
    frame = pd.concat([ops[["name", "duration_us"]], tree[["self_us", "outermost_of_name"]],
                       op_gpu_time(ops, kernels, tree)], axis=1)
    g = frame.groupby("name", sort=False)
    out = pd.DataFrame({"calls": g.size(), "total_us": g["duration_us"].sum(), "self_us": g["self_us"].sum(),
                        "mean_us": g["duration_us"].mean(), "kernels": g["kernels"].sum(), "gpu_us": g["gpu_us"].sum()})
    outer = frame[frame["outermost_of_name"]].groupby("name", sort=False)
    out["kernels_inclusive"] = outer["kernels_inclusive"].sum().reindex(out.index).fillna(0).astype(np.int64)
    out["gpu_inclusive_us"] = outer["gpu_inclusive_us"].sum().reindex(out.index).fillna(0.0)
    return out.sort_values("total_us", ascending=False, kind="stable").reset_index()[cols]


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_op_summary_by_codes_is_the_groupby(path):
    from kernelscope.analysis.op_tree import op_summary
    rep = ks.load(path)
    if not len(rep.ops):
        return
    pd.testing.assert_frame_equal(op_summary(rep.ops, rep.kernels), frame_op_summary(rep.ops, rep.kernels))
    ops = rep.ops.copy()
    ops.loc[ops.index[::7], "name"] = None         # a saved report's missing names are dropped as before
    pd.testing.assert_frame_equal(op_summary(ops, rep.kernels), frame_op_summary(ops, rep.kernels))


def test_thread_start_order_is_lexsort():
    from kernelscope.analysis.backends import thread_start_order
    rng = np.random.default_rng(11)
    for i in range(2000):
        n = int(rng.integers(0, 60))
        threads = rng.integers(0, 3, n)
        # nearly sorted starts (as a trace's), and coarse ones that tie often
        start = np.sort(rng.random(n)).round(2) if i % 2 else rng.integers(0, 8, n).astype(float)
        dur = rng.integers(0, 4, n).astype(float)
        if i % 7 == 0 and n:
            start[rng.integers(0, n)] = np.nan
        assert thread_start_order(threads, start, dur).tolist() == np.lexsort((-dur, start, threads)).tolist()


def frame_kernel_summary(kernels, by="name"):
    """kernel_summary as it was written: a groupby by the column itself."""
    cols = ["launches", "total_us", "mean_us", "median_us", "min_us", "max_us", "std_us", "share"]
    keep = [c for c in ("short_name", "backend") if c in kernels.columns and c != by]
    g = kernels.groupby(by, sort=False, dropna=False)
    d = g["duration_us"]
    out = pd.DataFrame({"launches": d.size(), "total_us": d.sum(), "mean_us": d.mean(), "median_us": d.median(),
                        "min_us": d.min(), "max_us": d.max(), "std_us": d.std(ddof=1).fillna(0.0)})
    for c in keep:
        out[c] = g[c].first()
    total = kernels["duration_us"].sum()
    out["share"] = out["total_us"] / total if total > 0 else 0.0
    out = out.reset_index().sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)
    return out[[by, *keep, *cols]]


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_summary_by_codes_is_the_groupby(path):
    from kernelscope.analysis.summary import kernel_summary
    k = ks.load(path).kernels
    if not len(k):
        return
    for by in ("name", "short_name", "op", "stream"):
        pd.testing.assert_frame_equal(kernel_summary(k, by), frame_kernel_summary(k, by), check_exact=True)
    k = k.copy()
    k.loc[k.index[::5], "name"] = None             # a missing name: its own group, as groupby makes it
    pd.testing.assert_frame_equal(kernel_summary(k), frame_kernel_summary(k), check_exact=True)


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_cpu_backends_by_codes_are_the_groupby(path):
    from kernelscope.analysis.backend_rules import cpu_op_backend
    from kernelscope.analysis.backends import _text, backend_breakdown
    rep = ks.load(path)
    ops = rep.ops[(rep.ops["cat"] != "user_annotation").fillna(True).to_numpy(dtype=bool)]
    cpu = backend_breakdown(rep).query("device == 'CPU'").reset_index(drop=True)
    if not len(ops):
        assert not len(cpu)
        return
    labels = [cpu_op_backend(_text(n), _text(b)) for n, b in zip(ops["name"], ops["kernel_backend"])]
    grp = pd.DataFrame({"backend": labels, "self_us": op_self_time(ops)}).groupby("backend", sort=False)["self_us"]
    ref = pd.DataFrame({"launches": grp.size(), "cpu_time_us": grp.sum()}).reset_index()
    ref = ref.sort_values("cpu_time_us", ascending=False, kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(cpu[["backend", "launches", "cpu_time_us"]], ref, check_exact=True)


def test_stable_order_is_the_stable_argsort():
    from kernelscope.analysis.distinct import stable_order
    rng = np.random.default_rng(5)
    for hi in (3, 200, 1 << 15, 1 << 40):
        codes = rng.integers(-1, hi, 5000)
        assert stable_order(codes).tolist() == np.argsort(codes, kind="stable").tolist()
    assert stable_order(np.zeros(0, np.int64)).tolist() == []


def test_nearest_enclosing_of_many_groups_is_the_stack_walk():
    """Past 64 groups the top-level shortcut is skipped: the rounds alone give the walk's answer."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(100, 400))
        end = rng.choice([rng.random(n) * 10, np.sort(rng.random(n))])
        group = np.sort(rng.integers(0, 120, n))
        assert nearest_enclosing(end, group).tolist() == stack_parents(end.tolist(), group.tolist())


def test_call_sites_once_per_distinct_are_the_per_row_words():
    from kernelscope.analysis.findings.timeline import _call_site, _call_sites
    b = ks.load(DATA / "copies_streams.pt.trace.json.gz").timeline.blocking
    rng = np.random.default_rng(3)
    rows = rng.integers(0, len(b), 5000)
    big = pd.DataFrame({c: pd.Series(b[c].to_numpy(object)[rows], dtype=object) for c in ("name", "op", "outer_op")})
    # ops missing as None or NaN, and one that is not text, worded as the loop words them
    big.loc[big.index[::7], "op"] = None
    big.loc[big.index[3::11], "outer_op"] = np.nan
    big.loc[big.index[5::13], "op"] = 7
    ref = [_call_site(n, o, t) for n, o, t in zip(big["name"], big["op"], big["outer_op"])]
    assert _call_sites(big) == ref and len(set(ref)) > 2


@pytest.mark.parametrize("name", ["copies_streams.pt.trace.json.gz", "mlp_train.pt.trace.json.gz"])
def test_outer_ops_by_thread_codes_are_the_per_query_lookups(name):
    """outer_ops looks its queries up a thread at a time: as asking each (thread, time) alone."""
    from kernelscope.analysis.timeline import outer_ops
    rep = ks.load(DATA / name)
    ops = rep.ops
    rng = np.random.default_rng(4)
    rows = rng.integers(0, len(ops), 3000)
    tids = [None if i % 9 == 0 else t for i, t in enumerate(ops["tid"].to_numpy(object)[rows].tolist())]
    times = [None if i % 13 == 0 else t + 0.5 for i, t in enumerate(ops["start_us"].to_numpy(float)[rows].tolist())]
    got = outer_ops(ops, tids, times)
    cpu = ops[(ops["cat"] == "cpu_op").to_numpy(bool)]
    ref = []
    for t, w in zip(tids, times):
        mine = cpu[cpu["tid"].to_numpy(object) == t] if t is not None else cpu.iloc[:0]
        mine = mine.sort_values("start_us", kind="stable")
        s, e = mine["start_us"].to_numpy(float), (mine["start_us"] + mine["duration_us"]).to_numpy(float)
        top = s >= np.concatenate([[-np.inf], np.maximum.accumulate(e)[:-1]])
        hit = [n for a, b, n in zip(s[top], e[top], mine["name"].to_numpy(object)[top]) if w is not None and a <= w <= b]
        ref.append(hit[-1] if hit else None)
    assert got == ref and any(x is not None for x in got)
