"""A training loop's steps in every output: the panel (panels/steps.py), the text, the Markdown,
the altair chart and the payload's header (js/src/view/steps.js draws it), on the H200 LM trace."""
import pytest

import kernelscope as ks
from kernelscope.panels import report_panels
from kernelscope.panels.steps import MAX_ROWS, steps_panel
from kernelscope.view.report import view_model
from tests.conftest import DATA


@pytest.fixture(scope="module")
def lm():
    return ks.load(DATA / "training" / "lm_steps.pt.trace.json.gz")


def test_panel_rows_and_words(lm):
    p = report_panels(lm).steps
    assert [r["index"] for r in p["rows"]] == list(range(3, 15)) and p["dropped"] == 0
    assert [q["label"] for q in p["parts"]] == ["Kernel", "Memcpy", "Memset", "Communication", "Runtime",
                                                "Data loading", "CPU exec", "Other"]
    kinds = {r["index"]: r["kind"] for r in p["rows"] if r["kind"]}
    assert kinds == {3: "slowest", 9: "median"}
    assert p["lines"][0].startswith("12 steps (ProfilerStep#3-#14): median 29.83 ms")


def test_text_markdown_and_chart(lm):
    text = repr(lm)
    assert "  Steps (rep.steps):" in text and "ProfilerStep#9     median" in text
    md = lm.to_markdown()
    assert "## Steps (`rep.steps`)" in md and "| ProfilerStep#3 | slowest | 31.78 ms |" in md
    pytest.importorskip("altair")
    d = lm.chart("steps").to_dict()
    rows = next(iter(d["datasets"].values()))
    assert len(rows) == 12 * 8 and {r["part"] for r in rows} >= {"Kernel", "CPU exec", "Other"}
    with pytest.raises(ValueError, match="no steps"):
        ks.load(DATA / "mlp_train.pt.trace.json.gz").chart("steps")


def test_payload_header_holds_the_panel(lm):
    header, _ = view_model(lm)
    assert header["steps"] is report_panels(lm).steps
    none, _ = view_model(ks.load(DATA / "mlp_train.pt.trace.json.gz"))
    assert none["steps"] is None


def test_a_long_loop_keeps_first_slowest_and_a_sample(lm):
    import pandas as pd
    t = lm.steps
    many = pd.concat([t] * 100, ignore_index=True)
    many["index"] = range(len(many))
    many["step"] = [f"ProfilerStep#{i}" for i in many["index"]]
    many.loc[500, "step_us"] *= 3
    fake = type("R", (), {"steps": many})()
    p = steps_panel(fake)
    assert len(p["rows"]) == MAX_ROWS and p["dropped"] == 200
    assert 500 in [r["index"] for r in p["rows"]] and p["rows"][0]["index"] == 0
    assert "200 of 1,200 steps not shown" in p["dropped_note"]
