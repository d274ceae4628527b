"""ks.compare on real H200 recordings: the launch-bound loop against its CUDA-graph replay, and
more pairs. Expected numbers are written out from the raw trace JSON."""
import dataclasses
import gzip
import json
import os
import re

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.diff import NO_REPEATS_NOTE
from kernelscope.analysis.noise import NOISE_FLOOR_US, NOISE_MARGIN, t_quantile
from kernelscope.capture.repeats import per_repeat_totals
from kernelscope.render.compare import comparison_html
from kernelscope.reports.comparison import Comparison
from kernelscope.reports.report import Report
from tests.conftest import CHROMIUM_ARGS, DATA


def raw_kernels(name):
    with gzip.open(DATA / f"{name}.pt.trace.json.gz", "rt") as f:
        ev = json.load(f)["traceEvents"]
    return sorted((e["ts"], e["dur"], e["name"]) for e in ev if e.get("cat") == "kernel")


def totals_by_name(kernels):
    out = {}
    for _, d, n in kernels:
        out[n] = out.get(n, 0.0) + d
    return out


def with_two_repeats(name):
    """The fixture's two recorded steps as two repeats, the way ``--repeat 2`` stores them."""
    rep = ks.load(DATA / f"{name}.pt.trace.json.gz")
    rep.meta["repeats"] = {"n": 2, "per_kernel_total_us": per_repeat_totals(rep.kernels, rep.ops, 2)}
    return rep


@pytest.fixture(scope="module")
def eager_vs_graphs():
    return ks.compare(DATA / "launch_bound.pt.trace.json.gz", DATA / "graphs.pt.trace.json.gz",
                      labels=("eager", "graphs"))


def test_launch_bound_vs_cuda_graphs(eager_vs_graphs):
    c = eager_vs_graphs
    assert isinstance(c, Comparison) and c.labels == ("eager", "graphs")
    eager, graphs = totals_by_name(raw_kernels("launch_bound")), totals_by_name(raw_kernels("graphs"))
    assert set(eager) == set(graphs) and len(eager) == 2  # the same two ATen kernels
    k = c.kernels.set_index("name")
    for name in eager:
        r = k.loc[name]
        assert r["match"] == "name"
        assert (r["launches_before"], r["launches_after"]) == (1000, 1000)
        assert r["total_before_us"] == pytest.approx(eager[name], abs=1e-6)
        assert r["total_after_us"] == pytest.approx(graphs[name], abs=1e-6)
        assert r["change_us"] == pytest.approx(graphs[name] - eager[name], abs=1e-6)
        assert r["ratio"] == pytest.approx(graphs[name] / eager[name])
        # One run each: no interval, and no verdict but "inconclusive".
        assert r["verdict"] == r["status"] == "inconclusive"
        assert np.isnan(r["ci_low_us"]) and np.isnan(r["ci_high_us"])
    # Sorted by absolute change.
    assert list(c.kernels["change_us"].abs()) == sorted(c.kernels["change_us"].abs(), reverse=True)
    gpu = c.metric("gpu_time_us")
    assert gpu["before"] == pytest.approx(sum(eager.values()), abs=1e-6)
    assert gpu["after"] == pytest.approx(sum(graphs.values()), abs=1e-6)
    # Replayed kernels ran longer on the GPU (median 1.09 vs 0.90 us) ...
    assert gpu["ratio"] == pytest.approx(2200.477 / 1837.656, rel=1e-6)
    # ... but the replay removed the host's pacing: the active window shrank ~11x, wall ~5x.
    b, a = ks.load(DATA / "launch_bound.pt.trace.json.gz"), ks.load(DATA / "graphs.pt.trace.json.gz")
    act = c.metric("active_us")
    assert act["before"] == pytest.approx(b.timeline.window["active_us"])
    assert act["after"] == pytest.approx(a.timeline.window["active_us"])
    assert act["ratio"] == pytest.approx(2373.0937 / 25772.7608, rel=1e-6)
    wall = c.metric("wall_us")
    assert (wall["before"], wall["after"]) == (b.meta["span_us"], a.meta["span_us"])
    assert wall["change"] == pytest.approx(a.meta["span_us"] - b.meta["span_us"])
    assert c.metric("launches")["change"] == 0
    assert c.noise_note == NO_REPEATS_NOTE
    be = c.backends.set_index("backend")
    assert be.loc["ATen", "total_before_us"] == pytest.approx(sum(eager.values()), abs=1e-6)
    assert be.loc["ATen", "total_after_us"] == pytest.approx(sum(graphs.values()), abs=1e-6)


def test_text_view(eager_vs_graphs):
    text = repr(eager_vs_graphs)
    assert text.startswith("kernelscope comparison: eager -> graphs")
    assert "cannot tell a change from noise" in text and "--repeat N" in text
    assert re.search(r"wall time\s+28\.49 ms ->\s+5\.50 ms\s+-22\.99 ms\s+x0\.19\n", text)
    # x1.20 with one run each side: the direction is measured, not proven.
    assert re.search(r"elementwise add \(vectorized x4\).*1000 → 1000.*\+182\.0 us\s+x1\.20\s+inconclusive", text)
    # No interval without repeats ("±0.0 us" is the copy time's zero change).
    assert not re.search(r"±(?!0\.0 us)", text.split("what the first run said")[0])


