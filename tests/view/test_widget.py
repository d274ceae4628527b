"""The view model, the anywidget's traitlets and the report's display bundle, on the real
H200 recordings (no browser: tests/ui has those)."""
import dataclasses
import json
import math
import pathlib

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.render.html import report_html
from kernelscope.trace.model import Trace
from kernelscope.view.bundle import MIME_TYPE, mime_payload
from kernelscope.view.codec import decode_buffer, decode_payload, pack, read_payload, unpack
from kernelscope.view.report import view_model
from kernelscope.view.widget import ReportWidget

DATA = pathlib.Path(__file__).parent.parent / "data"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
HOSTILE = "<script>alert('x')</script></textarea>\"'&<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz")


@pytest.fixture(scope="module")
def attention():
    return ks.load(DATA / "attention.pt.trace.json.gz")


def embedded_view(esm: str) -> str:
    """The report view module inside the anywidget loader (js/src/widget_loader.js: gzip, base64)."""
    import base64
    import gzip
    import re
    (blob,) = re.findall(r'"(H4sI[A-Za-z0-9+/=]+)"', esm)
    return gzip.decompress(base64.b64decode(blob)).decode("utf-8")


def hostile_report(rep):
    k = rep.trace.kernels.copy()
    k["name"] = [HOSTILE + n for n in k["name"]]
    k["op"] = HOSTILE
    return ks.Report(dataclasses.replace(rep.trace, kernels=k, meta={**rep.meta, "source": f"/tmp/{HOSTILE}.json"}))


def test_view_model_columns_match_the_report(mlp):
    header, buf = view_model(mlp)
    cols = decode_buffer(header, buf)
    k = cols["kernels"]
    assert header["stats"]["launches"] == len(mlp.kernels) == 74
    assert header["stats"]["kernels"] == mlp.kernels["name"].nunique() == 25
    assert header["tables"]["kernels"]["rows"] == 74
    assert list(k["name"]) == mlp.kernels["name"].tolist()
    assert list(k["backend"]) == mlp.kernels["backend"].tolist()
    # Times travel as whole nanoseconds (Kineto's grid; render.view._encode_time): within half a ns.
    np.testing.assert_allclose(k["start_us"], mlp.kernels["start_us"].to_numpy(), rtol=0, atol=5.0001e-4)
    assert math.isclose(float(k["duration_us"].sum()), mlp.gpu_time_us)
    np.testing.assert_array_equal(k["registers_per_thread"], mlp.kernels["registers_per_thread"].astype(int))
    np.testing.assert_allclose(k["theoretical_occupancy"], mlp.kernels["theoretical_occupancy"], rtol=1e-6)
    # Copies and the analysis' idle gaps travel as binary tables too.
    assert header["tables"]["copies"]["rows"] == len(mlp.copies) == 6
    assert list(cols["copies"]["bytes"]) == mlp.copies["bytes"].astype(float).tolist()
    assert header["tables"]["gaps"]["rows"] == len(mlp.gaps)
    assert list(cols["gaps"]["cause"]) == mlp.gaps["cause"].tolist()
    # Short names line up with the dictionary of the name column.
    names = header["tables"]["kernels"]["columns"][0]["strings"]
    short = dict(zip(mlp.kernels["name"], mlp.kernels["short_name"]))
    assert header["names"] == [short[n] for n in names]
    # Every column is 8-byte aligned so the browser maps it without a copy.
    assert all(c["offset"] % 8 == 0 for t in header["tables"].values() for c in t["columns"])
    assert header["nbytes"] == len(buf)


