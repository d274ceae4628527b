"""Windows of a report too big for one view (kernelscope.view.report: ``view_model(rep,
window=...)``), on real H200 recordings with the view's budget lowered so that they pass it: what
each window holds, that the windows one after another hold every launch once, the whole-report
overview, and the widget's and the file server's answers to a window request."""
import pathlib

import numpy as np
import pytest

import kernelscope as ks
from kernelscope.analysis.op_tree import op_tree
from kernelscope.panels import window
from kernelscope.view import report as view
from kernelscope.view.codec import decode_buffer, read_payload, unpack
from kernelscope.view.widget import ReportWidget

DATA = pathlib.Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 20)
    monkeypatch.setattr(view, "VIEW_HOST_SPANS", 150)


def _launch_starts(rep):
    return np.sort(np.concatenate([rep.kernels["start_us"].to_numpy(float), rep.copies["start_us"].to_numpy(float)]))


def test_a_window_holds_the_launches_that_start_in_it(mlp, small_budget):
    first = view.view_model(mlp)[0]["window"]
    header, buf = view.view_model(mlp, window=(first["until_us"], None))
    w = header["window"]
    lo, until = w["from_us"], w["until_us"]
    assert lo == first["until_us"] < until
    cols = decode_buffer(header, buf)
    k = mlp.kernels
    shown = k[(k["start_us"] >= lo) & (k["start_us"] < until)]
    assert list(cols["kernels"]["name"]) == shown["name"].tolist() and w["launches"] == len(shown)
    starts = _launch_starts(mlp)
    in_window = ((starts >= lo) & (starts < until)).sum()
    assert in_window == w["launches"] + w["copies"] <= 20
    # Cut by a budget: the next launch (or host span) would pass it.
    host_starts = np.sort(np.concatenate([mlp.ops["start_us"].to_numpy(float), mlp.runtime["start_us"].to_numpy(float)]))
    assert in_window == 20 or ((host_starts >= lo) & (host_starts < until)).sum() == 150
    # Host spans: every one that overlaps the window, each at its depth in the whole call tree.
    ops = mlp.ops.reset_index(drop=True)
    end = ops["start_us"] + ops["duration_us"]
    want = ops[(ops["start_us"] < until) & (end > lo)]
    host = cols["host"]
    got_ops = [(n, round(s, 3)) for n, s, kind in zip(host["name"], host["start_us"], host["kind"]) if kind in ("op", "annotation")]
    assert got_ops == [(n, round(s, 3)) for n, s in zip(want["name"], want["start_us"])]
    depth = op_tree(ops)["depth"].to_numpy()[want.index]
    assert host["depth"][: len(want)].tolist() == depth.tolist() and depth.max() >= 1
    assert (np.asarray(cols["gaps"]["start_us"]) < until).all()
    # The whole report's figures, whichever window.
    full = view.view_model(mlp)[0]
    for key in ("stats", "findings", "fixes", "backends", "ops", "op_names", "roofline", "shapes"):
        assert header[key] == full[key], key
    assert header["notes"][-1].startswith("This view holds ") and " to " in header["notes"][-1]


def test_windows_one_after_another_hold_every_launch_once(mlp, small_budget):
    seen, window, steps = [], None, 0
    while True:
        header, buf = view.view_model(mlp, window=window)
        w = header["window"]
        seen += decode_buffer(header, buf)["kernels"]["correlation"].tolist()
        steps += 1
        if w["until_us"] > _launch_starts(mlp)[-1]:
            break
        window = (w["until_us"], None)
    assert sorted(seen) == sorted(mlp.kernels["correlation"].tolist()) and steps >= 4


def test_the_overview_covers_the_whole_trace(mlp, small_budget):
    w = view.view_model(mlp)[0]["window"]
    ov = w["overview"]
    assert len(ov["busy"]) == len(ov["launches"]) == len(ov["host_spans"]) == window.OVERVIEW_BINS
    assert sum(ov["launches"]) == len(mlp.kernels) + len(mlp.copies)
    assert sum(ov["host_spans"]) == w["of_host_spans"] == len(mlp.ops) + len(mlp.runtime)
    assert ov["start_us"] == min(mlp.kernels["start_us"].min(), mlp.ops["start_us"].min(), mlp.runtime["start_us"].min())
    assert 0 < max(ov["busy"]) <= 1
    # Busy time per bin adds up to the GPU time where no bin is full.
    total = mlp.kernels["duration_us"].sum() + mlp.copies["duration_us"].sum()
    assert sum(b * ov["bin_us"] for b in ov["busy"]) == pytest.approx(total, rel=0.05)
    gaps = mlp.timeline.gaps.nlargest(window.OVERVIEW_GAPS, "duration_us")
    assert [g["start_us"] for g in ov["gaps"]] == pytest.approx(gaps["start_us"].tolist())
    assert "idle at" in ov["gaps"][0]["label"]


