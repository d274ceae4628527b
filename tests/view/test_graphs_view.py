"""The CUDA graphs block of every output (panels/graphs.py): the payload's `graphs` and the
replayed launches' capture columns, the text, Markdown and static HTML sections, on real H200
recordings (tests/data/graphs), and recorded text kept as text."""
from __future__ import annotations

import pathlib

import pytest

import kernelscope as ks
from kernelscope.panels.graphs import GRAPH_COLUMNS, KERNEL_FIELDS
from kernelscope.render.html import report_html
from kernelscope.render.markdown import report_markdown
from kernelscope.render.text import report_text
from kernelscope.view.codec import decode_buffer
from kernelscope.view.report import view_model

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
GRAPHS = DATA / "graphs"
HOSTILE = "<script>alert(1)</script>|*x*\x1b[2J"


@pytest.fixture(scope="module")
def manual():
    return ks.load(GRAPHS / "manual_in_region.pt.trace.json.gz", progress=False)


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)


def test_payload_holds_each_graph_and_the_capture_of_each_replayed_launch(manual):
    header, buf = view_model(manual)
    g = header["graphs"]
    assert [c["label"] for c in g["columns"]] == [lab for _, lab, _ in GRAPH_COLUMNS]
    assert [f["key"] for f in g["kernel_fields"]] == [k for k, _, _ in KERNEL_FIELDS]
    (row,) = g["rows"]
    want = manual.graphs.iloc[0]
    assert row["graph"] == row["kernels"] == want["graph"] == "capture 1"
    assert row["replays"] == want["replays"] == 3 and row["kernels_per_replay"] == want["kernels_per_replay"] == 9
    assert row["text"]["attributed"] == "100%" and row["text"]["replay_us"] == ks.units.fmt_us(want["replay_us"])
    cols = decode_buffer(header, buf)["kernels"]
    k = manual.kernels.reset_index(drop=True)
    for key, _, _ in KERNEL_FIELDS:
        got = list(cols[key])
        if key in ("graph_replay", "graph_node"):
            assert got == k[key].fillna(-1).astype(int).tolist()       # -1: not known
        else:
            assert got == [v if isinstance(v, str) else None for v in k[key]]
    # Strings travel once, as a dictionary: 27 launches, one basis text.
    spec = {c["name"]: c for c in header["tables"]["kernels"]["columns"]}
    assert len(spec["capture_basis"]["strings"]) == 1 and spec["graph_replay"]["type"] == "i32"


def test_unattributed_graph_says_why():
    rep = ks.load(GRAPHS / "no_watch.ks.json.gz", progress=False)
    header, buf = view_model(rep)
    (row,) = header["graphs"]["rows"]
    assert row["kernels"] is None and row["text"]["attributed"] == "0.0%"
    assert "ks.watch_graphs()" in row["unmatched"]
    cols = decode_buffer(header, buf)["kernels"]
    assert set(cols["graph_unmatched"]) == {row["unmatched"]} and set(cols["graph"]) == {None}
    assert "unmatched because: " + row["unmatched"] in report_text(rep)


def test_no_graphs_no_block(mlp):
    header, _ = view_model(mlp)
    assert header["graphs"] is None
    assert not {k for k, _, _ in KERNEL_FIELDS} & {c["name"] for c in header["tables"]["kernels"]["columns"]}
    assert "CUDA graphs" not in report_text(mlp) and "CUDA graphs" not in report_markdown(mlp)
    assert "ks-graphs" not in report_html(mlp)


def test_text_markdown_and_html_sections(manual):
    text, md, html = report_text(manual), report_markdown(manual), report_html(manual)
    assert "CUDA graphs (rep.graphs):" in text
    line = next(x for x in text.splitlines() if x.startswith("  capture 1: "))
    assert "replays 3 · kernels / replay 9" in line and "attributed 100%" in line
    assert "## CUDA graphs (`rep.graphs`)" in md
    assert "| capture 1 | in the recording | 3 | 9 |" in md
    assert "<div class='ks-graphs'" in html and ">capture 1</td>" in html


def test_recorded_text_is_escaped():
    rep = ks.load(GRAPHS / "manual_in_region.pt.trace.json.gz", progress=False)
    k = rep.kernels
    rep.kernels["op"] = k["op"].where(~(k["graph"].notna() & (k["op"] == "aten::addmm")), HOSTILE)
    header, _ = view_model(rep)
    assert HOSTILE in header["graphs"]["rows"][0]["ops"]          # the browser puts it in as text
    html = report_html(rep)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    md = report_markdown(rep)
    assert "<script>" not in md and "\\<script\\>" in md and "\\|\\*x\\*" in md
    assert "\x1b" not in report_text(rep) and "\x1b" not in md
