"""The widget's request/response channel, Python side (kernelscope/view/widget.py: ``answer``,
``HANDLERS``): a real ReportWidget of a real recording gets each request as the comm delivers it
(ipywidgets' custom-message dispatch, to the handler the widget registered) and every reply is
caught on its way out by wrapping the widget's own ``send``. Every request gets exactly one reply
that echoes its id and kind; one that does not read, or whose handler raises, gets an ``error``
reply, never an exception in the kernel."""
import json
import shutil

import pytest
from conftest import DATA

import kernelscope as ks
from kernelscope.view import widget as widget_module
from kernelscope.view.codec import decode_buffer, unpack
from kernelscope.view.report import view_model
from kernelscope.view.widget import HANDLERS, ReportWidget


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False)


@pytest.fixture(scope="module")
def w(mlp):
    return ReportWidget(mlp)


def replies(widget):
    """What the widget sends from now on, (content, buffers) each: its own send, wrapped."""
    sent = []
    real = widget.send

    def send(content, buffers=None):
        json.dumps(content, allow_nan=False)          # what goes over the comm is plain JSON
        sent.append((content, list(buffers or [])))
        return real(content, buffers=buffers)

    widget.send = send
    return sent


def ask(widget, content, buffers=()):
    """One request as the front end sends it; its one reply."""
    sent = replies(widget)
    try:
        widget._handle_custom_msg(content, list(buffers))   # how ipywidgets hands a custom message on
    finally:
        del widget.send                                      # the class's own send again
    assert len(sent) == 1, sent
    return sent[0]


def test_data_curves_and_trace_replies_echo_id_and_kind(w, mlp):
    msg, bufs = ask(w, {"id": "p1-1", "kind": "data"})
    assert msg == {"id": "p1-1", "kind": "data"} and bufs == [w.data]
    assert unpack(bufs[0])[0]["stats"]["launches"] == 74
    code = next(c["shape"] for c in w.header["shapes"] if "curves" not in c and "occupancy" in c)
    msg, bufs = ask(w, {"id": 7, "kind": "curves", "shape": code})
    assert msg["id"] == 7 and msg["kind"] == "curves" and bufs == [] and "error" not in msg
    assert msg["entry"]["shape"] == code and set(msg["entry"]["curves"]) == {"block", "registers", "smem"}
    msg, bufs = ask(w, {"id": "p1-3", "kind": "trace"})
    assert msg == {"id": "p1-3", "kind": "trace", "name": "mlp_train.pt.trace.json.gz"}
    assert bytes(bufs[0]) == (DATA / "mlp_train.pt.trace.json.gz").read_bytes()


def test_a_window_reply_holds_that_window(w, mlp):
    until = float(mlp.kernels["start_us"].median())
    msg, bufs = ask(w, {"id": "p1-4", "kind": "window", "from_us": until, "until_us": None})
    assert msg == {"id": "p1-4", "kind": "window"}
    header, buf = unpack(bytes(bufs[0]))
    assert header["window"] == view_model(mlp, window=(until, None))[0]["window"]
    # A kernel's next launch; a kernel the report lacks is an error naming the exception.
    name = mlp.kernels["name"].iloc[0]
    msg, bufs = ask(w, {"id": "p1-5", "kind": "window", "from_us": None, "kernel": name})
    assert decode_buffer(*unpack(bytes(bufs[0])))["kernels"]["name"][0] == name
    msg, bufs = ask(w, {"id": "p1-6", "kind": "window", "kernel": "no such kernel"})
    assert msg == {"id": "p1-6", "kind": "window", "error": "LookupError: the report has no launch of that kernel"}
    assert bufs == []


def test_a_rank_reply_is_that_ranks_report():
    w = ks.load_ranks(DATA / "ranks", workers=1).widget()      # the multi-rank view's widget
    msg, bufs = ask(w, {"id": "r-1", "kind": "rank", "rank": 1})
    assert msg == {"id": "r-1", "kind": "rank", "rank": 1}
    assert unpack(bytes(bufs[0]))[0]["stats"]["launches"] == 129
    msg, bufs = ask(w, {"id": "r-2", "kind": "rank", "rank": 5})
    assert msg["id"] == "r-2" and msg["error"].startswith("KeyError: ") and "no rank 5" in msg["error"]
    assert bufs == []


def test_a_trace_that_is_gone_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "gone.pt.trace.json.gz"
    shutil.copy(DATA / "mlp_train.pt.trace.json.gz", path)
    w = ReportWidget(ks.load(path, progress=False))
    path.unlink()
    msg, bufs = ask(w, {"id": "t-1", "kind": "trace"})
    assert msg == {"id": "t-1", "kind": "trace", "name": "gone.pt.trace.json.gz",
                   "error": f"{path} is not there any more"} and bufs == []


