"""The re-measure step (analysis/remeasure.py, ``Comparison.advice``) on real H200 recordings: each
item of the first run's what-to-fix list, fixed / partly / not in the second, predicted against
realized on the measure the item names."""
import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.remeasure import ADVICE_COLUMNS, FIXED_DROP
from kernelscope.capture.repeats import per_repeat_totals
from tests.conftest import DATA


def load(name):
    return ks.load(DATA / name, progress=False)


def test_a_cuda_graph_fixes_the_launch_bound_item():
    before, after = load("launch_bound.pt.trace.json.gz"), load("graphs.pt.trace.json.gz")
    c = ks.compare(before, after)
    a, items = c.advice, before.what_to_fix()
    items = items[items["kind"] != "outside_gpu_work"]     # no fix to re-measure
    assert list(a.columns) == ADVICE_COLUMNS
    assert a["rank"].tolist() == items["rank"].tolist() and a["title"].tolist() == items["title"].tolist()
    r = a.iloc[0]
    assert r.kind == "launch_bound" and r.measure == "wall time"     # about no one kernel
    assert r.predicted_us == pytest.approx(items.iloc[0]["cost_us"])
    # Realized: the wall time per run, first minus second (the profiler's spans here).
    assert r.realized_us == pytest.approx(before.meta["span_us"] - after.meta["span_us"])
    # Both runs were recorded: the realized gain also holds the recording's own cost per launch,
    # which the graph took away with the launches and which the price leaves out (it prices the
    # run without the profiler), and the profiler's start-up outside the GPU's work (2.7 ms, its
    # own item): so the ratio is above 1 here.
    assert r.ratio == pytest.approx(r.realized_us / r.predicted_us) and 1.0 < r.ratio < 3.5
    # The graph replay has no launch_bound finding: fixed, but one run each side proves nothing.
    assert "launch_bound" not in {f.kind for f in after.findings}
    assert (r.after_cost_us, r.verdict, r.change) == (0.0, "fixed", "inconclusive")
    assert "No launch_bound finding" in r.note and "no repeats" in r.note
    text, html = repr(c), c._repr_html_()
    assert "What the first run said to fix, re-measured" in text and "fixed" in text
    assert "kernelscope-advice" in html and "<b>fixed</b>" in html


def test_a_run_against_itself_fixes_nothing():
    rep = load("wild/gpt2_infer.pt.trace.json.gz")
    c = ks.compare(rep, rep)
    a = c.advice
    items = rep.what_to_fix()
    assert len(a) == (items["kind"] != "outside_gpu_work").sum() >= 3
    assert set(a["verdict"]) == {"not"} and (a["realized_us"] == 0).all()
    # Items about one kernel are measured on that kernel, the others on the wall time.
    kernel_items = a[a["measure"].str.startswith("kernel ")]
    assert set(kernel_items["kind"]) >= {"gemm_fallback", "roofline"}
    assert set(a.loc[~a.index.isin(kernel_items.index), "measure"]) == {"wall time"}
    # The same finding is still there, at its whole cost.
    own = {f.title: f.cost_us for f in rep.findings}
    for r in a.itertuples():
        assert r.after_cost_us == pytest.approx(own[r.title])


def test_warming_up_fixes_the_cold_start_and_every_wall_item_shares_one_gain():
    cold, warm = load("trust/cold_first_call.ksreport.json.gz"), load("trust/cold_warm.ksreport.json.gz")
    c = ks.compare(cold, warm)
    a = c.advice.set_index("kind")
    wall = cold.wall_time_us - warm.wall_time_us
    assert a.loc["cold_start", "verdict"] == "fixed" and a.loc["cold_start", "realized_us"] == pytest.approx(wall)
    assert (a["measure"] == "wall time").all() and np.allclose(a["realized_us"], wall)
    # The first-run item holds the whole wall time the warm-up gave back: no other wall item shares it.
    assert a.loc["cold_start", "predicted_us"] == pytest.approx(wall, rel=0.01)
    # It is the only item now: the first run holds the whole wall time (the other findings' time
    # lies inside it), so none shares the gain.
    assert list(a.index) == ["cold_start"]


