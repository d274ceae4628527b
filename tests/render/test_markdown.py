"""The first screen as data and Markdown (``rep.first_screen()``, ``rep.to_markdown()``): the same
figures and words as the text and the view, JSON-ready, and recorded text that cannot break out."""
from __future__ import annotations

import dataclasses
import json

import kernelscope as ks
from kernelscope.render.markdown import report_markdown
from kernelscope.units import fmt_us
from tests.conftest import DATA

NASTY = "k|x*y_z\n# [link](http://e) <b>\x1b]0;t\x07"


def _renamed(rep, name):
    k = rep.trace.kernels.copy()
    k["name"] = [name + n for n in k["name"]]
    return ks.Report(dataclasses.replace(rep.trace, kernels=k, meta={**rep.meta, "source": f"/tmp/{name}.json"}))


def test_first_screen_is_the_views_first_screen():
    rep = ks.load(DATA / "launch_bound.pt.trace.json.gz", progress=False)
    s = json.loads(json.dumps(rep.first_screen(top=1), allow_nan=False))
    from kernelscope.view.report import view_model
    header, _ = view_model(rep)
    assert s["headline"]["launches"] == header["stats"]["launches"] == 2000
    assert [x["title"] for x in s["fixes"]] == [x["title"] for x in header["fixes"]]
    assert s["fixes"][0]["cost_us"] == header["fixes"][0]["cost_us"]
    top = rep.summary().iloc[0]
    assert len(s["kernels"]) == 1 and s["kernels"][0]["total_us"] == float(top["total_us"])
    md = rep.to_markdown(top=1)
    assert f"| {fmt_us(top['total_us'])} |" in md and header["fixes"][0]["cost_text"] in md


def test_recorded_text_cannot_break_the_markdown():
    rep = _renamed(ks.load(DATA / "mlp_train.pt.trace.json.gz", progress=False), NASTY)
    md = report_markdown(rep, top=3)
    rows = [line for line in md.splitlines() if line.startswith("| ")][1:]     # the table, less its head
    assert len(rows) == 3
    for row in rows:
        # Seven cells each: no "|" of a name ends a cell early, no newline of a name ends the row.
        assert len(row.replace("\\|", "").split("|")) == 9, row
    assert "\x1b" not in md and "\x07" not in md
    assert "<b>" not in md and "\\<b\\>" in md and "\\[link\\]" in md and "\n# " not in md.split("\n", 1)[1]
