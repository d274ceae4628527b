"""First paint and payload of the report view for 1k, 10k and 100k launches, in headless chromium.

    python benchmarks/widget_render.py                 # 1k, 10k, 100k launches
    python benchmarks/widget_render.py --sizes 1000 10000
    python benchmarks/widget_render.py --baseline-js OLD/report.js   # also an earlier build


Traces are the real H200 MLP step (74 launches) tiled with tools/tile_trace.py (benchmarks/tiles.py) and
cached in benchmarks/out/. For each size, side by side in one run:

* ours: the MIME payload (JSON header + gzip/base64 typed-array columns) -> ``JSON.parse`` ->
  decode -> render (virtualized table) -> two animation frames, i.e. what JupyterLab does with
  a saved or live report output;
* per-row JSON: the kernels table as JSON records (``DataFrame.to_json(orient="records")``) ->
  ``JSON.parse`` -> one DOM row per launch -> two animation frames, the approach the issue rules out;
* with ``--baseline-js``: an earlier build of the view (``kernelscope/static/report.js`` of that
  version) on the payload layout it reads (the first one: plain JSON header beside the gzipped
  columns), timed the same way, e.g. the build before issue 15 (vega inside, 924 KB).

Also timed: Python's view-model encoding (after the analysis it reads is computed, which is
reported on its own line), a scroll of the table to its end, and a timeline redraw after zoom.
Prints a table and writes benchmarks/out/widget_render.json.
"""
from __future__ import annotations

import argparse
import base64
import functools
import gzip
import http.server
import json
import math
import pathlib
import statistics
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from tiles import tile_tool  # noqa: E402  (where tile_trace.py is)

SOURCE = ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
REPEAT = 3

PAGE = """<!doctype html><meta charset="utf-8"><body style="width:1300px">
<div id="root"></div>
<script type="module">
import { render } from "./__JS__";
window.loadMs = performance.now();   // page start to the view module evaluated
const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
window.runOurs = async (url) => {
  const text = await (await fetch(url)).text();
  const el = document.getElementById("root"); el.textContent = "";
  const t0 = performance.now();
  const ctl = await render(el, JSON.parse(text));
  await frames();
  const paint = performance.now() - t0;
  const body = el.querySelector(".ks-body");
  const t1 = performance.now();
  body.scrollTop = body.scrollHeight; body.dispatchEvent(new Event("scroll"));
  await frames();
  const scroll = performance.now() - t1;
  el.querySelector(".ks-tab[data-tab='Timeline']").click();
  await frames();
  const t2 = performance.now();
  ctl.timeline.zoom(0.5);
  const redraw = performance.now() - t2;
  const rows = el.querySelectorAll(".ks-row.ks-kernel").length;
  return { paint, scroll, redraw, rows, domRows: el.querySelectorAll(".ks-row").length };
};
window.runRows = async (url) => {
  const text = await (await fetch(url)).text();
  const el = document.getElementById("root"); el.textContent = "";
  const t0 = performance.now();
  const rows = JSON.parse(text);
  const cols = ["name", "backend", "start_us", "duration_us", "grid_x", "block_x", "registers_per_thread",
                "shared_mem_bytes", "theoretical_occupancy"];
  const table = document.createElement("table");
  const tbody = document.createElement("tbody");
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const c of cols) { const td = document.createElement("td"); td.textContent = r[c]; tr.append(td); }
    tbody.append(tr);
  }
  table.append(tbody); el.append(table);
  await frames();
  return { paint: performance.now() - t0, domRows: rows.length };
};
</script>"""


def tiled(launches: int) -> pathlib.Path:
    """A real trace tiled to about ``launches`` kernel launches (cached)."""
    import gzip
    OUT.mkdir(exist_ok=True)
    path = OUT / f"mlp_tiled_{launches}.pt.trace.json.gz"
    if path.exists():
        return path
    with gzip.open(SOURCE, "rt") as f:
        src = json.load(f)
    events = [e for e in src["traceEvents"] if e.get("ph") != "M"]
    per_copy = sum(1 for e in events if e.get("cat") == "kernel")
    copies = math.ceil(launches / per_copy)
    tool = tile_tool()
    subprocess.run([sys.executable, str(tool), str(SOURCE), str(path), "--events", str(copies * len(events))],
                   check=True)
    return path