def test_windows_at_the_edges(mlp, small_budget):
    first = view.view_model(mlp)[0]
    # From before the trace's start: the first window exactly.
    before = view.view_model(mlp, window=(-1e12, None))[0]
    assert before["window"] == first["window"] and before["window"]["from_us"] is None
    # From past its end: the last rows, not an empty view.
    late = view.view_model(mlp, window=(1e15, None))[0]["window"]
    assert late["host_spans"] >= 1 and late["until_us"] > late["from_us"]
    # Bad numbers from a browser read as "not given".
    assert view.view_model(mlp, window=("x", None))[0]["window"] == first["window"]
    # A report that fits has no window, unless one is asked for.
    view.VIEW_LAUNCHES = view.VIEW_HOST_SPANS = 10**9
    assert view.view_model(mlp)[0]["window"] is None
    part = view.view_model(mlp, window=(first["window"]["until_us"], None))[0]["window"]
    assert part["from_us"] == first["window"]["until_us"] and part["launches"] < len(mlp.kernels)


def test_the_widget_answers_a_window_request(mlp, small_budget):
    w = ReportWidget(mlp)
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    until = w.header["window"]["until_us"]
    w._on_message(w, {"kind": "window", "id": 3, "from_us": until, "until_us": None}, [])
    ((content, buffers),) = sent
    assert content == {"kind": "window", "id": 3}
    header, buf = unpack(bytes(buffers[0]))
    assert header["window"] == view.view_model(mlp, window=(until, None))[0]["window"]


def test_the_file_server_answers_a_window(tmp_path, small_budget):
    from kernelscope.jupyter import server
    path = tmp_path / "mlp_train.pt.trace.json.gz"
    path.write_bytes((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    first = read_payload(server.report_payload(str(path), "mlp_train.pt.trace.json.gz"))[0]["window"]
    got = read_payload(server.report_payload(str(path), "x/mlp_train.pt.trace.json.gz", (first["until_us"], None)))[0]
    assert got["window"]["from_us"] == first["until_us"] and got["title"] == "mlp_train.pt.trace.json.gz"
    # The file was read once: the second window came from the report kept.
    assert len([k for k in server._reports if k[0] == str(path)]) == 1
    assert server._query_us("12.5") == 12.5 and server._query_us("") is None and server._query_us("nan") is None


def test_the_window_of_a_kernels_next_launch(mlp, small_budget, tmp_path):
    name = mlp.kernels["name"].value_counts().index[0]
    starts = np.sort(mlp.kernels.loc[mlp.kernels["name"] == name, "start_us"].to_numpy(float))
    assert view.kernel_window(mlp, name) == (starts[0], None)
    assert view.kernel_window(mlp, name, starts[0]) == (starts[1], None)
    # After the last one: from the first again; a name the report lacks: None.
    assert view.kernel_window(mlp, name, starts[-1] + 1) == (starts[0], None)
    assert view.kernel_window(mlp, "no such kernel") is None and view.kernel_window(mlp, None) is None
    w = ReportWidget(mlp)
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_message(w, {"kind": "window", "id": 1, "from_us": float(starts[1]), "kernel": name}, [])
    w._on_message(w, {"kind": "window", "id": 2, "from_us": None, "kernel": "no such kernel"}, [])
    header = unpack(bytes(sent[0][1][0]))[0]
    assert header["window"]["from_us"] == starts[2]
    assert decode_buffer(header, unpack(bytes(sent[0][1][0]))[1])["kernels"]["name"][0] == name
    assert sent[1][0]["id"] == 2 and "no launch of that kernel" in sent[1][0]["error"]
    from kernelscope.errors import TraceError
    from kernelscope.jupyter import server
    path = tmp_path / "mlp_train.pt.trace.json.gz"
    path.write_bytes((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    got = read_payload(server.report_payload(str(path), None, {"kernel": name, "after_us": starts[1]}))[0]
    assert got["window"]["from_us"] == starts[2]
    with pytest.raises(TraceError, match="no launch of that kernel"):
        server.report_payload(str(path), None, {"kernel": "no such kernel", "after_us": None})