def test_a_report_over_the_launch_budget_sends_its_first_launches(mlp, monkeypatch):
    """Past VIEW_LAUNCHES the browser gets the launches (and host spans, gaps) of the trace's
    first part only, and a note saying so; the headline figures stay the whole report's.
    (The budget is lowered so that a real recording passes it.)"""
    from kernelscope.view import report as view
    full, full_buf = view_model(mlp)
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 50)
    header, buf = view_model(mlp)
    cols = decode_buffer(header, buf)
    starts = np.sort(np.concatenate([mlp.kernels["start_us"].to_numpy(), mlp.copies["start_us"].to_numpy()]))
    until = starts[50]
    w = header["window"]
    assert w["until_us"] == until and w["of_launches"] == 74 and w["of_copies"] == len(mlp.copies)
    shown = mlp.kernels[mlp.kernels["start_us"] < until]
    assert w["launches"] == header["tables"]["kernels"]["rows"] == len(shown) < 74
    assert list(cols["kernels"]["name"]) == shown["name"].tolist()
    assert w["launches"] + w["copies"] == 50
    for t in ("copies", "gaps", "host"):
        assert (np.asarray(cols[t]["start_us"]) < until).all()
    assert len(cols["host"]["start_us"]) == w["host_spans"] < w["of_host_spans"] == full["tables"]["host"]["rows"]
    assert header["stats"] == full["stats"] and header["stats"]["launches"] == 74
    assert header["findings"] == full["findings"] and header["ops"] == full["ops"]
    assert any(f"{w['launches']:,} of 74 kernel launches" in n for n in header["notes"])
    assert full["window"] is None and not any("first" in n for n in full["notes"])
    # Too many host spans open a window too, where they pass their own budget.
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 10**9)
    monkeypatch.setattr(view, "VIEW_HOST_SPANS", 100)
    h2, b2 = view_model(mlp)
    # (the payload's times are on Kineto's nanosecond grid, the window's as recorded)
    host_starts = np.sort(decode_buffer(full, full_buf)["host"]["start_us"])
    assert math.isclose(h2["window"]["until_us"], host_starts[100], abs_tol=5e-4)
    assert h2["window"]["host_spans"] <= 100
    monkeypatch.setattr(view, "VIEW_HOST_SPANS", 400_000)
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 50)
    # The packed payload shrinks with the window, and still decodes.
    assert len(pack(header, buf)) < len(pack(full, full_buf))
    assert read_payload(mime_payload(mlp, (header, buf)))[0]["window"] == w


def test_view_model_headline_numbers(mlp):
    header, _ = view_model(mlp)
    s = header["stats"]
    busy = mlp.timeline.device()
    # GPU busy over the wall time (issue 28); the active window's share beside it.
    assert s["gpu_busy"] == pytest.approx(busy["wall_busy_share"]) == pytest.approx(0.0951, abs=1e-3)
    assert s["gpu_busy_of_window"] == pytest.approx(0.1274, abs=1e-3) and "wall time" in s["gpu_busy_note"]
    assert s["wall_us"] == pytest.approx(mlp.wall_time_us)
    assert s["ops"] == len(mlp.ops)
    f = header["findings"][0]
    assert (f["kind"], f["severity"]) == (mlp.findings[0].kind, mlp.findings[0].severity)
    assert f["title"].startswith("Host-bound")
    assert [b["backend"] for b in header["backends"]] == mlp.backends["backend"].tolist()
    ops = pd.DataFrame(header["ops"]).set_index("name")
    assert ops.loc["aten::addmm", "calls"] == (mlp.ops["name"] == "aten::addmm").sum()
    assert ops.loc["aten::addmm", "kernels"] == (mlp.kernels["op"] == "aten::addmm").sum()
    json.dumps(header)  # plain JSON, no NaN


def test_occupancy_panel_data_matches_the_calculator(attention):
    header, buf = view_model(attention)
    k = attention.kernels
    flash = k[k["name"].str.contains("flash")].iloc[0]
    code = decode_buffer(header, buf)["kernels"]["shape"][flash.name]
    cfg = next(c for c in header["shapes"] if c["shape"] == code)
    assert cfg["occupancy"] == pytest.approx(flash["theoretical_occupancy"]) == pytest.approx(0.1875)
    assert cfg["active_blocks_per_sm"] == 1
    assert set(cfg["limiters"]) == {"registers", "shared_mem"}
    assert (cfg["threads"], cfg["registers"], cfg["smem"]) == (384, 168, int(flash["shared_mem_bytes"]))
    # Curves as step points; the launch's own value is on each, at its occupancy.
    for key, x in (("block", 384), ("registers", 168), ("smem", cfg["smem"])):
        pts = dict(map(tuple, cfg["curves"][key]))
        assert pts[x] == pytest.approx(0.1875), key
    # Both limits bind, so lowering one alone does not help: each hint says so.
    assert len(cfg["hints"]) == 2 and all("alone it gains nothing" in h for h in cfg["hints"])
    # The same advice as the calculator's (one source: Occupancy.next_steps via rep.shapes).
    shape = attention.shapes.set_index("shape").loc[code]
    assert cfg["hints"] == list(shape["advice"])


