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
    assert list(a.columns) == ADVICE_COLUMNS
    assert a["rank"].tolist() == items["rank"].tolist() and a["title"].tolist() == items["title"].tolist()
    r = a.iloc[0]
    assert r.kind == "launch_bound" and r.measure == "wall time"     # about no one kernel
    assert r.predicted_us == pytest.approx(items.iloc[0]["cost_us"])
    # Realized: the wall time per run, first minus second (the profiler's spans here).
    assert r.realized_us == pytest.approx(before.meta["span_us"] - after.meta["span_us"])
    # Both runs were recorded: the realized gain also holds the recording's own cost per launch,
    # which the graph took away with the launches and which the price leaves out (it prices the
    # run without the profiler), so the ratio is above 1 here.
    assert r.ratio == pytest.approx(r.realized_us / r.predicted_us) and 1.0 < r.ratio < 2.5
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
    assert len(a) == len(rep.what_to_fix()) >= 3
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
    assert "shared with items 2, 3, 4" in a.loc["cold_start", "note"]
    # A finding still there at a small part of its cost counts as fixed (and says by how much).
    sc = a.loc["serialized_copies"]
    own = next(f.cost_us for f in cold.findings if f.kind == "serialized_copies")
    after = next(f.cost_us for f in warm.findings if f.kind == "serialized_copies")
    assert sc["after_cost_us"] == pytest.approx(after) and after < own
    assert sc["verdict"] == ("fixed" if after <= (1 - FIXED_DROP) * own else "partly")


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


def test_an_item_without_time_at_stake_needs_its_measure_to_move():
    # The same fp32 GEMM recorded twice (5 repeats, then 1 run): the "GPU busy" item names the
    # kernel but no time; its finding is not in the one-run recording, yet nothing was fixed.
    before, after, c = advice_of("fp32_matmul", "before.repeats", "before")
    (r,) = c.advice.itertuples()
    assert r.kind == "gpu_bound" and np.isnan(r.predicted_us) and r.measure.startswith("kernel cuBLAS GEMM")
    assert "gpu_bound" not in {f.kind for f in after.findings}
    assert r.verdict == "not" and r.change == "inconclusive"
    assert "slower, but the change is inconclusive (repeats on one side only)" in r.note