def prepare(n: int, site: pathlib.Path) -> dict:
    import kernelscope as ks
    from kernelscope.view.bundle import mime_payload
    from kernelscope.view.report import view_model
    path = tiled(n)
    t = time.perf_counter()
    rep = ks.load(path)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    rep.findings, rep.roofline, rep.timeline, rep.backends  # noqa: B018 - computed once, cached
    analysis_s = time.perf_counter() - t
    t = time.perf_counter()
    model = view_model(rep)
    payload = mime_payload(rep, model)
    encode_s = time.perf_counter() - t
    ours = json.dumps(payload)
    rows = rep.kernels.to_json(orient="records")
    # The first payload layout (before issue 15), for an earlier build of the view.
    first = json.dumps({"header": model[0], "encoding": "gzip+base64",
                        "data": base64.b64encode(gzip.compress(model[1], compresslevel=6, mtime=0)).decode()})
    (site / f"ours_{n}.json").write_text(ours)
    (site / f"first_{n}.json").write_text(first)
    (site / f"rows_{n}.json").write_text(rows)
    return {"launches": len(rep.kernels), "kernels": int(rep.kernels["name"].nunique()),
            "load_s": load_s, "analysis_s": analysis_s, "encode_s": encode_s,
            "binary_bytes": len(model[1]), "header_bytes": len(json.dumps(model[0])),
            "mime_bytes": len(ours), "first_layout_bytes": len(first), "rows_json_bytes": len(rows)}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site: pathlib.Path):
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def measure(sizes, baseline_js=None, repeat=REPEAT):
    from playwright.sync_api import sync_playwright
    site = OUT / "site"
    site.mkdir(parents=True, exist_ok=True)
    bundle = ROOT / "kernelscope" / "static" / "report.js"
    if not bundle.exists():
        sys.exit("kernelscope/static/report.js missing: build the front end (cd js && npm run build)")
    (site / "report.js").write_bytes(bundle.read_bytes())
    (site / "index.html").write_text(PAGE.replace("__JS__", "report.js"))
    if baseline_js:
        (site / "before.js").write_bytes(pathlib.Path(baseline_js).read_bytes())
        (site / "before.html").write_text(PAGE.replace("__JS__", "before.js"))
    results = []
    for n in sizes:
        info = prepare(n, site)
        results.append({"size": n, **info})
    httpd = serve(site)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for r in results:
            ours, rows, before = [], [], []
            variants = [("Ours", "index", "ours", ours), ("Rows", "index", "rows", rows)]
            if baseline_js:
                variants.append(("Ours", "before", "first", before))
            for i in range(repeat):
                for kind, html, name, acc in variants:
                    if kind == "Rows" and i and r["size"] >= 100_000:
                        continue   # one run of the per-row table at 100k (about 90 s) is enough
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.goto(f"{url}/{html}.html")
                    page.wait_for_function(f"typeof window.run{kind} === 'function'")
                    res = page.evaluate(f"window.run{kind}('{name}_{r['size']}.json')")
                    res["load"] = page.evaluate("window.loadMs")
                    acc.append(res)
                    page.close()
            r["repeat"] = repeat
            r["ours_paint_ms"] = statistics.median(x["paint"] for x in ours)
            r["ours_scroll_ms"] = statistics.median(x["scroll"] for x in ours)
            r["ours_timeline_redraw_ms"] = statistics.median(x["redraw"] for x in ours)
            r["ours_dom_rows"] = ours[0]["domRows"]
            r["ours_module_ms"] = statistics.median(x["load"] for x in ours)
            r["rows_paint_ms"] = statistics.median(x["paint"] for x in rows)
            r["rows_dom_rows"] = rows[0]["domRows"]
            if before:
                r["before_paint_ms"] = statistics.median(x["paint"] for x in before)
                r["before_module_ms"] = statistics.median(x["load"] for x in before)
        browser.close()
    httpd.shutdown()
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--baseline-js", help="report.js of an earlier build, timed beside ours")
    ap.add_argument("--repeat", type=int, default=REPEAT, help=f"runs of each variant (median; default {REPEAT})")
    a = ap.parse_args(argv)
    results = measure(a.sizes, a.baseline_js, a.repeat)
    (OUT / "widget_render.json").write_text(json.dumps(results, indent=1))
    print(f"{'launches':>9} {'payload':>9} {'rows JSON':>10} {'size x':>7} {'paint':>9} {'rows paint':>11} "
          f"{'paint x':>8} {'scroll':>7} {'redraw':>7} {'encode':>7} {'analysis':>9}")
    for r in results:
        print(f"{r['launches']:>9,} {r['mime_bytes'] / 1e6:>7.2f}MB {r['rows_json_bytes'] / 1e6:>8.2f}MB "
              f"{r['rows_json_bytes'] / r['mime_bytes']:>6.1f}x {r['ours_paint_ms']:>7.0f}ms {r['rows_paint_ms']:>9.0f}ms "
              f"{r['rows_paint_ms'] / r['ours_paint_ms']:>7.1f}x {r['ours_scroll_ms']:>5.0f}ms "
              f"{r['ours_timeline_redraw_ms']:>5.0f}ms {r['encode_s']:>6.2f}s {r['analysis_s']:>8.2f}s")
    print("payload: our MIME entry (header + gzip/base64 columns); rows JSON: kernels as per-row records. "
          f"paint: parse + decode + render + 2 frames, median of {a.repeat} (per-row table at 100k: 1 run), headless chromium.")
    if a.baseline_js:
        print(f"\n{'launches':>9} {'payload':>9} {'earlier':>9} {'paint':>9} {'earlier':>9} {'ratio':>6} "
              f"{'module':>8} {'earlier':>8}")
        for r in results:
            print(f"{r['launches']:>9,} {r['mime_bytes'] / 1e6:>7.2f}MB {r['first_layout_bytes'] / 1e6:>7.2f}MB "
                  f"{r['ours_paint_ms']:>7.0f}ms {r['before_paint_ms']:>7.0f}ms {r['ours_paint_ms'] / r['before_paint_ms']:>6.2f} "
                  f"{r['ours_module_ms']:>6.0f}ms {r['before_module_ms']:>6.0f}ms")
        print(f"earlier: {a.baseline_js} on the first payload layout; module: page start to the view "
              "module evaluated (median).")


if __name__ == "__main__":
    main()
