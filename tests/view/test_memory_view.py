"""The memory panel in every output, on the H200 training recordings: the payload's header (the
memory lane's curve and labels), the text and Markdown sections, the altair chart; none of it for
a trace recorded without profile_memory."""
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.memory import MAX_POINTS
from kernelscope.units import fmt_bytes
from kernelscope.view.report import view_model
from tests.analysis.test_memory import LEAK, LM


@pytest.fixture(scope="module")
def lm():
    return ks.load(LM)


def test_the_payload_carries_the_lane_and_what_held_the_peak(lm):
    header, _ = view_model(lm)
    m = header["memory"]
    assert json.loads(json.dumps(m)) == m
    s = m["series"]
    assert len(s["time_us"]) == len(s["allocated"]) == len(s["reserved"]) <= MAX_POINTS
    assert max(s["allocated"]) == lm.memory.peak_bytes == m["peak_bytes"]
    assert m["lane"]["label"] == "memory cuda:0" and m["lane"]["max_text"] == fmt_bytes(lm.memory.peak_reserved)
    assert m["lane"]["allocated_color"].startswith("#") and m["lane"]["reserved"] == "reserved"
    assert [h["bytes"] for h in m["held"]] == lm.memory.held["bytes"].head(len(m["held"])).tolist()
    assert m["held"][0]["text"].startswith("allocated before the recording")
    # A window of the view carries the same whole-report curve (the lane clips it to its view).
    assert view_model(lm, window=(100_000.0, None))[0]["memory"]["series"] == s


def test_text_and_markdown_say_the_peak_and_its_holders(lm):
    text = repr(lm)
    assert "memory (rep.memory): peak 1022.2 MiB allocated on cuda:0" in text
    assert "aten::_log_softmax at record.py(47): step: 128.0 MiB in 1 block" in text
    assert "steps: allocated at the end of each of 12 steps: 311.4 MiB (no growth)" in text
    html = lm._repr_html_()
    assert "<b>Memory</b> peak 1022.2 MiB allocated" in html and "what held the peak" in html
    md = lm.to_markdown()
    assert "## Memory (`rep.memory`)" in md and "Peak 1022.2 MiB allocated" in md
    leak = ks.load(LEAK)
    assert "leak: grows by 64.0 MiB per step over 8 steps" in repr(leak)
    assert "**Leak**: grows by 64.0 MiB per step" in leak.to_markdown()
    assert leak.first_screen()["memory"]["leak"].startswith("grows by 64.0 MiB")


def test_the_memory_chart_draws_the_curve(lm):
    pytest.importorskip("altair")
    spec = lm.chart("memory").to_dict()
    values = next(iter(spec["datasets"].values()))
    assert {v["what"] for v in values} == {"allocated", "reserved"}
    assert max(v["MiB"] for v in values if v["what"] == "allocated") == pytest.approx(lm.memory.peak_bytes / 2**20)
    assert spec["title"].startswith("Memory: peak 1022.2 MiB")


def test_a_trace_without_allocator_events_shows_no_memory():
    rep = ks.load(LM.parent.parent / "mlp_train.pt.trace.json.gz")
    assert view_model(rep)[0]["memory"] is None
    assert "memory (rep.memory)" not in repr(rep) and "## Memory" not in rep.to_markdown()
    assert rep.first_screen()["memory"] is None
