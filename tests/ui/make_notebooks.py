"""Writes the notebooks the browser tests open (run from the repository root; committed output).

``saved_report.ipynb`` is executed by a real kernel (nbclient), so its saved outputs are exactly
what a user's notebook holds after ``rep`` or ``%%kernelprofile``: the widget view (dead once
the kernel is gone), our report MIME type, static HTML and text.

``saved_report_v1.ipynb`` is not written here: it is the same notebook as saved by kernelscope
before the packed MIME payload (plain JSON header beside the gzipped columns), kept as it was so
the tests prove that notebooks saved then still render.

    python tests/ui/make_notebooks.py
"""
from __future__ import annotations

import pathlib
import shutil
import tempfile

import nbformat
from nbclient import NotebookClient

HERE = pathlib.Path(__file__).parent
OUT = HERE / "notebooks"
DATA = HERE.parent / "data"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def notebook(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = []
    for i, src in enumerate(cells):
        c = nbformat.v4.new_code_cell(src)
        c.id = f"cell-{i}"
        nb.cells.append(c)
    return nb


def main():
    OUT.mkdir(exist_ok=True)
    live = notebook([
        'import kernelscope as ks\nrep = ks.load("mlp_train.pt.trace.json.gz")\nw = rep.widget()\nw',
        "rep",
        'print("SELECTED", sorted(w.selection), w.selected.shape)',
    ])
    nbformat.write(live, OUT / "live_report.ipynb")

    lifecycle = notebook([
        'import kernelscope as ks\nrep = ks.load("mlp_train.pt.trace.json.gz")\nrep',
        "rep",
        "from ipywidgets.widgets.widget import _instances\nfrom kernelscope.view.widget import ReportWidget\n"
        'print("OPEN", sum(isinstance(w, ReportWidget) and w.comm is not None for w in list(_instances.values())))',
    ])
    nbformat.write(lifecycle, OUT / "lifecycle.ipynb")

    charts = notebook([
        'import kernelscope as ks\nrep = ks.load("mlp_train.pt.trace.json.gz")\nrep.chart("backends")',
        'rep.chart("kernels", top=10)',
        'rep.chart("timeline")',
        'rep.chart("occupancy", kernel="nvjet")',
        'ks.compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz")).chart()',
    ])
    nbformat.write(charts, OUT / "charts.ipynb")

    # Every load counts as long here (the test trace reads in well under the default 2 s).
    progress = notebook([
        'import os\nos.environ["KERNELSCOPE_PROGRESS"] = "0"\nimport kernelscope as ks\n'
        'rep = ks.load("graphs.pt.trace.json.gz")\nprint("LOADED", len(rep.kernels))',
    ])
    nbformat.write(progress, OUT / "load_progress.ipynb")

    # A report past the view's launch budget (lowered so that a real recording passes it).
    windowed = notebook([
        'import kernelscope as ks\nfrom kernelscope.view import report as view\nview.VIEW_LAUNCHES = 40\n'
        'rep = ks.load("mlp_train.pt.trace.json.gz")\nrep',
    ])
    nbformat.write(windowed, OUT / "windowed_report.ipynb")

    profile = notebook([
        "import torch\nx = torch.randn(128, 128)\nfor _ in range(3):\n    y = (x @ x).relu()\ny.shape",
    ])
    nbformat.write(profile, OUT / "profile_cell.ipynb")

    saved = notebook(['import kernelscope as ks\nks.load("attention.pt.trace.json.gz")'])
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(DATA / "attention.pt.trace.json.gz", tmp)
        NotebookClient(saved, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp}}).execute()
    # A reader's copy: no widget state saved, as when the kernel has gone away; no kernelspec,
    # so that JupyterLab asks for a kernel (the test answers "No Kernel") instead of starting one.
    saved.metadata.pop("widgets", None)
    saved.metadata.pop("kernelspec", None)
    saved.metadata.pop("language_info", None)
    nbformat.write(saved, OUT / "saved_report.ipynb")


if __name__ == "__main__":
    main()
