"""What a displayed report weighs: in the saved notebook, and in JavaScript JupyterLab fetches.

    python benchmarks/notebook_weight.py
    python benchmarks/notebook_weight.py --baseline DIR      # an earlier kernelscope beside ours

Side by side in one run, for this checkout and (``--baseline``) an earlier kernelscope tree:

* bundle: the anywidget module (``kernelscope/static/widget.js``) that every displayed report's
  widget state holds, and the report view for plain pages (``report.js``);
* notebook growth: a notebook that shows real H200 recordings (one cell each), executed by
  nbclient with widget state saved (``store_widget_state=True``, what ``jupyter nbconvert
  --execute`` and papermill do), minus the same notebook with the reports loaded but not shown;
  and, per report, what its output and its widget state hold;
* JupyterLab start: the bytes of kernelscope's extension JavaScript fetched when JupyterLab
  opens a notebook with no report, then when it first shows a saved report (headless chromium);
* JupyterLab reload: three report cells run ``--reruns`` times each with a live kernel, then one
  page reload: the websocket bytes the page receives (every open widget is sent again).

A baseline tree is an earlier commit with its front end built, run by this Python through
PYTHONPATH (and JUPYTER_PATH for its JupyterLab extension)::

    git archive COMMIT kernelscope js install.json | tar -x -C DIR   # add magics before 9df6bbf
    (cd DIR/js && npm install && node esbuild.config.mjs && npm run build:lab)

Prints tables and writes benchmarks/out/notebook_weight.json.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
DATA = ROOT / "tests" / "data"
TRACES = ["attention.pt.trace.json.gz", "mlp_train.pt.trace.json.gz", "conv_net.pt.trace.json.gz",
          "launch_bound.pt.trace.json.gz", "wild/gpt2_infer.pt.trace.json.gz", "wild/bert_infer.pt.trace.json.gz",
          "wild/llama_train.pt.trace.json.gz", "wild/resnet50_train.pt.trace.json.gz"]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
MIME = "application/vnd.kernelscope.report.v1+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# Runs in the measured environment: executes the notebook, writes it, prints nothing else.
DRIVER = r"""
import sys, nbformat
from nbclient import NotebookClient
traces, shown, out, data = sys.argv[1].split(","), sys.argv[2] == "1", sys.argv[3], sys.argv[4]
nb = nbformat.v4.new_notebook()
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
cells = ["import kernelscope as ks"] + [f"r{i} = ks.load({t!r})" for i, t in enumerate(traces)]
cells += [f"r{i}" if shown else f"r{i};" for i in range(len(traces))]
nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
               resources={"metadata": {"path": data}}).execute()