def welch_by_hand(before, after):
    """Welch's interval written out: (change, half-width, df)."""
    b, a = np.asarray(before, float), np.asarray(after, float)
    vb, va = b.var(ddof=1) / len(b), a.var(ddof=1) / len(a)
    df = (vb + va) ** 2 / (vb ** 2 / (len(b) - 1) + va ** 2 / (len(a) - 1))
    return a.mean() - b.mean(), t_quantile(0.975, df) * np.sqrt(vb + va), df


def test_repeats_give_each_kernel_an_interval_and_a_verdict():
    eager, graphs = with_two_repeats("launch_bound"), with_two_repeats("graphs")
    c = ks.compare(eager, graphs)
    assert c.repeats == (2, 2) and "95% confidence intervals" in c.noise_note and "Welch" in c.noise_note
    # Written out: the two steps of each recording, 1000 kernels apiece.
    steps = {}
    for name in ("launch_bound", "graphs"):
        ks_ = raw_kernels(name)
        steps[name] = [totals_by_name(ks_[:1000]), totals_by_name(ks_[1000:])]
    k = c.kernels.set_index("name")
    for kname in steps["graphs"][0]:
        before = [s[kname] for s in steps["launch_bound"]]
        after = [s[kname] for s in steps["graphs"]]
        r = k.loc[kname]
        assert r["launches_before"] == r["launches_after"] == 500  # per run
        assert r["total_before_us"] == pytest.approx(sum(before) / 2, abs=1e-6)
        assert r["total_after_us"] == pytest.approx(sum(after) / 2, abs=1e-6)
        change, half, df = welch_by_hand(before, after)
        assert r["ci_low_us"] == pytest.approx(change - half, abs=1e-6)
        assert r["ci_high_us"] == pytest.approx(change + half, abs=1e-6)
        # A replayed graph's kernels ran ~20% longer on the GPU: the interval is well above 0.
        assert r["ci_low_us"] > 0.15 * r["total_before_us"]
        assert r["verdict"] == "real" and r["status"] == "slower"
    gpu = c.metric("gpu_time_us")
    assert gpu["before"] == pytest.approx(1837.656 / 2, abs=1e-6)
    assert gpu["verdict"] == "real" and gpu["ci_low"] > 0
    # No repeat windows in these recordings: the other totals cannot be split by repeat.
    assert c.metric("wall_us")["verdict"] == "inconclusive" and "repeat windows" in c.metric("wall_us")["why"]
    text = repr(c)
    assert "±" in text and "cannot tell a change from noise" not in text
    assert re.search(r"GPU kernel time .* ±\d+\.\d us\s+x1\.20\s+real", text)


def test_a_run_against_itself_is_never_a_real_change():
    rep = with_two_repeats("mlp_train")
    c = ks.compare(rep, rep)
    assert (c.kernels["change_us"] == 0).all()
    assert set(c.kernels["verdict"]) <= {"noise", "inconclusive"} and "noise" in set(c.kernels["verdict"])
    # Every interval is centred on 0; it is "noise" exactly where it lies within the margin.
    k = c.kernels
    assert np.allclose(k["ci_low_us"], -k["ci_high_us"])
    margin = np.maximum(NOISE_MARGIN * k["total_before_us"], NOISE_FLOOR_US)
    assert ((k["ci_high_us"] <= margin) == (k["verdict"] == "noise")).all()
    assert set(k.loc[k["verdict"] == "noise", "status"]) == {"within noise"}
    assert set(k.loc[k["verdict"] == "inconclusive", "status"]) <= {"inconclusive"}
    # Without repeats the same comparison calls nothing either: every change is exactly zero.
    plain = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    assert set(ks.compare(plain, plain).kernels["status"]) == {"same"}


def test_repeats_on_one_side_only_are_inconclusive():
    c = ks.compare(with_two_repeats("launch_bound"), DATA / "graphs.pt.trace.json.gz", labels=("eager", "graphs"))
    assert c.repeats == (2, 1)
    assert set(c.kernels["verdict"]) == {"inconclusive"} and c.kernels["ci_low_us"].isna().all()
    assert set(c.overall["verdict"]) == {"inconclusive"}
    assert c.notes[-1].startswith("Only eager has repeats") and "--repeat N" in c.notes[-1]
    assert "only one side has repeats" in c.metric("gpu_time_us")["why"]