def with_two_repeats(name):
    """The recording's two steps as two repeats, the way ``--repeat 2`` splits a lean recording."""
    rep = load(name)
    rep.meta["repeats"] = {"n": 2, "per_kernel_total_us": per_repeat_totals(rep.kernels, rep.ops, 2)}
    return rep


def test_repeats_predict_and_realize_per_run():
    before, after = with_two_repeats("launch_bound.pt.trace.json.gz"), with_two_repeats("graphs.pt.trace.json.gz")
    r = ks.compare(before, after).advice.iloc[0]
    assert r.predicted_us == pytest.approx(before.what_to_fix().iloc[0]["cost_us"] / 2)
    assert r.realized_us == pytest.approx((before.meta["span_us"] - after.meta["span_us"]) / 2)
    # These recordings hold no repeat windows, so their wall time is not split by repeat.
    assert r.change == "inconclusive" and "no repeat windows" in r.note


def advice_of(workload, before="before.repeats", after="after.repeats"):
    b = ks.load(DATA / "advice" / f"{workload}.{before}.ksreport.json.gz", progress=False)
    a = ks.load(DATA / "advice" / f"{workload}.{after}.ksreport.json.gz", progress=False)
    return b, a, ks.compare(b, a)


def test_syncs_kept_off_the_host_are_fixed_and_the_gain_is_real():
    # 60 x (matmul, .sum().item()) per step, then the sum kept on the GPU: 5 repeats each side.
    before, after, c = advice_of("item_in_loop")
    a = c.advice.set_index("kind")
    syncs = a.loc["syncs"]
    own = next(f.cost_us for f in before.findings if f.kind == "syncs") / 5
    now = next(f.cost_us for f in after.findings if f.kind == "syncs") / 5
    assert syncs["predicted_us"] == pytest.approx(before.what_to_fix().set_index("kind").loc["syncs", "cost_us"] / 5)
    assert syncs["after_cost_us"] == pytest.approx(now) and now <= (1 - FIXED_DROP) * own
    wall = c.metric("wall_us")
    assert syncs["realized_us"] == pytest.approx(-wall["change"]) and wall["verdict"] == "real"
    assert (syncs["verdict"], syncs["change"]) == ("fixed", "real")
    # Priced by their waits and a round trip each, the syncs' price is within 0.5x-1.5x of what
    # removing them gave (it was 4x, idle after them counted whole, before issue 41's pricing).
    assert 0.5 < syncs["ratio"] < 1.5
    assert "Its cost fell by 98%" in syncs["note"] and "inconclusive" not in syncs["note"]


def test_a_padded_vocabulary_fixes_the_gemm_fallback_on_its_kernel():
    before, after, c = advice_of("lm_head_50257")
    (r,) = c.advice.itertuples()
    assert r.kind == "gemm_fallback" and r.measure == "kernel CUTLASS GEMM 128x128 (sm75)"
    gone = c.gone.iloc[0]
    assert r.realized_us == pytest.approx(gone["total_before_us"])        # gone: its whole time
    assert r.predicted_us == pytest.approx(before.what_to_fix().iloc[0]["cost_us"] / 5)
    assert 1.0 < r.ratio < 1.2 and (r.after_cost_us, r.verdict, r.change) == (0.0, "fixed", "real")
    assert r.note.startswith("The kernel is gone from the second run: its whole time counts")


def test_the_same_code_recorded_twice_is_not_fixed():
    # The same fp32 GEMM recorded twice (5 repeats, then 1 run): its fp32 item is still there at
    # the same price, so nothing was fixed, whatever one run's wall time says.
    before, after, c = advice_of("fp32_matmul", "before.repeats", "before")
    r = c.advice.iloc[0]
    assert r.kind == "fp32_gemm" and r.predicted_us > 0
    own = next(f.cost_us for f in after.findings if f.kind == "fp32_gemm")
    assert r.after_cost_us == pytest.approx(own) and r.verdict == "not" and r.change == "inconclusive"
