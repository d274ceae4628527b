"""The comparison's intervals and verdicts on real H200 recordings made with 5 repeats on each side
(``benchmarks/advice/run.py``: ``prof.repeat(i)`` around each step, as ``--repeat 5`` records):
each total's per-repeat values from the recording's repeat windows, Welch's interval written out,
and real / noise / inconclusive as the spread says."""
import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.intervals import union_length
from kernelscope.analysis.noise import NOISE_FLOOR_US, NOISE_MARGIN, t_quantile
from kernelscope.analysis.repeats import repeat_series, repeat_windows
from tests.conftest import DATA

ADVICE = DATA / "advice"


def load(name):
    return ks.load(ADVICE / f"{name}.ksreport.json.gz", progress=False)


def pair(workload):
    return load(f"{workload}.before.repeats"), load(f"{workload}.after.repeats")


def interval(before, after):
    """Welch's 95% interval written out: (low, high)."""
    b, a = np.asarray(before, float), np.asarray(after, float)
    vb, va = b.var(ddof=1) / len(b), a.var(ddof=1) / len(a)
    df = (vb + va) ** 2 / (vb ** 2 / (len(b) - 1) + va ** 2 / (len(a) - 1))
    half = t_quantile(0.975, df) * np.sqrt(vb + va)
    return a.mean() - b.mean() - half, a.mean() - b.mean() + half


def by_window(rep, table, i):
    """The rows of ``table`` whose launching call lies in repeat ``i``'s window."""
    s, e, _ = next(w for w in repeat_windows(rep.ops) if w[2] == i)
    t = table["launch_start_us"]
    return table[(t >= s) & (t <= e)]


def test_each_total_has_a_value_per_repeat():
    rep = load("item_in_loop.before.repeats")       # 60 x (matmul, sum, .item()) per repeat
    n = rep.meta["repeats"]["n"]
    assert n == 5 and [w[2] for w in repeat_windows(rep.ops)] == list(range(5))
    s = repeat_series(rep)
    assert set(s) == {"gpu_time_us", "wall_us", "copy_time_us", "busy_us", "active_us", "launches"}
    assert s["wall_us"].tolist() == rep.meta["repeats"]["cuda_event_us"]           # the CUDA events
    per_kernel = rep.meta["repeats"]["per_kernel_total_us"]
    assert s["gpu_time_us"] == pytest.approx(np.sum(list(per_kernel.values()), axis=0))
    for i in range(n):
        k, c = by_window(rep, rep.kernels, i), by_window(rep, rep.copies, i)
        assert s["launches"][i] == len(k) == 180
        assert s["copy_time_us"][i] == pytest.approx(c["duration_us"].sum())
        starts = np.concatenate([k["start_us"], c["start_us"]])
        ends = np.concatenate([k["start_us"] + k["duration_us"], c["start_us"] + c["duration_us"]])
        assert s["busy_us"][i] == pytest.approx(union_length(starts, ends))
        assert s["active_us"][i] == pytest.approx(ends.max() - starts.min())
    # Every kernel and copy belongs to one repeat: the repeats add up to the recording.
    assert s["gpu_time_us"].sum() == pytest.approx(rep.kernels["duration_us"].sum())
    assert s["copy_time_us"].sum() == pytest.approx(rep.copies["duration_us"].sum())


def test_item_in_a_loop_every_verdict_from_the_spread():
    before, after = pair("item_in_loop")
    c = ks.compare(before, after)
    sb, sa = repeat_series(before), repeat_series(after)
    for m in ("gpu_time_us", "copy_time_us", "busy_us", "active_us", "wall_us"):
        row = c.metric(m)
        assert (row["before"], row["after"]) == (pytest.approx(sb[m].mean()), pytest.approx(sa[m].mean()))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(interval(sb[m], sa[m]))
    # Keeping the sum on the GPU: 857 us less wall time per run, its interval wide but below 0.
    wall = c.metric("wall_us")
    assert wall["verdict"] == "real" and wall["ci_high"] < 0 < wall["ci_high"] - wall["ci_low"]
    assert c.metric("launches")["verdict"] == "real"        # 60 adds kept on the GPU: +61 launches, no spread
    k = c.kernels.set_index("short_name")
    per_b, per_a = before.meta["repeats"]["per_kernel_total_us"], after.meta["repeats"]["per_kernel_total_us"]
    for name, r in k.iterrows():
        b = np.sum([per_b[x] for x in r["names_before"]], axis=0) if r["names_before"] else np.zeros(5)
        a = np.sum([per_a[x] for x in r["names_after"]], axis=0) if r["names_after"] else np.zeros(5)
        assert (r["ci_low_us"], r["ci_high_us"]) == pytest.approx(interval(b, a)), name
    # All three verdicts, as the repeats measured them: a 0.15% slower GEMM is real (its spread is
    # smaller still); the split-K GEMM's interval holds 0 within the noise margin.
    assert k.loc["reduce sum", ["verdict", "status"]].tolist() == ["real", "faster"]
    gemm = k.loc["cuBLAS GEMM 64x64 (sm80, ffma) [no split-K]"]
    assert gemm["status"] == "slower" and gemm["ci_low_us"] > 0 and gemm["change_us"] < 0.002 * gemm["total_before_us"]
    split = k.loc["cuBLAS GEMM 64x64 (sm80, ffma) [split-K]"]
    assert split["ci_low_us"] < 0 < split["ci_high_us"] <= NOISE_MARGIN * split["total_before_us"]
    assert (split["verdict"], split["status"]) == ("noise", "within noise")
    assert k.loc["elementwise add (vectorized x4)", "status"] == "new"
    text = repr(c)
    assert "(per run: 5 and 5 repeats)" in text and "±95%" in text and "1 slower, 1 faster, 1 within noise, 2 new" in text


def test_a_wide_interval_is_inconclusive_even_with_repeats():
    # A chain of 12 elementwise ops, then torch.compile's one fused kernel: the GPU time fell
    # 92% (real), but each side's first repeat ran long, so the wall time's interval holds 0.
    before, after = pair("elementwise_chain")
    c = ks.compare(before, after)
    assert c.metric("gpu_time_us")["verdict"] == "real" and c.metric("gpu_time_us")["ratio"] < 0.1
    wall = c.metric("wall_us")
    assert wall["ci_low"] < 0 < wall["ci_high"] and wall["verdict"] == "inconclusive"
    assert wall["ci_high"] > max(NOISE_MARGIN * wall["before"], NOISE_FLOOR_US)
    ev = before.meta["repeats"]["cuda_event_us"]
    assert ev[0] > 1.5 * np.median(ev[1:])             # the first repeat's wall time
    assert set(c.kernels["status"]) == {"new", "gone"} and set(c.kernels["verdict"]) == {"real"}


def test_a_kernel_gone_is_real_to_the_microsecond():
    # The vocabulary 50257 -> 50304: CUTLASS's sm75 fallback GEMM replaced by cuBLAS's sm90 one.
    before, after = pair("lm_head_50257")
    c = ks.compare(before, after)
    gone = c.gone.iloc[0]
    per = before.meta["repeats"]["per_kernel_total_us"][gone["name"]]
    assert (gone["ci_low_us"], gone["ci_high_us"]) == pytest.approx(interval(per, np.zeros(5)))
    assert gone["verdict"] == "real" and gone["ci_high_us"] - gone["ci_low_us"] < 5.0
    assert c.metric("launches")["verdict"] == "noise"        # one GEMM each side, every repeat
