"""Record onnxruntime-web runs of a small MLP in headless Chromium, WebGPU and WASM.

    python benchmarks/onnxruntime/webgpu_record.py DIST [--chromium /usr/bin/chromium] [--out DIR]

DIST is onnxruntime-web's ``dist`` folder (``npm install onnxruntime-web`` somewhere outside
the repository: ``node_modules/onnxruntime-web/dist``). The script builds the model with the
``onnx`` package, serves DIST and the model from a temporary folder on 127.0.0.1 (WebGPU needs a
secure context: localhost is one), opens the page in headless Chromium with WebGPU allowed, and
runs the model with executionProviders ['webgpu'] (JSEP build, ``ort.all.min.mjs``), ['wasm'],
and (``--ep webgpu-native``) ['webgpu'] on the C++ WebGPU EP (``ort.webgpu.min.mjs``).

What it writes (one JSON file per provider, ``webgpu_mlp.<ep>.ortweb.json``; its top level says
``"format": "onnxruntime-web"``, which ``ks.load`` reads: kernelscope/trace/onnxruntime_web.py):
the adapter's info
and features, onnxruntime-web's version, the Chromium flags and version, the per-kernel records
of ``ort.env.webgpu.profiling`` (``ondata``: kernelType, kernelName, programName, start/end in
ns from GPU timestamp queries, input/output dims), the session's own profile (``enableProfiling``:
what ORT's profiler prints to the console in a WebAssembly build), and each run's wall time.
If the browser offers no adapter it says so and exits 2, writing nothing for WebGPU.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import pathlib
import shutil
import sys
import tempfile
import threading

FLAGS = ["--headless", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
         "--use-webgpu-adapter=swiftshader", "--disable-vulkan-surface"]
RUNS = 5

# ort.all.min.mjs runs 'webgpu' on JSEP (kernels written in JS/WGSL, per-kernel GPU timestamps
# through env.webgpu.profiling); ort.webgpu.min.mjs runs it on the C++ WebGPU EP (Dawn in wasm).
BUNDLES = {"webgpu": "ort.all.min.mjs", "wasm": "ort.all.min.mjs", "webgpu-native": "ort.webgpu.min.mjs"}
PAGE = """<!doctype html><meta charset=utf-8><script type=module>
const bundle = new URLSearchParams(location.search).get('bundle');
window.ort = await import('/dist/' + bundle);
window.ready = true;
</script>"""

RUN_JS = """async ([ep, runs]) => {
  const ort = window.ort;
  const native = ep === 'webgpu-native';
  if (native) ep = 'webgpu';
  ort.env.wasm.wasmPaths = '/dist/';
  ort.env.wasm.numThreads = 1;
  const out = {format: 'onnxruntime-web', formatVersion: 1, ep: native ? 'webgpu-native' : ep,
               ortVersion: ort.env.versions, kernels: [], runs: [], console: []};
  if (ep === 'webgpu') {
    if (!navigator.gpu) return {error: 'navigator.gpu is undefined (WebGPU not exposed)'};
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return {error: 'navigator.gpu.requestAdapter() returned null'};
    const i = adapter.info || {};
    out.adapter = {vendor: i.vendor, architecture: i.architecture, device: i.device,
                   description: i.description, features: [...adapter.features].sort()};
    ort.env.webgpu.profiling = {mode: 'default', ondata: (d) => out.kernels.push(d)};
  }
  const session = await ort.InferenceSession.create('/model.onnx',
      {executionProviders: [ep], enableProfiling: true, logSeverityLevel: 2});
  const x = new ort.Tensor('float32', Float32Array.from({length: 8 * 64}, (_, k) => (k % 13) / 13 - 0.5), [8, 64]);
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    const res = await session.run({x});
    const y = await res.y.getData();
    const top = await res.top.getData();
    out.runs.push({wallMs: performance.now() - t0, ySum: y.reduce((a, b) => a + b, 0),
                   top0: Array.from(top.slice(0, 3))});
  }
  await new Promise((ok) => setTimeout(ok, 500));  // the last timestamp readback is async
  session.endProfiling();
  await new Promise((ok) => setTimeout(ok, 200));
  await session.release();
  return out;
}"""


def build_model(path: pathlib.Path) -> None:
    """x[8,64] -> MatMul -> Add -> Relu -> MatMul -> Add -> Softmax -> y[8,10]; TopK(y, 3) -> top.

    TopK has no JSEP (WebGPU) kernel in onnxruntime-web, so it falls back to the CPU (WASM)
    provider: the recording shows a placement with a copy between the two.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.1, n)
             for n, s in [("w1", (64, 128)), ("b1", (128,)), ("w2", (128, 10)), ("b2", (10,))]]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1_matmul"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_add"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2_matmul"),
             helper.make_node("Add", ["h3", "b2"], ["h4"], name="fc2_add"),
             helper.make_node("Softmax", ["h4"], ["y"], name="softmax", axis=-1),
             helper.make_node("TopK", ["y", "k"], ["top", "top_idx"], name="topk", axis=-1)]
    inits.append(numpy_helper.from_array(np.array([3], dtype=np.int64), "k"))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10]),
                               helper.make_tensor_value_info("top", TensorProto.FLOAT, [8, 3]),
                               helper.make_tensor_value_info("top_idx", TensorProto.INT64, [8, 3])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root: pathlib.Path):
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def record(dist: pathlib.Path, chromium: str, ep: str, root: pathlib.Path, port: int) -> dict:
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page()
        lines: list[str] = []
        page.on("console", lambda m: lines.append(m.text))
        page.goto(f"http://127.0.0.1:{port}/index.html?bundle={BUNDLES[ep]}")
        page.wait_for_function("window.ready === true", timeout=60_000)
        out = page.evaluate(RUN_JS, [ep, RUNS])
        out["console"] = lines
        out["chromium"] = {"version": browser.version, "flags": FLAGS}
        browser.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dist", type=pathlib.Path, help="onnxruntime-web's dist folder")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("tests/data/onnxruntime"))
    ap.add_argument("--ep", nargs="+", default=["webgpu", "wasm"], choices=list(BUNDLES))
    args = ap.parse_args(argv)
    if not (args.dist / "ort.all.min.mjs").is_file():
        sys.exit(f"{args.dist}: no ort.all.min.mjs here; pass node_modules/onnxruntime-web/dist")
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        shutil.copytree(args.dist, root / "dist", ignore=shutil.ignore_patterns("*.map"))
        (root / "index.html").write_text(PAGE)
        build_model(root / "model.onnx")
        httpd = serve(root)
        try:
            for ep in args.ep:
                out = record(args.dist, args.chromium, ep, root, httpd.server_address[1])
                if "error" in out:
                    print(f"{ep}: FAILED: {out['error']} (chromium flags: {' '.join(FLAGS)})",
                          file=sys.stderr)
                    failed = 2
                    continue
                out["model"] = ("mlp: x[8,64] MatMul Add Relu MatMul Add Softmax -> y[8,10]; "
                                "TopK(y, 3) -> top[8,3]")
                path = args.out / f"webgpu_mlp.{ep}.ortweb.json"
                path.write_text(json.dumps(out, indent=1) + "\n")
                print(f"{ep}: {len(out['kernels'])} kernel records, {len(out['console'])} console "
                      f"lines, runs {[round(r['wallMs'], 2) for r in out['runs']]} ms -> {path}")
        finally:
            httpd.shutdown()
    return failed


if __name__ == "__main__":
    sys.exit(main())
