"""Record CUDA graph workloads on a CUDA machine (the H200), for issue 42's tests and figures.

    python benchmarks/graphs/record.py OUT [--only NAME ...]

Each workload runs in this process with ``ks.watch_graphs()`` on (except ``no_watch``) and
writes, under OUT: NAME.pt.trace.json.gz (torch.profiler's own Kineto trace of the region, what a
user would load as a file), NAME.ks.json (the kernelscope report) and NAME.watch.json (the
watch's capture records). ``probe.json`` holds facts about the machine's torch and driver.
"""
from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from pathlib import Path


def _layer(torch, d=256, heads=4, ff=1024):
    layer = torch.nn.TransformerEncoderLayer(d, heads, ff, batch_first=True, dropout=0.0)
    return layer.cuda().to(torch.bfloat16).eval()


def _warm(torch, fn, n=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(n):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


class Decoder:
    """A vLLM-style decode step: embedding, two blocks of (RMS norm, fused QKV, attention over a
    static KV cache, output projection, gated MLP), logits; one CUDA graph per batch size."""

    def __init__(self, torch, vocab=32000, d=512, heads=8, layers=2, ctx=256):
        self.torch, self.d, self.heads, self.ctx = torch, d, heads, ctx
        nn = torch.nn
        self.model = nn.ModuleDict({
            "embed": nn.Embedding(vocab, d),
            "layers": nn.ModuleList([nn.ModuleDict({
                "norm": nn.RMSNorm(d), "qkv": nn.Linear(d, 3 * d, bias=False),
                "o": nn.Linear(d, d, bias=False), "norm2": nn.RMSNorm(d),
                "up": nn.Linear(d, 4 * d, bias=False), "down": nn.Linear(2 * d, d, bias=False)})
                for _ in range(layers)]),
            "head": nn.Linear(d, vocab, bias=False)}).cuda().to(torch.bfloat16).eval()

    def step(self, tokens, cache):
        torch, m = self.torch, self.model
        h = m["embed"](tokens)                                   # [B, d]
        for i, blk in enumerate(m["layers"]):
            x = blk["norm"](h)
            q, k, v = blk["qkv"](x).chunk(3, dim=-1)
            B = q.shape[0]
            q = q.view(B, self.heads, 1, -1)
            kc, vc = cache[i]
            kc[:B, :, -1] = k.view(B, self.heads, -1)
            vc[:B, :, -1] = v.view(B, self.heads, -1)
            a = torch.nn.functional.scaled_dot_product_attention(q, kc[:B], vc[:B])
            h = h + blk["o"](a.reshape(B, -1))
            g, u = blk["up"](blk["norm2"](h)).chunk(2, dim=-1)
            h = h + blk["down"](torch.nn.functional.silu(g) * u)
        return m["head"](h)


def decode_graphs(torch, dec, sizes):
    torch.manual_seed(0)
    maxb = max(sizes)
    hd = dec.d // dec.heads
    cache = [(torch.randn(maxb, dec.heads, dec.ctx, hd, device="cuda", dtype=torch.bfloat16),
              torch.randn(maxb, dec.heads, dec.ctx, hd, device="cuda", dtype=torch.bfloat16))
             for _ in dec.model["layers"]]
    graphs = {}
    with torch.no_grad():
        for b in sizes:
            tok = torch.randint(0, 32000, (b,), device="cuda")
            _warm(torch, lambda tok=tok: dec.step(tok, cache))
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = dec.step(tok, cache)
            graphs[b] = (g, tok, out)
    return graphs


def resnetish(torch):
    nn = torch.nn

    def block(c_in, c_out, stride):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out),
                             nn.ReLU(), nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(c_out), nn.ReLU())
    try:
        import torchvision
        return torchvision.models.resnet18().cuda().eval(), "torchvision resnet18"
    except Exception:  # noqa: BLE001 - any torchvision failure: the same shape of model by hand
        m = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                          block(64, 64, 1), block(64, 128, 2), block(128, 256, 2), block(256, 512, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))
        return m.cuda().eval(), "ResNet-like CNN (torchvision missing)"


