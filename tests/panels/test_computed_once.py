"""Each panel is computed once per report, whichever outputs show it (issue 40): the text, the
static HTML, the altair charts and the browser payload format the panels of
``kernelscope.panels`` and ask the report's analyses nothing themselves."""
from __future__ import annotations

import ast
import collections
import functools
import pathlib

import pytest

import kernelscope as ks
from kernelscope import panels
from kernelscope.view.report import view_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
# The outputs of a Report: each only formats panels.
OUTPUTS = ["kernelscope/render/text.py", "kernelscope/render/html.py", "kernelscope/view/report.py",
           "kernelscope/view/bundle.py", "kernelscope/render/charts.py", "kernelscope/render/markdown.py"]
# What a Report computes from its tables (analyses): an output that reads one computes a panel again.
ANALYSES = {"summary", "findings", "timeline", "backends", "op_backends", "roofline", "op_summary", "op_tree",
            "gaps", "busy", "what_to_fix", "shapes", "stalls", "metrics", "time_base", "wall_time_us",
            "gpu_time_us"}


def _panel_names() -> list:
    return [n for n, v in vars(panels.Panels).items() if isinstance(v, functools.cached_property)]


@pytest.fixture
def counted(monkeypatch):
    """Every panel of ``kernelscope.panels.Panels`` and the report's kernel summary, counted."""
    calls = collections.Counter()
    for name in _panel_names():
        prop = vars(panels.Panels)[name]

        def make(fn, name=name):
            def counting(self):
                calls[name] += 1
                return fn(self)
            return counting
        new = functools.cached_property(make(prop.func))
        new.__set_name__(panels.Panels, name)
        monkeypatch.setattr(panels.Panels, name, new)
    import kernelscope.reports.report as report_module
    summary = report_module.kernel_summary

    def counting_summary(*a, **k):
        calls["kernel_summary"] += 1
        return summary(*a, **k)
    monkeypatch.setattr(report_module, "kernel_summary", counting_summary)
    return calls


@pytest.mark.parametrize("name", ["mlp_train.pt.trace.json.gz", "counters/live_counters.ksreport.json.gz"])
def test_every_output_of_a_report_computes_each_panel_once(counted, name):
    rep = ks.load(DATA / name, progress=False)
    bundle = rep._repr_mimebundle_()
    text, html = repr(rep), rep._repr_html_()
    shown = repr(rep.display(top=3)), rep.display(top=3)._repr_mimebundle_()
    view_model(rep, window=(0.0, None))
    rep.chart("kernels"), rep.chart("backends"), rep.chart("timeline")
    rep.to_markdown(), rep.first_screen()
    assert {"text/plain", "text/html", "application/vnd.kernelscope.report.v1+json"} <= set(bundle)
    assert bundle["text/plain"] == text and bundle["text/html"] == html and shown[0] != text
    # Every panel the outputs read was computed, and none of them twice.
    assert counted, "no panel was computed"
    assert max(counted.values()) == 1, dict(counted)
    assert {"header", "fixes", "findings", "kernel_table", "backends", "shapes", "kernel_summary"} <= set(counted)


def test_outputs_ask_the_report_for_no_analysis():
    for rel in OUTPUTS:
        tree = ast.parse((ROOT / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("kernelscope.analysis"), f"{rel}:{node.lineno} imports {node.module}"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("rep", "report"):
                assert node.attr not in ANALYSES, f"{rel}:{node.lineno} reads rep.{node.attr}: take it from its panel"
