"""The interactive comparison's payload (render/compare_view.py) on real H200 recordings: named
sides, every kernel row with "–" where it did not run, the "≈" match explained, and a warning
when two runs share few kernels."""
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.diff import MATCHES, SHARED_MIN_SHARE, STATUSES
from kernelscope.view.bundle import MIME_TYPE
from kernelscope.view.codec import read_payload
from kernelscope.view.compare import compare_view_model
from tests.conftest import DATA


@pytest.fixture(scope="module")
def mlp_vs_attention():
    return ks.compare(DATA / "mlp_train.pt.trace.json.gz", DATA / "attention.pt.trace.json.gz")


def test_sides_are_named_by_the_reports_titles(mlp_vs_attention):
    c = mlp_vs_attention
    assert c.labels == ("mlp_train.pt.trace.json.gz", "attention.pt.trace.json.gz")
    header, buf = compare_view_model(c)
    assert header["kind"] == "compare" and buf == b""
    assert header["labels"] == list(c.labels)
    assert header["title"] == "mlp_train.pt.trace.json.gz → attention.pt.trace.json.gz"
    # Two captures named by -o (their titles) are told apart the same way.
    a, b = ks.load(DATA / "launch_bound.pt.trace.json.gz"), ks.load(DATA / "graphs.pt.trace.json.gz")
    a.meta["title"], b.meta["title"] = "eager · In [3]", "graphs · In [4]"
    assert ks.compare(a, b).labels == ("eager · In [3]", "graphs · In [4]")
    # The same title on both sides says nothing: before / after.
    assert ks.compare(a, a).labels == ("before", "after")
    # Labels given win.
    assert ks.compare(a, b, labels=("x", "y")).labels == ("x", "y")


def test_every_row_with_dashes_where_a_kernel_did_not_run(mlp_vs_attention):
    c = mlp_vs_attention
    header, _ = compare_view_model(c)
    rows = header["kernels"]
    assert len(rows) == len(c.kernels) == 29          # no cap (the static view stopped at 50)
    new = [r for r in rows if r["status"] == "new"]
    gone = [r for r in rows if r["status"] == "gone"]
    assert len(new) == 4 and len(gone) == 22   # two kernels that shared a readable name are two rows (issue 28)
    for r in new:
        assert r["before_text"] == "–" and r["total_before_us"] is None and r["ratio_text"] == "–"
        assert r["launches_text"].startswith("– → ") and r["after_text"] != "–"
    for r in gone:
        assert r["after_text"] == "–" and r["total_after_us"] is None
        assert r["launches_text"].endswith(" → –")
    flash = next(r for r in rows if r["short_name"].startswith("cuDNN flash attention"))
    assert flash["status"] == "new" and flash["after_text"] == "535.9 us" and flash["change_text"] == "+535.9 us"
    same = next(r for r in rows if r["status"] == "inconclusive")
    assert "–" not in (same["before_text"], same["after_text"], same["ratio_text"])
    assert all("0.0 us" not in (r["before_text"], r["after_text"]) for r in new + gone)


def test_the_approximate_match_is_explained(mlp_vs_attention):
    header, _ = compare_view_model(mlp_vs_attention)
    (approx,) = [r for r in header["kernels"] if r["match"] == "short_name+backend"]
    assert approx["short_name"] == "cuBLAS GEMM 128x256 (sm90)"
    assert set(approx["names"]) == {"nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
                                    "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNN"}
    assert header["matches"] == MATCHES
    assert header["matches"]["short_name+backend"].startswith("no kernel of the same name: matched by")
    assert header["statuses"] == STATUSES and set(r["status"] for r in header["kernels"]) <= set(STATUSES)
    html = mlp_vs_attention._repr_html_()
    assert "[≈]" in html and "matched by readable name and backend" in html


def test_few_shared_kernels_warn(mlp_vs_attention):
    c = mlp_vs_attention
    assert c.shared["kernels"] == 3 and c.shared["of"] == 29
    assert c.shared["time_share"] < SHARED_MIN_SHARE and c.shared["few"]
    assert c.notes[0].startswith("The two runs share 3 of 29 kernels (26% of their kernel time)")
    header, _ = compare_view_model(c)
    assert header["warning"] == c.notes[0]
    same = ks.compare(DATA / "launch_bound.pt.trace.json.gz", DATA / "graphs.pt.trace.json.gz")
    assert same.shared == {"kernels": 2, "of": 2, "time_share": 1.0, "few": False}
    assert compare_view_model(same)[0]["warning"] is None


def test_comparison_displays_as_the_interactive_view(mlp_vs_attention):
    bundle = mlp_vs_attention._repr_mimebundle_()
    header, _ = read_payload(bundle[MIME_TYPE])
    assert header["kind"] == "compare" and len(header["kernels"]) == 29
    assert "text/html" in bundle and bundle["text/plain"].startswith("kernelscope comparison")
    json.dumps(header, allow_nan=False)
    # Static HTML: every row, names left-aligned, number cells that do not wrap.
    html = bundle["text/html"]
    assert html.count("<tr>") >= 29 + 6
    assert "white-space:nowrap" in html and "text-align:left" in html


def test_overall_rows_are_formatted(mlp_vs_attention):
    header, _ = compare_view_model(mlp_vs_attention)
    rows = {r["metric"]: r for r in header["overall"]}
    assert rows["launches"]["before_text"] == "74" and rows["launches"]["after_text"] == "14"
    assert rows["launches"]["change_text"] == "-60" and rows["wall_us"]["before_text"] == "10.81 ms"
    assert rows["launches"]["label"] == "kernel launches"
