"""A notebook full of reports stays light: executed by nbclient with widget state saved (as
``jupyter nbconvert --execute``, papermill and JupyterLab's "Save Widget State Automatically"
do), each displayed report adds at most 150 KB to the ``.ipynb`` (issue 15: it was ~1.2 MB, the
whole front end once per widget)."""
import json
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

from tests.view.test_widget import embedded_view

DATA = pathlib.Path(__file__).parent.parent / "data"
# Real H200 recordings, small to large (launch_bound: 2000 launches; gpt2_infer: GPT-2 inference).
TRACES = ["attention.pt.trace.json.gz", "mlp_train.pt.trace.json.gz", "launch_bound.pt.trace.json.gz",
          "conv_net.pt.trace.json.gz", "wild/gpt2_infer.pt.trace.json.gz"]
LIMIT = 150_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _execute(cells, tmp_path, name):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(DATA)}}).execute()
    path = tmp_path / name
    nbformat.write(nb, path)
    return path, nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("weight")
    load = ["import kernelscope as ks"] + [f"r{i} = ks.load({t!r})" for i, t in enumerate(TRACES)]
    shown, nb = _execute(load + [f"r{i}" for i in range(len(TRACES))], tmp, "shown.ipynb")
    hidden, _ = _execute(load + [f"r{i};" for i in range(len(TRACES))], tmp, "hidden.ipynb")
    return shown, hidden, nb


def test_each_displayed_report_adds_at_most_150_kb(executed):
    shown, hidden, nb = executed
    per_report = (shown.stat().st_size - hidden.stat().st_size) / len(TRACES)
    assert 0 < per_report <= LIMIT, f"{per_report / 1e3:.1f} KB per displayed report"
    # Each one, not only on average: its output plus the saved state of the widget models it made.
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    for cell, trace in zip(nb.cells[-len(TRACES):], TRACES):
        (out,) = cell.outputs
        model = state[out["data"][WIDGET_VIEW]["model_id"]]
        layout = state[model["state"]["layout"].removeprefix("IPY_MODEL_")]
        size = sum(len(json.dumps(x)) for x in (out, model, layout))
        assert size <= LIMIT, f"{trace}: {size / 1e3:.1f} KB"


def test_the_widget_state_was_saved_with_the_reports(executed):
    """The measurement includes the widgets: one saved model per report (its module, not its
    data, which the output's MIME entry holds once)."""
    _, _, nb = executed
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    reports = {k: m for k, m in state.items() if m["state"].get("_anywidget_id") == "kernelscope.view.widget.ReportWidget"}
    shown_ids = [o["data"][WIDGET_VIEW]["model_id"] for c in nb.cells for o in c.get("outputs", [])
                 if WIDGET_VIEW in o.get("data", {})]
    assert sorted(shown_ids) == sorted(reports) and len(reports) == len(TRACES)
    for m in reports.values():
        assert "ks-svg" in embedded_view(m["state"]["_esm"]) and len(m["state"]["_esm"].encode()) <= LIMIT
        assert not m.get("buffers") and "data" not in m["state"]


def test_each_output_still_carries_every_view(executed):
    """Light, yet nothing is lost: the MIME entry (no-kernel view), static HTML and text too."""
    _, _, nb = executed
    outs = [o for c in nb.cells[-len(TRACES):] for o in c["outputs"] if o["output_type"] == "execute_result"]
    assert len(outs) == len(TRACES)
    for o in outs:
        assert {"application/vnd.kernelscope.report.v1+json", "text/html", "text/plain", WIDGET_VIEW} <= set(o["data"])
        json.dumps(o["data"], allow_nan=False)
