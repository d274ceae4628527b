"""The widget's request channel, JS side (js/src/channel.js), run by node on a small stand-in for
anywidget's model (on/off/send): replies matched by id, an error reply rejecting with Python's
words, a request whose reply never comes rejecting after its time-out (and its late reply
ignored), closing removing the listener and rejecting what still waits."""
import json
import pathlib
import shutil
import subprocess

import pytest

CHANNEL = pathlib.Path(__file__).resolve().parents[2] / "js" / "src" / "channel.js"

SCRIPT = """
import { makeChannel, ChannelError } from "%s";
const listeners = new Set();
const sent = [];
const model = {   // anywidget's model, as far as the channel uses it
  on: (ev, fn) => { if (ev === "msg:custom") listeners.add(fn); },
  off: (ev, fn) => { if (ev === "msg:custom") listeners.delete(fn); },
  send: (msg) => sent.push(msg),
};
const reply = (msg, buffers) => { for (const fn of [...listeners]) fn(msg, buffers); };
const out = {};
const outcome = (p) => p.then((v) => ({ ok: v }), (e) => ({ err: e.message, reason: e.reason, kind: e.kind,
  id: e.id, isChannelError: e instanceof ChannelError, reply: e.reply }));

const ch = makeChannel(model, { timeoutMs: 60 });
const other = makeChannel(model);
const a = outcome(ch.request("window", { from_us: 1.5, until_us: null }, { timeoutMs: 5000 }));
const b = outcome(ch.request("curves", { shape: 3 }, { timeoutMs: 5000 }));
const c = outcome(other.request("data", {}, { timeoutMs: 5000 }));
out.sent = sent.map((m) => ({ ...m }));
out.idsDistinct = new Set(sent.map((m) => m.id)).size === 3;
// Replies out of order, one of them an error; a reply to nobody is ignored.
reply({ id: "nobody", kind: "data" }, []);
reply({ id: sent[1].id, kind: "curves", entry: { shape: 3 } }, []);
reply({ id: sent[0].id, kind: "window", error: "LookupError: the report has no launch of that kernel" }, []);
out.a = await a;
out.b = await b;
out.waitingOther = other.waiting();
reply({ id: sent[2].id, kind: "data" }, ["BUF"]);
out.c = await c;
// No reply: rejected after its time-out (the channel's default here, 60 ms); the late reply ignored.
const t0 = Date.now();
const lost = outcome(ch.request("trace"));
out.lost = await lost;
out.lostAfterMs = Date.now() - t0;
reply({ id: sent[3].id, kind: "trace", name: "late" }, []);
out.waitingAfterTimeout = ch.waiting();
// Closing: the listener goes, what waits rejects, a later request rejects at once.
const pending = outcome(ch.request("rank", { rank: 1 }, { timeoutMs: 5000 }));
out.listenersBefore = listeners.size;
ch.close();
out.pending = await pending;
out.listenersAfter = listeners.size;
out.afterClose = await outcome(ch.request("data"));
out.sentAfterClose = sent.length;
other.close();
console.log(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_channel_matches_replies_by_id_and_times_out():
    r = subprocess.run(["node", "--input-type=module", "-e", SCRIPT % CHANNEL.as_uri()],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    first, second, third = out["sent"][:3]
    assert first["kind"] == "window" and first["from_us"] == 1.5 and first["until_us"] is None
    assert second["kind"] == "curves" and second["shape"] == 3 and third["kind"] == "data"
    assert out["idsDistinct"]
    assert out["b"] == {"ok": {"msg": {"id": second["id"], "kind": "curves", "entry": {"shape": 3}}, "buffers": []}}
    assert out["a"]["err"] == "LookupError: the report has no launch of that kernel"
    assert out["a"]["reason"] == "error" and out["a"]["isChannelError"] and out["a"]["reply"]["kind"] == "window"
    assert out["waitingOther"] == 1                    # the first channel's replies were not the other's
    assert out["c"] == {"ok": {"msg": {"id": third["id"], "kind": "data"}, "buffers": ["BUF"]}}
    lost = out["lost"]
    assert lost["reason"] == "timeout" and lost["kind"] == "trace" and 55 <= out["lostAfterMs"] < 2000
    assert lost["err"] == (f'no reply from the Python kernel to the "trace" request ({lost["id"]}) within 60 ms: '
                           "the kernel is busy or has gone")
    assert out["waitingAfterTimeout"] == 0
    assert out["listenersBefore"] == 2 and out["listenersAfter"] == 1
    assert out["pending"]["reason"] == "closed" and "rank" in out["pending"]["err"]
    assert out["afterClose"]["reason"] == "closed" and out["sentAfterClose"] == 5