def test_occupancy_hints_name_what_raises_it(mlp):
    import re

    from kernelscope.analysis.occupancy import occupancy
    header, _ = view_model(mlp)
    hinted = [c for c in header["shapes"] if c.get("hints")]
    # layer_norm's 39 registers per thread cap it at 75%; 32 would give 100% (calculator).
    assert any(h.startswith("registers: 39/thread") and h.endswith("use <= 32 registers/thread for 16 blocks "
                                                                   "(100% occupancy)")
               for c in hinted for h in c["hints"])
    for c in hinted:
        for h in c["hints"]:
            gain = float(re.search(r"\(([\d.]+)% occupancy\)", h).group(1)) / 100
            assert gain > c["occupancy"]
            # What the hint promises is what the calculator gives with that change.
            m = re.search(r"use <= (\d+) registers/thread", h)
            if m and "alone" not in h:
                assert occupancy(tuple(c["cc"]), c["threads"], int(m.group(1)), c["smem"]).occupancy == \
                    pytest.approx(gain)


def test_roofline_points_come_from_the_analysis(mlp):
    header, _ = view_model(mlp)
    rl = mlp.roofline
    plotted = rl[rl["intensity"].notna() & rl["achieved_tflops"].notna()]
    roof = header["roofline"]
    # Op instances that draw the same dot travel once, with their count and summed time.
    assert sum(p["count"] for p in roof["points"]) == len(plotted) > len(roof["points"])
    same = ["kernel", "op", "precision", "intensity"]
    groups = plotted.groupby(same, dropna=False)
    top_key = groups["duration_us"].sum().idxmax()
    top = groups.get_group(top_key)
    dot = roof["points"][0]
    assert dot["count"] == len(top) and dot["duration_us"] == pytest.approx(top["duration_us"].sum())
    assert dot["intensity"] == pytest.approx(top_key[3])
    # FLOP/s time-weighted: the dot's total FLOPs over its total time.
    flops = (top["achieved_tflops"] * 1e12 * top["duration_us"]).sum()
    assert dot["flops_per_s"] == pytest.approx(flops / top["duration_us"].sum())
    assert {c["source"] for c in roof["ceilings"]} == {"datasheet"}
    peak = roof["ceilings"][0]
    assert peak["bandwidth_bytes_per_s"] == pytest.approx(4800e9)   # H200 HBM3e datasheet


def test_mime_payload_round_trips_and_is_deterministic(mlp):
    header, buf = view_model(mlp)
    p1, p2 = mime_payload(mlp), mime_payload(mlp)
    assert p1 == p2                         # saved notebooks do not churn
    assert set(p1) == {"format", "encoding", "data"} and p1["encoding"] == "gzip+base64"
    got_header, got_buf = read_payload(p1)
    assert got_header == json.loads(json.dumps(header)) and got_buf == buf
    got = decode_payload(p1)
    np.testing.assert_array_equal(got["kernels"]["duration_us"], decode_buffer(header, buf)["kernels"]["duration_us"])
    # The header is packed and gzipped with the columns: the whole entry is smaller than the
    # plain JSON header alone (issue 15: the header was 45-137 KB of plain JSON per report).
    assert len(json.dumps(p1)) < len(json.dumps(header)) / 2


def test_pack_aligns_the_columns(mlp):
    header, buf = view_model(mlp)
    import gzip
    import struct
    raw = gzip.decompress(pack(header, buf))
    (n,) = struct.unpack_from("<I", raw)
    start = 4 + n + (-(4 + n)) % 8
    assert start % 8 == 0 and raw[start:] == buf            # columns map straight out of it
    assert json.loads(raw[4:4 + n]) == json.loads(json.dumps(header))
    assert unpack(pack(header, buf))[1] == buf