@pytest.mark.parametrize(("content", "echo", "why"), [
    (["data"], (None, None), "a request is an object, not list"),
    ("data", (None, None), "a request is an object, not str"),
    ({"kind": "data"}, (None, "data"), "'id' must be a string or an integer, not missing"),
    ({"id": {"n": 1}, "kind": "data"}, (None, "data"), "'id' must be a string or an integer, not dict"),
    ({"id": True, "kind": "data"}, (None, "data"), "'id' must be a string or an integer, not bool"),
    ({"id": "b1"}, ("b1", None), "unknown kind None (known: data, curves, trace, window, rank)"),
    ({"id": "b2", "kind": 3}, ("b2", None), "unknown kind 3"),
    ({"id": "b3", "kind": "delete"}, ("b3", "delete"), "unknown kind 'delete'"),
    ({"id": "b4", "type": "data"}, ("b4", None), "unknown kind None"),          # the old message shape
    ({"id": "b5", "kind": "curves"}, ("b5", "curves"), "'shape' must be an integer, not missing"),
    ({"id": "b6", "kind": "curves", "shape": "3"}, ("b6", "curves"), "'shape' must be an integer, not str"),
    ({"id": "b7", "kind": "curves", "shape": 2.5}, ("b7", "curves"), "'shape' must be an integer, not float"),
    ({"id": "b8", "kind": "curves", "shape": [0]}, ("b8", "curves"), "'shape' must be an integer, not list"),
    ({"id": "b9", "kind": "curves", "shape": {"shape": 0}}, ("b9", "curves"), "'shape' must be an integer, not dict"),
    ({"id": "b10", "kind": "curves", "shape": None}, ("b10", "curves"), "'shape' must be an integer, not NoneType"),
    ({"id": "b11", "kind": "curves", "shape": True}, ("b11", "curves"), "'shape' must be an integer, not bool"),
    ({"id": "b12", "kind": "window", "from_us": "x"}, ("b12", "window"), "'from_us' must be a number or null, not str"),
    ({"id": "b13", "kind": "window", "until_us": [1]}, ("b13", "window"), "'until_us' must be a number or null, not list"),
    ({"id": "b14", "kind": "window", "kernel": 5}, ("b14", "window"), "'kernel' must be a string or null, not int"),
    ({"id": "b15", "kind": "rank", "rank": "1"}, ("b15", "rank"), "'rank' must be an integer, not str"),
    ({"id": "b16", "kind": "rank", "rank": 0}, ("b16", "rank"), "this report has no ranks"),
])
def test_a_request_that_does_not_read_gets_an_error_reply(w, content, echo, why):
    msg, bufs = ask(w, content)
    assert (msg["id"], msg["kind"]) == echo and bufs == []
    assert msg["error"].startswith(f"bad request: {why}"), msg["error"]
    assert set(msg) == {"id", "kind", "error"}


def test_a_handler_that_raises_is_an_error_reply_naming_the_exception(w, monkeypatch):
    def broken(widget, req):
        return {}, [1 / 0]
    monkeypatch.setitem(HANDLERS, "data", broken)
    msg, bufs = ask(w, {"id": "e1", "kind": "data"})
    assert msg == {"id": "e1", "kind": "data", "error": "ZeroDivisionError: division by zero"} and bufs == []
    # The kernel keeps serving: the next request is answered as usual.
    monkeypatch.undo()
    assert ask(w, {"id": "e2", "kind": "data"}) == ({"id": "e2", "kind": "data"}, [w.data])


def test_every_kind_has_a_handler_and_the_view_asks_for_each():
    """The JS side asks for exactly the kinds Python answers (js/src/widget.js)."""
    import pathlib
    import re
    js = (pathlib.Path(widget_module.__file__).parents[2] / "js" / "src" / "widget.js").read_text()
    asked = set(re.findall(r'ask\("(\w+)"', js))
    assert asked == set(HANDLERS) == {"data", "curves", "trace", "window", "rank"}


def test_a_window_keeps_the_display_options(mlp, monkeypatch):
    # A display with --top 3 --sort launches: every window the chooser fetches opens the same way.
    from kernelscope.view import report as view
    monkeypatch.setattr(view, "VIEW_LAUNCHES", 20)
    shown = ReportWidget(mlp, options={"top": 3, "sort": "launches"})
    assert shown.header["view"] == {"top": 3, "sort": "launches"} and shown.header["window"]
    msg, bufs = ask(shown, {"id": "w-1", "kind": "window", "from_us": shown.header["window"]["until_us"]})
    assert "error" not in msg and unpack(bufs[0])[0]["view"] == {"top": 3, "sort": "launches"}