def run(name, out: Path, body, *, watch=True):
    import torch

    import kernelscope as ks
    w = ks.watch_graphs(on=watch)
    n0 = len(w.records)
    pre = body["before"]() if "before" in body else None
    torch.cuda.synchronize()
    trace = out / f"{name}.pt.trace.json"
    t0 = time.perf_counter()
    with ks.profile(trace_path=str(trace), title=name) as p:
        body["region"](pre)
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    with trace.open("rb") as f, gzip.open(str(trace) + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    trace.unlink()
    p.report.save(str(out / f"{name}.ks.json"))
    (out / f"{name}.watch.json").write_text(json.dumps({"records": w.records[n0:] if watch else [],
                                                        "all_records": len(w.records), "errors": w.errors}))
    k = p.report.kernels
    print(f"{name}: {len(k)} kernels, {int(k['graph_launch'].sum())} from graphs, wall {wall:.2f}s, "
          f"captures recorded {len(w.records) - n0}, watch errors {w.errors[-3:]}", flush=True)


def workloads(torch):
    x = torch.randn(8, 64, 256, device="cuda", dtype=torch.bfloat16)
    w = {}

    def manual_in_region():
        layer = _layer(torch)
        with torch.no_grad():
            _warm(torch, lambda: layer(x))

        def region(_):
            g = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(g):
                layer(x)
            for _ in range(3):
                g.replay()
        return {"region": region}
    w["manual_in_region"] = manual_in_region

    def manual_warm_in_region():
        layer = _layer(torch)

        def region(_):
            with torch.no_grad():
                _warm(torch, lambda: layer(x))
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    layer(x)
            for _ in range(3):
                g.replay()
        return {"region": region}
    w["manual_warm_in_region"] = manual_warm_in_region

    def before_region():
        layer = _layer(torch)

        def before():
            with torch.no_grad():
                _warm(torch, lambda: layer(x))
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    layer(x)
            return g
        return {"before": before, "region": lambda g: [g.replay() for _ in range(3)]}
    w["before_region"] = before_region
    w["no_watch"] = before_region

    def decode():
        dec = Decoder(torch)
        order = [8, 1, 4, 2, 8, 1]
        return {"before": lambda: decode_graphs(torch, dec, [1, 2, 4, 8]),
                "region": lambda gs: [gs[b][0].replay() for b in order]}
    w["decode"] = decode

    def forked():
        a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)

        def step():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            y1 = a @ a
            with torch.cuda.stream(s):
                y2 = torch.relu(a) * 2
            torch.cuda.current_stream().wait_stream(s)
            return y1 + y2

        def before():
            _warm(torch, step)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                step()
            return g
        return {"before": before, "region": lambda g: [g.replay() for _ in range(3)]}
    w["forked"] = forked

    def compiled(capture_in_region):
        def make():
            model, what = resnetish(torch)
            print("model:", what, flush=True)
            f = torch.compile(model, mode="reduce-overhead")
            inp = torch.randn(8, 3, 224, 224, device="cuda")
            with torch.no_grad():
                f(inp)
                if not capture_in_region:
                    for _ in range(3):
                        f(inp)
            return f, inp

        def region(s):
            f, inp = s
            with torch.no_grad():
                for _ in range(3):
                    f(inp)
        return {"before": make, "region": region}
    def fp32(graph):
        a = torch.randn(4096, 4096, device="cuda")
        b = torch.randn(4096, 4096, device="cuda")

        def before():
            _warm(torch, lambda: a @ b)
            if not graph:
                return None
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                a @ b
            return g

        def region(g):
            for _ in range(5):
                g.replay() if graph else a @ b
        return {"before": before, "region": region}
    # The same fp32 GEMM eagerly and replayed from a graph: the same shape-based advice.
    w["fp32_eager"] = lambda: fp32(False)
    w["fp32_graph"] = lambda: fp32(True)
    w["compiled_capture_in_region"] = lambda: compiled(True)
    w["compiled_before_region"] = lambda: compiled(False)
    return w


def probe(out: Path):
    import torch

    from kernelscope.capture import graph_nodes
    lib = graph_nodes.driver()
    facts = {"torch": torch.__version__, "cuda": torch.version.cuda,
             "driver_calls": {n: bool(getattr(lib, n, None)) for n in (
                 "cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v2", "cuGraphGetNodes", "cuFuncGetName",
                 "cuKernelGetName", "cuGraphKernelNodeGetParams_v2", "cuGraphExecGetId", "cuGraphGetId",
                 "cuGraphNodeGetToolsId", "cuGraphNodeGetDependencies")},
             "raw_cuda_graph_exec": hasattr(torch.cuda.CUDAGraph, "raw_cuda_graph_exec")}
    try:
        import cuda.bindings
        facts["cuda_bindings"] = getattr(cuda.bindings, "__version__", "?")
    except Exception as e:  # noqa: BLE001 - a fact about the machine, whatever the failure
        facts["cuda_bindings"] = f"missing ({type(e).__name__})"
    # What the watch costs: 5,000 eager launches with it on and off, and one capture each way.
    import kernelscope as ks
    a = torch.randn(64, device="cuda")

    def loop():
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(5000):
            a.add_(1.0)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / 5000 * 1e6
    layer = _layer(torch)
    x = torch.randn(8, 64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        _warm(torch, lambda: layer(x))

    def capture():
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.no_grad(), torch.cuda.graph(g):
            layer(x)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3
    res = {}
    for on in (False, True, False, True, False, True):
        ks.watch_graphs(on=on)
        res.setdefault(f"launch_us_watch_{on}", []).append(loop())
        res.setdefault(f"capture_ms_watch_{on}", []).append(capture())
    facts["cost"] = res
    ks.watch_graphs(on=False)
    (out / "probe.json").write_text(json.dumps(facts, indent=1))
    print(json.dumps(facts), flush=True)


def main(argv):
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    only = argv[argv.index("--only") + 1:] if "--only" in argv else None
    import torch
    probe(out)
    for name, make in workloads(torch).items():
        if only and name not in only:
            continue
        try:
            run(name, out, make(), watch=(name != "no_watch"))
        except Exception as e:  # noqa: BLE001 - one workload's failure is reported, the others run
            import traceback
            traceback.print_exc()
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
