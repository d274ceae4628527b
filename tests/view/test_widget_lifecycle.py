"""Widgets nobody can see are closed: in a real ipykernel, driven as JupyterLab drives it
(execute requests that carry the cell's id), re-running a report cell or showing a report again
keeps one open widget per report on screen instead of one per run (issue 15: twelve re-runs of
three cells sent 38 MB to the browser on one page reload)."""
import pathlib

import pytest

from tests.conftest import iopub_until_idle

DATA = pathlib.Path(__file__).parent.parent / "data"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def kc():
    from jupyter_client.manager import start_new_kernel
    km, client = start_new_kernel(kernel_name="python3", cwd=str(DATA))
    run(client, "import kernelscope as ks\nfrom ipywidgets.widgets.widget import _instances\n"
                "from kernelscope.view.widget import ReportWidget")
    yield client
    client.stop_channels()
    km.shutdown_kernel(now=True)


def run(kc, code, cell_id=None):
    """Execute `code` as a notebook front end does (with ``metadata.cellId``); the iopub messages."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
    kc.shell_channel.send(msg)
    mid = msg["header"]["msg_id"]
    out = iopub_until_idle(kc, mid)
    reply = reply_to(kc, mid)
    assert reply["content"]["status"] == "ok", reply["content"]
    return out


def reply_to(kc, mid):
    # Skip replies to earlier requests (start_new_kernel may leave a kernel_info_reply queued).
    while True:
        reply = kc.get_shell_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == mid:
            return reply


def shown(msgs):
    """model_ids of the widgets displayed by these messages."""
    return [m["content"]["data"][WIDGET_MIME]["model_id"] for m in msgs
            if m["msg_type"] in ("execute_result", "display_data") and WIDGET_MIME in m["content"]["data"]]


def closed(msgs):
    return {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}


def widget_comms(kc):
    """Open widget comms, as a front end asks for them on a page reload."""
    return set(reply_to(kc, kc.comm_info(target_name="jupyter.widget"))["content"]["comms"])


def open_report_widgets(kc):
    msgs = run(kc, "print(sum(isinstance(w, ReportWidget) and w.comm is not None for w in list(_instances.values())))")
    return int("".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream"))


def test_rerunning_a_cell_closes_its_previous_widgets(kc):
    code = 'rep = ks.load("mlp_train.pt.trace.json.gz")\nrep'
    first = shown(run(kc, code, "cell-a"))
    base = widget_comms(kc)
    assert first[0] in base and open_report_widgets(kc) == 1
    prev = first[0]
    for _ in range(3):
        msgs = run(kc, code, "cell-a")
        (now,) = shown(msgs)
        assert prev in closed(msgs) and len(closed(msgs)) == 2      # the widget and its layout
        comms = widget_comms(kc)
        assert now in comms and prev not in comms and len(comms) == len(base)
        prev = now
    assert open_report_widgets(kc) == 1


def test_a_report_shown_again_replaces_its_widget(kc):
    (a,) = shown(run(kc, 'r2 = ks.load("attention.pt.trace.json.gz")\nr2', "cell-b"))
    before = widget_comms(kc)
    msgs = run(kc, "r2", "cell-c")                  # the same report, in another cell
    (b,) = shown(msgs)
    assert a in closed(msgs) and b != a
    after = widget_comms(kc)
    assert a not in after and b in after and len(after) == len(before)
    # A different report is another widget: both stay open.
    (c,) = shown(run(kc, 'r3 = ks.load("attention.pt.trace.json.gz")\nr3', "cell-d"))
    assert {b, c} <= widget_comms(kc)


def test_an_explicit_widget_is_closed_when_its_cell_runs_again(kc):
    code = "w = rep.widget()\nw"
    (a,) = shown(run(kc, code, "cell-e"))
    msgs = run(kc, code, "cell-e")
    (b,) = shown(msgs)
    assert a in closed(msgs) and b in widget_comms(kc)
    # The user's `w` is the new one and still answers.
    (out,) = [m["content"]["text"] for m in run(kc, "print(w.model_id, w.comm is not None)") if m["msg_type"] == "stream"]
    assert out.split() == [b, "True"]


def test_without_a_cell_id_nothing_else_is_closed(kc):
    """A front end that sends no cell id (nbclient, papermill): only the same report shown again
    replaces its widget; other widgets stay."""
    (a,) = shown(run(kc, 'r4 = ks.load("launch_bound.pt.trace.json.gz")\nr4'))
    (b,) = shown(run(kc, 'r5 = ks.load("copies_streams.pt.trace.json.gz")\nr5'))
    assert {a, b} <= widget_comms(kc)
    msgs = run(kc, "r4")
    assert closed(msgs) >= {a} and b in widget_comms(kc)