nbformat.write(nb, out)
"""


def environment(baseline: pathlib.Path | None, tmp: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if baseline is not None:
        # (a baseline from before the layout step keeps its IPython layer in magics/)
        env["PYTHONPATH"] = os.pathsep.join([str(baseline), str(baseline / "magics")])
        share = tmp / "baseline-share" / "labextensions"
        share.mkdir(parents=True, exist_ok=True)
        link = share / "kernelscope"
        if not link.exists():
            link.symlink_to(baseline / "kernelscope" / "labextension")
        env["JUPYTER_PATH"] = str(share.parent)
    return env


def notebook_growth(env: dict, tmp: pathlib.Path, tag: str) -> dict:
    paths = {}
    for shown in (True, False):
        out = tmp / f"{tag}_{'shown' if shown else 'hidden'}.ipynb"
        subprocess.run([sys.executable, "-c", DRIVER, ",".join(TRACES), "1" if shown else "0", str(out), str(DATA)],
                       env=env, check=True, capture_output=True)
        paths[shown] = out
    nb = json.loads(paths[True].read_text())
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    reports = []
    for cell, trace in zip(nb["cells"][-len(TRACES):], TRACES):
        (o,) = [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
        d = o["data"]
        row = {"trace": trace, "mime": _size(d.get(MIME)), "html": _size(d.get("text/html")),
               "text": _size(d.get("text/plain")), "output": _size(o)}
        model_id = (d.get(WIDGET_VIEW) or {}).get("model_id")
        model = state.get(model_id, {})
        s = model.get("state", {})
        layout = state.get(str(s.get("layout", "")).removeprefix("IPY_MODEL_"), {})
        row["esm"] = _size(s.get("_esm")) if s else 0
        row["css"] = _size(s.get("_css")) if s else 0
        row["widget_data"] = _size(s.get("header")) + sum(_size(b) for b in model.get("buffers", [])) if s else 0
        row["widget_state"] = _size(model) + _size(layout) if model else 0
        row["total"] = row["output"] + row["widget_state"]
        reports.append(row)
    grow = (paths[True].stat().st_size - paths[False].stat().st_size) / len(TRACES)
    return {"file_shown": paths[True].stat().st_size, "file_hidden": paths[False].stat().st_size,
            "per_report": grow, "reports": reports}


def _size(x) -> int:
    return 0 if x is None else len(json.dumps(x))


def bundle_sizes(tree: pathlib.Path) -> dict:
    static = tree / "kernelscope" / "static"
    lab = tree / "kernelscope" / "labextension" / "static"
    return {"widget_js": (static / "widget.js").stat().st_size,
            "widget_css": (static / "widget.css").stat().st_size if (static / "widget.css").exists() else 0,
            "report_js": (static / "report.js").stat().st_size,
            "labextension_js": sum(p.stat().st_size for p in lab.glob("*.js")) if lab.exists() else 0}


@contextlib.contextmanager
def jupyterlab(env: dict, root: pathlib.Path, cfg: pathlib.Path):
    """A JupyterLab serving ``root`` on 127.0.0.1 (its own config dir: no announcements, no
    workspace); yields (url, token)."""
    root.mkdir(exist_ok=True)
    (cfg / "labconfig").mkdir(parents=True, exist_ok=True)
    (cfg / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    token, port = uuid.uuid4().hex, _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.allow_root=True"],
        cwd=root, env=dict(env, JUPYTER_CONFIG_DIR=str(cfg), JUPYTERLAB_SETTINGS_DIR=str(cfg / "s"),
                           JUPYTERLAB_WORKSPACES_DIR=str(cfg / "w")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, token)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def lab_start(env: dict, tmp: pathlib.Path, tag: str, saved: pathlib.Path, static: pathlib.Path) -> dict:
    """Bytes of /lab/extensions/kernelscope/*.js fetched (sizes of the served files, from
    ``static``): opening a notebook with no report, then opening one that shows a saved report."""
    from playwright.sync_api import sync_playwright
    root = tmp / f"{tag}-root"
    root.mkdir(exist_ok=True)
    (root / "empty.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    shutil.copy(saved, root / "saved.ipynb")
    with jupyterlab(env, root, tmp / f"{tag}-cfg") as (url, token):
        got = {"files_start": [], "files_report": []}
        phase = ["start"]
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = b.new_page(viewport={"width": 1400, "height": 900})

            def on_request(r):
                if "/lab/extensions/kernelscope/static/" in r.url and r.url.split("?")[0].endswith(".js"):
                    got[f"files_{phase[0]}"].append(r.url.rsplit("/", 1)[1].split("?")[0])
            page.on("request", on_request)
            page.goto(f"{url}/lab/tree/empty.ipynb?token={token}&reset")
            page.wait_for_selector(".jp-Notebook", timeout=120_000)
            page.wait_for_timeout(3000)         # let lazy plugins settle
            phase[0] = "report"
            page.goto(f"{url}/lab/tree/saved.ipynb?token={token}&reset")
            dialog = page.locator(".jp-Dialog")
            dialog.wait_for(timeout=60_000)
            dialog.locator("button.jp-mod-reject").click()
            page.locator(".ks-root").first.wait_for(timeout=60_000)
            b.close()
    for ph in ("start", "report"):
        got[ph] = sum((static / f).stat().st_size for f in set(got[f"files_{ph}"]))
    return got


def lab_reload(env: dict, tmp: pathlib.Path, tag: str, reruns: int) -> dict:
    """Three report cells, each run ``reruns`` times in JupyterLab with a live kernel, then one
    page reload: the websocket bytes the page receives until the reports show again (the
    kernel's open widgets are sent to the new page)."""
    from playwright.sync_api import sync_playwright
    root = tmp / f"{tag}-reload-root"
    root.mkdir(exist_ok=True)
    traces = TRACES[:3]
    for trace in traces:
        shutil.copy(DATA / trace, root / pathlib.Path(trace).name)
    cells = [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [], "execution_count": None,
              "source": f"import kernelscope as ks\nks.load({pathlib.Path(tr).name!r})"} for i, tr in enumerate(traces)]
    (root / "reports.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}))
    idle = "() => (document.querySelector('#jp-main-statusbar')?.textContent || '').includes('Idle')"
    with jupyterlab(env, root, tmp / f"{tag}-reload-cfg") as (url, token), sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{url}/lab/tree/reports.ipynb?token={token}&reset")
        page.wait_for_function(idle, timeout=120_000)
        for _ in range(reruns):
            for i in range(len(traces)):
                cell = page.locator(".jp-Notebook .jp-Cell").nth(i)
                cell.locator(".jp-InputPrompt").click()
                page.keyboard.press("Escape")
                page.keyboard.press("Control+Enter")
                page.wait_for_timeout(300)
                page.wait_for_function(idle, timeout=120_000)
                cell.locator(".ks-root").first.wait_for(timeout=120_000)
        page.keyboard.press("Control+s")      # the outputs come back with the page
        page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=60_000)
        frames = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(len(data))))
        t0 = time.perf_counter()
        page.reload()
        page.wait_for_function(f"() => document.querySelectorAll('.jp-Notebook .ks-root .ks-row').length > 0 && "
                               f"document.querySelectorAll('.jp-Notebook .ks-root').length >= {len(traces)}",
                               timeout=180_000)
        shown_s = time.perf_counter() - t0
        page.wait_for_timeout(3000)
        b.close()
    return {"runs": reruns * len(traces), "reload_bytes": sum(frames), "largest_frame": max(frames, default=0),
            "frames": len(frames), "reports_shown_s": shown_s}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url, token, timeout=90):
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"}),
                                   timeout=5)
            return
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=pathlib.Path, help="an earlier kernelscope tree with its front end built")
    ap.add_argument("--skip-lab", action="store_true", help="leave out the JupyterLab measurements")
    ap.add_argument("--reruns", type=int, default=4, help="runs of each of the three report cells before the reload")
    a = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    runs = [("ours", ROOT, None)] + ([("baseline", a.baseline.resolve(), a.baseline.resolve())] if a.baseline else [])
    results = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        for tag, tree, base in runs:
            env = environment(base, tmp)
            r = {"bundle": bundle_sizes(tree), "notebook": notebook_growth(env, tmp, tag)}
            if not a.skip_lab:
                saved = ROOT / "tests" / "ui" / "notebooks" / ("saved_report.ipynb" if base is None else "saved_report_v1.ipynb")
                r["lab"] = lab_start(env, tmp, tag, saved, tree / "kernelscope" / "labextension" / "static")
                r["reload"] = lab_reload(env, tmp, tag, a.reruns)
            results[tag] = r
    (OUT / "notebook_weight.json").write_text(json.dumps(results, indent=1))
    tags = list(results)
    kb = lambda v: f"{v / 1e3:,.1f} KB"   # noqa: E731
    print("bundle (bytes on disk)      " + "".join(f"{t:>14}" for t in tags))
    for key in ("widget_js", "widget_css", "report_js", "labextension_js"):
        print(f"  {key:<25} " + "".join(f"{kb(results[t]['bundle'][key]):>14}" for t in tags))
    print(f"\nsaved notebook, {len(TRACES)} reports shown (nbclient, widget state saved)")
    for key, label in (("file_shown", "file with the reports shown"), ("file_hidden", "same, reports not shown"),
                       ("per_report", "growth per displayed report")):
        print(f"  {label:<28}" + "".join(f"{kb(results[t]['notebook'][key]):>14}" for t in tags))
    print("\nper report, KB (output: MIME entry + HTML + text; widget: its saved state)")
    print(f"  {'':<36}" + "".join(f"| {t:<29}" for t in tags))
    print(f"  {'trace':<36}" + "".join(f"| {'MIME':>6}{'HTML':>6}{'widget':>8}{'total':>8} " for _ in tags))
    for i, trace in enumerate(TRACES):
        cells = []
        for t in tags:
            r = results[t]["notebook"]["reports"][i]
            cells.append(f"| {r['mime'] / 1e3:>6.1f}{r['html'] / 1e3:>6.1f}{r['widget_state'] / 1e3:>8.1f}{r['total'] / 1e3:>8.1f} ")
        print(f"  {trace:<36}" + "".join(cells))
    if not a.skip_lab:
        print("\nJupyterLab: kernelscope extension JS fetched")
        for key, label in (("start", "a notebook with no report"), ("report", "a notebook with a saved report")):
            print(f"  {label:<30}" + "".join(f"{kb(results[t]['lab'][key]):>14}" for t in tags))
        runs = results[tags[0]]["reload"]["runs"]
        print(f"\nJupyterLab page reload after 3 report cells ran {runs // 3} times each (live kernel)")
        for key, label in (("reload_bytes", "websocket bytes received"), ("largest_frame", "largest message")):
            print(f"  {label:<30}" + "".join(f"{kb(results[t]['reload'][key]):>14}" for t in tags))
        print(f"  {'reports shown again after':<30}" + "".join(f"{results[t]['reload']['reports_shown_s']:>13.1f}s" for t in tags))


if __name__ == "__main__":
    main()
