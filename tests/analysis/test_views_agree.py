"""Numbers that agree between views (issue 28), on real H200 recordings: per-kernel median /
min / max / standard deviation in rep.summary() and the text and HTML; a backend's share of
kernel time the same in Backends and in the kernel table's groups; a change within a few
percent not called slower; launch counts with thousands separators and durations in units
chosen by size everywhere."""
import re

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.diff import NO_REPEATS_NOTE
from kernelscope.units import fmt_us
from kernelscope.view.report import view_model
from tests.conftest import DATA


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz")


def test_summary_has_nsys_statistics(mlp):
    s = mlp.summary()
    assert {"median_us", "min_us", "max_us", "std_us"} <= set(s.columns)
    k = mlp.kernels
    for r in s.head(8).itertuples():
        d = k.loc[k["name"] == r.name, "duration_us"].to_numpy(float)
        assert r.median_us == pytest.approx(np.median(d)) and r.min_us == d.min() and r.max_us == d.max()
        assert r.std_us == pytest.approx(np.std(d, ddof=1) if len(d) > 1 else 0.0)
    text = repr(mlp)
    assert "median" in text and "std dev" in text
    top = s.iloc[0]
    row = next(line for line in text.splitlines() if line.strip().startswith(top.short_name))
    for v in (top.median_us, top.min_us, top.max_us, top.std_us):
        assert fmt_us(v) in row
    html = mlp._repr_html_()
    assert ">median<" in html and ">std dev<" in html and f">{fmt_us(top.std_us)}<" in html


def test_backend_share_is_of_kernel_time_as_the_table_groups(mlp):
    b = mlp.backends
    gpu = b[b["gpu_time_us"].notna()]
    k = mlp.kernels
    for r in gpu.itertuples():
        if r.backend in ("memcpy", "memset"):
            assert np.isnan(r.kernel_share)
            continue
        # the kernel table's "group by backend" header: the backend's kernel time of all kernel time
        mine = k.loc[k["backend"] == r.backend, "duration_us"].sum() / k["duration_us"].sum()
        assert r.kernel_share == pytest.approx(mine)
    aten = gpu[gpu["backend"] == "ATen"].iloc[0]
    assert aten.share < aten.kernel_share      # copies and memsets are in share's denominator only
    hd = view_model(mlp)[0]
    assert {r["backend"]: r["kernel_share"] for r in hd["backends"] if r["device"] != "CPU"}["ATen"] == \
        pytest.approx(aten.kernel_share)
    assert "share of kernel time" in mlp._repr_html_()


def test_a_change_without_repeats_is_never_called():
    cold = ks.load(DATA / "trust" / "cold_first_call.pt.trace.json.gz", progress=False)
    warm = ks.load(DATA / "trust" / "cold_warm.pt.trace.json.gz", progress=False)
    c = ks.compare(cold, warm)
    k = c.kernels.set_index("short_name")
    gemm = k.loc["cuBLAS GEMM 128x64 (sm80, ffma)"]
    assert 1.0 < gemm["ratio"] < 1.01 and gemm["status"] == "inconclusive"    # before issue 41: "within noise" (a fixed 5%)
    # One run each side: no row is slower, faster or within noise, however large its ratio.
    matched = c.kernels[c.kernels["match"].isin(["name", "short_name+backend"])]
    assert len(matched) and set(matched["status"]) <= {"inconclusive", "same"}
    assert set(c.kernels["verdict"]) == {"inconclusive"}
    assert c.noise_note == NO_REPEATS_NOTE and NO_REPEATS_NOTE in repr(c)


def test_one_number_format():
    rep = ks.load(DATA / "launch_bound.pt.trace.json.gz")
    assert len(rep.kernels) == 2000
    text = repr(rep)
    s = rep.summary()
    big = s[s["launches"] >= 1000].iloc[0]
    row = next(line for line in text.splitlines() if line.strip().startswith(big.short_name))
    assert f"{big.launches:,}" in row and f" {big.launches} " not in row      # "1,000", as the view shows it
    html = rep._repr_html_()
    assert f">{big.launches:,}<" in html
    # no duration printed in microseconds past a millisecond ("6718992.8 us")
    for out in (text, html):
        assert not re.search(r"\d{4,}\.\d us", out)