def test_older_payloads_still_decode():
    """Notebooks saved before the packed layout hold {header, encoding, data}: still readable."""
    import nbformat
    nb = nbformat.read(pathlib.Path(__file__).parent.parent / "ui" / "notebooks" / "saved_report_v1.ipynb", 4)
    (payload,) = [o["data"][MIME_TYPE] for c in nb.cells for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]
    assert "format" not in payload and payload["encoding"] == "gzip+base64"
    header, _ = read_payload(payload)
    cols = decode_payload(payload)
    assert header["stats"]["launches"] == len(cols["kernels"]["duration_us"]) == 14
    assert any("flash" in n for n in cols["kernels"]["name"])
    # The committed tutorials were executed on the H200 before the packed layout: all still read.
    tutorials = sorted((pathlib.Path(__file__).parent.parent.parent / "example_notebooks").glob("0*.ipynb"))
    payloads = [o["data"][MIME_TYPE] for p in tutorials for c in nbformat.read(p, 4).cells
                for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]
    assert payloads
    for p in payloads:
        header, _ = read_payload(p)
        if header.get("kind") == "compare":     # a comparison's payload (notebook 8): no launch tables
            assert header["labels"] and decode_payload(p) == {}
            continue
        assert len(decode_payload(p)["kernels"]["duration_us"]) == header["stats"]["launches"]


def test_display_bundle_carries_every_type(mlp):
    bundle = mlp._repr_mimebundle_()
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain", WIDGET_MIME}
    assert bundle["text/plain"] == repr(mlp)
    assert read_payload(bundle[MIME_TYPE])[0]["stats"]["launches"] == 74
    assert bundle[WIDGET_MIME]["model_id"]
    assert "kernelscope" in bundle["text/html"]
    json.dumps(bundle)


def test_static_html_shows_the_top_kernels(mlp):
    html = report_html(mlp)
    top = mlp.summary().iloc[0]
    assert f">{top['short_name']}<" in html
    assert "9.5%" in html           # GPU busy of the wall time
    assert "Host-bound" in html     # top finding
    assert html.count("<tr style=") == 20 + 1 + len(mlp.backends) + 1   # 20 kernels, backends, heads


def test_hostile_names_are_escaped_everywhere(mlp):
    rep = hostile_report(mlp)
    html = report_html(rep)
    assert "<script>" not in html and "<img" not in html and "</textarea>" not in html
    assert "&lt;script&gt;" in html
    header, buf = view_model(rep)
    names = decode_buffer(header, buf)["kernels"]["name"]
    assert all(n.startswith(HOSTILE) for n in names)          # data stays data
    assert header["title"] == "textarea>\"'&<img src=x onerror=alert(1)>.json"   # basename, as data


def test_widget_traits_and_selection(mlp):
    w = ReportWidget(mlp)
    assert w.header["stats"]["launches"] == 74
    header, buf = unpack(w.data)            # one packed, gzipped blob: header and columns
    assert header == json.loads(json.dumps(w.header)) and len(buf) == w.header["nbytes"]
    assert len(w.data) < len(buf) + len(json.dumps(w.header))
    # Not in the widget's state (which notebooks save per widget): the view asks for it.
    state = w.get_state()
    assert "selection" in state and not {"data", "header", "_css"} & set(state)
    assert len(json.dumps({k: v for k, v in state.items() if k != "_esm"})) < 2_000
    assert w.selection == [] and w.selected.empty
    gemm = mlp.summary()["name"].iloc[0]
    w.selection = [gemm]
    sel = w.selected
    assert len(sel) == (mlp.kernels["name"] == gemm).sum() == 4
    assert list(sel.columns) == list(mlp.kernels.columns)
    w.selection = [gemm, "not a kernel"]
    assert len(w.selected) == 4
    state = w.get_state()
    assert state["selection"] == [gemm, "not a kernel"]
    assert "export" in w._esm and len(w._esm.encode()) <= 150_000   # issue 15: saved with every widget
    view = embedded_view(w._esm)              # the bundled view, charts and stylesheet inside
    assert "ks-svg" in view and ".ks-root" in view and "vega" not in view.lower()


def test_report_widget_method(attention):
    w = attention.widget()
    assert isinstance(w, ReportWidget) and w.report is attention


def test_empty_report_renders():
    rep = ks.Report(Trace.empty(meta={"source": "empty.json"}))
    header, buf = view_model(rep)
    assert header["stats"]["launches"] == 0 and buf == b"" or header["tables"]["kernels"]["rows"] == 0
    bundle = rep._repr_mimebundle_()
    assert "No GPU kernels were recorded" in bundle["text/html"]
    assert ReportWidget(rep).selected.empty


