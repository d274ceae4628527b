"""The load progress bar: drawn on a real terminal (a pty) and in a real ipykernel, for a real
trace, and gone when the load is done; nothing for a quick load, a pipe or ``progress=False``.

``KERNELSCOPE_PROGRESS=0`` makes every load count as long (the test traces load in well under the
default two seconds); the default's own rule is checked on the same file.
"""
import os
import pathlib
import pty
import re
import subprocess
import sys

import pytest

from tests.conftest import iopub_until_idle

DATA = pathlib.Path(__file__).parent.parent / "data"
TRACE = DATA / "wild" / "llama_train.pt.trace.json.gz"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
LOAD = "import kernelscope as ks; r = ks.load({path!r}{kw}); print('KERNELS', len(r.kernels))"


def on_tty(env_value, kw=""):
    """Run a load with stdout and stderr on a pty: everything the terminal received."""
    main, sub = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "KERNELSCOPE_PROGRESS"}
    if env_value is not None:
        env["KERNELSCOPE_PROGRESS"] = env_value
    p = subprocess.Popen([sys.executable, "-c", LOAD.format(path=str(TRACE), kw=kw)],
                         stdin=sub, stdout=sub, stderr=sub, env=env)
    os.close(sub)
    out = b""
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:       # the child closed the pty
            break
        if not data:
            break
        out += data
    os.close(main)
    assert p.wait(timeout=120) == 0, out.decode(errors="replace")
    return out.decode()


def screen(text):
    """The lines a terminal shows after ``text`` (carriage return, erase to the end of line)."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line, cur = "", 0
        for part in re.split(r"(\r|\x1b\[K)", raw):
            if part == "\r":
                cur = 0
            elif part == "\x1b[K":
                line = line[:cur]
            elif part:
                line = line[:cur] + part + line[cur + len(part):]
                cur += len(part)
        if line:
            lines.append(line)
    return lines


def test_terminal_bar_is_drawn_then_erased():
    out = on_tty("0")
    kernels = re.search(r"KERNELS (\d+)", out).group(1)
    # The bar was drawn, named after the file, with the share read and what was going on ...
    assert re.search(rf"\r\x1b\[K{re.escape(TRACE.name)} \[[#.]{{30}}\] +\d+%", out)
    assert "analysing" in out
    # ... and nothing of it is left on the screen: only the script's own line.
    assert screen(out) == [f"KERNELS {kernels}"]


def test_quick_load_draws_nothing():
    # The default: this trace reads in well under two seconds, so no bar at all.
    out = on_tty(None)
    assert "\x1b[K" not in out and re.fullmatch(r"KERNELS \d+", " ".join(screen(out)))


@pytest.mark.parametrize("env_value, kw", [("off", ""), ("0", ", progress=False")])
def test_bar_turned_off(env_value, kw):
    out = on_tty(env_value, kw)
    assert "\x1b[K" not in out and out.strip().startswith("KERNELS")


def test_no_bar_on_a_pipe():
    env = dict(os.environ, KERNELSCOPE_PROGRESS="0")
    p = subprocess.run([sys.executable, "-c", LOAD.format(path=str(TRACE), kw="")],
                       capture_output=True, text=True, env=env, timeout=120, check=True)
    assert p.stderr == "" and p.stdout.startswith("KERNELS")


@pytest.fixture(scope="module")
def kc():
    from jupyter_client.manager import start_new_kernel
    km, client = start_new_kernel(kernel_name="python3", cwd=str(DATA),
                                  env=dict(os.environ, KERNELSCOPE_PROGRESS="0"))
    yield client
    client.stop_channels()
    km.shutdown_kernel(now=True)


def run(kc, code):
    return iopub_until_idle(kc, kc.execute(code))


def test_notebook_bar_is_shown_updated_and_removed(kc):
    msgs = run(kc, f"import kernelscope as ks\nrep = ks.load({str(TRACE)!r})\nprint('KERNELS', len(rep.kernels))")
    assert not [m for m in msgs if m["msg_type"] == "error"], msgs
    opened = {m["content"]["comm_id"]: m["content"]["data"]["state"] for m in msgs if m["msg_type"] == "comm_open"}
    bars = [c for c, s in opened.items() if s.get("_model_name") == "FloatProgressModel"]
    boxes = [c for c, s in opened.items() if s.get("_model_name") == "HBoxModel"]
    assert len(bars) == 1 and len(boxes) == 1
    # The box is displayed under the cell with a display id ...
    shown = [m for m in msgs if m["msg_type"] == "display_data" and WIDGET_MIME in m["content"]["data"]]
    assert [m["content"]["data"][WIDGET_MIME]["model_id"] for m in shown] == boxes
    display_id = shown[0]["content"]["transient"]["display_id"]
    # ... the bar moves, and its text says what is going on (reading, then analysing) ...
    values = [m["content"]["data"]["state"]["value"] for m in msgs if m["msg_type"] == "comm_msg"
              and m["content"]["comm_id"] == bars[0] and "value" in m["content"]["data"].get("state", {})]
    assert values and values[-1] == 1.0
    texts = " ".join(str(m["content"]["data"].get("state", {}).get("value", "")) for m in msgs
                     if m["msg_type"] == "comm_msg")
    assert "analysing" in texts
    # ... and at the end every widget of it is closed and its output emptied.
    closed = {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}
    assert set(opened) <= closed
    cleared = [m for m in msgs if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert cleared and cleared[-1]["content"]["data"] == {"text/plain": ""}
    assert any(m["msg_type"] == "stream" and "KERNELS" in m["content"]["text"] for m in msgs)