def test_removed_kernels_are_gone():
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    top = rep.summary().iloc[0]["name"]
    kept = rep.trace.kernels[rep.trace.kernels["name"] != top].reset_index(drop=True)
    after = Report(dataclasses.replace(rep.trace, kernels=kept))
    c = ks.compare(rep, after)
    gone = c.gone
    assert gone["name"].tolist() == [top]
    removed = totals_by_name(raw_kernels("mlp_train"))[top]
    assert gone.iloc[0]["total_before_us"] == pytest.approx(removed, abs=1e-6)
    assert gone.iloc[0]["total_after_us"] == 0 and gone.iloc[0]["launches_after"] == 0
    assert len(c.new) == 0
    assert (c.kernels.loc[c.kernels["status"] != "gone", "change_us"] == 0).all()
    assert c.metric("gpu_time_us")["change"] == pytest.approx(-removed, abs=1e-6)
    # And the other way round it is new.
    back = ks.compare(after, rep)
    assert back.new["name"].tolist() == [top] and "new" in repr(back)


def test_match_by_short_name_and_backend():
    c = ks.compare(DATA / "mlp_train.pt.trace.json.gz", DATA / "attention.pt.trace.json.gz")
    m = c.kernels[c.kernels["match"] == "short_name+backend"]
    assert len(m) == 1
    r = m.iloc[0]
    assert r["short_name"] == "cuBLAS GEMM 128x256 (sm90)" and r["backend"] == "cuBLAS"
    mlp, att = totals_by_name(raw_kernels("mlp_train")), totals_by_name(raw_kernels("attention"))
    assert r["names_before"] == ["nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN"]
    assert r["names_after"] == ["nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNN"]
    assert r["total_before_us"] == pytest.approx(mlp[r["names_before"][0]], abs=1e-6)
    assert r["total_after_us"] == pytest.approx(att[r["names_after"][0]], abs=1e-6)
    # Everything else: exact names, or new/gone; totals add up on both sides.
    assert c.kernels["total_before_us"].sum() == pytest.approx(sum(mlp.values()), abs=1e-6)
    assert c.kernels["total_after_us"].sum() == pytest.approx(sum(att.values()), abs=1e-6)
    assert set(c.kernels["status"]) >= {"new", "gone", "inconclusive"}
    be = c.backends.set_index("backend")
    assert be.loc["cuDNN", "total_before_us"] == 0 and be.loc["cuDNN", "total_after_us"] > 500
    json.dumps(c.to_dict())


def test_html_escapes_hostile_names():
    hostile = ks.load(os.path.join(os.path.dirname(os.path.dirname(__file__)), "corpus", "script_kernel_names.json"))
    names = hostile.kernels["name"].tolist()
    assert any("<script" in n for n in names)
    c = ks.compare(DATA / "triton_kernels.pt.trace.json.gz", hostile, labels=("<b>x</b>", "after"))
    html = c._repr_html_()
    assert "<script" not in html.lower() and "<img" not in html.lower() and "<b>x</b>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert "&lt;script" in html.lower()


def test_rejects_what_it_cannot_compare():
    with pytest.raises(TypeError, match="Reports or trace/report paths"):
        ks.compare(42, DATA / "graphs.pt.trace.json.gz")
    with pytest.raises(ks.TraceError):
        ks.compare(DATA / "missing.json", DATA / "graphs.pt.trace.json.gz")


@pytest.mark.browser
def test_diverging_bars_in_a_real_browser(tmp_path, chromium):
    """Faster kernels' bars grow left of the centre line, slower ones right, in chromium."""
    from playwright.sync_api import sync_playwright

    c = ks.compare(DATA / "mlp_train.pt.trace.json.gz", DATA / "attention.pt.trace.json.gz")
    page_file = tmp_path / "compare.html"
    page_file.write_text(f"<!doctype html><meta charset='utf-8'><body>{comparison_html(c)}</body>")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        pg = b.new_page()
        pg.goto(page_file.as_uri())
        rows = pg.eval_on_selector_all(
            ".kernelscope-compare table.kernelscope-kernels tbody tr",
            """rows => rows.map(r => {
                const cells = r.querySelectorAll('td');
                const box = cells[cells.length - 1].firstElementChild;
                if (!box) return null;
                const [line, bar] = box.children;
                const l = line.getBoundingClientRect(), g = bar.getBoundingClientRect();
                return {change: cells[5].textContent, centre: l.left, left: g.left, right: g.right,
                        width: g.width, color: getComputedStyle(bar).backgroundColor,
                        status: cells[cells.length - 2].textContent, opacity: getComputedStyle(bar).opacity};
            })""")
        b.close()
    rows = [r for r in rows if r]
    assert len(rows) == min(len(c.kernels), 50)
    widths = [r["width"] for r in rows]
    assert widths[0] == pytest.approx(80, abs=1)  # the largest change spans half the 160 px box
    assert widths == sorted(widths, reverse=True)
    # One run each side: a matched kernel's change is inconclusive, its bar faint; new and gone are not.
    assert {r["status"] for r in rows} == {"inconclusive", "new", "gone"}
    for r in rows:
        assert float(r["opacity"]) == (pytest.approx(0.4) if r["status"] == "inconclusive" else 1.0)
        if r["change"].startswith("+"):
            assert r["left"] >= r["centre"] - 1 and r["color"] == "rgb(214, 39, 40)"
        elif r["change"].startswith("-"):
            assert r["right"] <= r["centre"] + 1 and r["color"] == "rgb(44, 160, 44)"