def test_curves_on_request_match_the_saved_ones(mlp):
    from kernelscope.panels.shapes import shape_details
    header, _ = view_model(mlp)
    saved = [c for c in header["shapes"] if "curves" in c]
    missing = [c for c in header["shapes"] if "curves" not in c and "occupancy" in c]
    assert len(saved) == 3 and missing            # only the costliest shapes carry curves
    assert shape_details(mlp, saved[0]["shape"]) == saved[0]
    entry = shape_details(mlp, missing[0]["shape"])
    assert entry["curves"]["registers"] and entry["occupancy"] == missing[0]["occupancy"]


def test_widget_sends_its_report_when_a_view_asks(mlp):
    w = ReportWidget(mlp)
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_message(w, {"id": "v-1", "kind": "data"}, [])
    ((content, buffers),) = sent
    assert content == {"id": "v-1", "kind": "data"} and buffers == [w.data]
    assert unpack(buffers[0])[0]["stats"]["launches"] == 74


def test_widget_answers_a_curves_request(mlp):
    w = ReportWidget(mlp)
    code = next(c["shape"] for c in w.header["shapes"] if "curves" not in c and "occupancy" in c)
    sent = []
    w.send = lambda content, buffers=None: sent.append(content)   # capture what would go over the comm
    w._on_message(w, {"id": "v-2", "kind": "curves", "shape": code}, [])
    assert sent[0]["kind"] == "curves" and sent[0]["id"] == "v-2" and sent[0]["entry"]["shape"] == code
    assert set(sent[0]["entry"]["curves"]) == {"block", "registers", "smem"}


def test_nbconvert_renders_the_saved_report_as_static_html():
    nbconvert = pytest.importorskip("nbconvert")
    import nbformat
    nb = nbformat.read(pathlib.Path(__file__).parent.parent / "ui" / "notebooks" / "saved_report.ipynb", 4)
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert "kernelscope-static" in html                     # not a dead widget
    assert ">cuDNN flash attention fprop (sm90)<" in html


def test_host_lanes_hold_the_ops_at_their_depth(mlp):
    header, buf = view_model(mlp)
    host = decode_buffer(header, buf)["host"]
    # Every op is sent (test_op_tree checks the depths); depth 0 holds the outermost ones.
    got = sorted((t, s) for t, s, kind, d in zip(host["tid"], host["start_us"], host["kind"], host["depth"])
                 if kind in ("op", "annotation") and d == 0)
    # Written out: per thread, in start order, an op is outermost if it starts after the end
    # of every earlier op of that thread.
    want = []
    for tid, g in mlp.ops.assign(tid=mlp.ops["tid"].astype(str)).groupby("tid"):
        reach = -math.inf
        for s, d in sorted(zip(g["start_us"], g["duration_us"])):
            if s >= reach:
                want.append((tid, s))
            reach = max(reach, s + d)
    assert [t for t, _ in got] == [t for t, _ in sorted(want)] and len(got) == 60
    np.testing.assert_allclose([s for _, s in got], [s for _, s in sorted(want)], rtol=0, atol=5.0001e-4)
    assert sum(k in ("runtime", "sync") for k in host["kind"]) == len(mlp.runtime)
    # The host-blocking calls are marked in Python (trace.model.SYNC_CALLS), not matched in the JS.
    syncs = {n for n, k in zip(host["name"], host["kind"]) if k == "sync"}
    assert syncs and syncs <= {"cudaStreamSynchronize", "cudaDeviceSynchronize"}


def test_no_front_end_still_shows_every_other_view(mlp, tmp_path, monkeypatch):
    """A kernelscope whose front end was never built (widget.js missing): the display bundle
    still carries the MIME entry (no-kernel view), static HTML and text, just no widget."""
    import kernelscope.view.widget as widget
    monkeypatch.setattr(widget, "_STATIC", tmp_path)          # an empty directory: nothing built
    with pytest.raises(RuntimeError, match="front end is not built"):
        ReportWidget(mlp)
    bundle = mlp._repr_mimebundle_()
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain"}
    assert read_payload(bundle[MIME_TYPE])[0]["stats"]["launches"] == 74
    assert "kernelscope-static" in bundle["text/html"] and bundle["text/plain"] == repr(mlp)
