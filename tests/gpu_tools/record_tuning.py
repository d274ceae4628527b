"""Record the tuning fixtures on a GPU (device machine, not CI): real autotunings, captured live.

    python tests/gpu_tools/record_tuning.py OUTDIR [triton] [inductor] [helion]

Writes, for each workload, the Kineto trace (``NAME.pt.trace.json.gz``) and the saved report
with the in-process tables (``NAME.ksreport.json.gz``), and prints what was captured:

- ``triton``: a user matmul autotuned over 12 configs in the region (one spills, two are capped
  by the block limit); a vector add tuned before the region at 4096 elements (a cache hit) and
  run at 16M; a kernel compiled twice with the same launch shape (its variant cannot be told).
- ``inductor``: ``torch.compile(mode="max-autotune-no-cudagraphs")`` of a Linear+ReLU compiled in
  the region (Inductor's template and cuBLAS choices), then run again in a second region.
- ``helion``: a Helion kernel tuned over three configs in the region.
- ``links``: a small fp16 MLP (two addmm shapes) compiled with max-autotune in the region, with
  the watch's range around each choice's benchmark (``inductor_links``): the choices' benchmark
  launches and the winners' compiled template kernels.
"""
from __future__ import annotations

import os
import sys
import time
import traceback

import torch

import kernelscope as ks

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "example_notebooks"))
sys.path.insert(0, HERE)


def _save(rep, out, name):
    p = rep.save(os.path.join(out, f"{name}.ksreport.json.gz"))
    print(f"saved {p}: {len(rep.kernels)} launches, {len(rep.autotune)} candidates, "
          f"{len(rep.trace.variants)} variants; tuning meta {rep.meta.get('tuning')}")
    cols = ["short_name", "producer", "num_warps", "num_stages", "config", "config_source", "spills",
            "registers_per_thread", "source_ops"]
    print(rep.kernels.drop_duplicates(["name", "config"])[cols].head(20).to_string(max_colwidth=60))
    if len(rep.autotune):
        print(rep.autotune[["kernel", "tuning", "shape_key", "config", "num_warps", "num_stages", "p50_ms",
                            "p20_ms", "p80_ms", "registers", "spills", "shared_mem_bytes",
                            "theoretical_occupancy", "occupancy_limiter", "winner", "cached"]]
              .head(40).to_string(max_colwidth=50))


def triton_workload(out):
    import triton
    import triton.language as tl
    from tuned_matmul import NAIVE_CONFIGS, make_matmul

    @triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in
                              ((128, 1), (256, 2), (1024, 4), (4096, 8))], key=[])
    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    @triton.jit
    def scale_kernel(x, out, n, BLOCK: tl.constexpr, NEG: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        v = tl.load(x + i, mask=m)
        tl.store(out + i, -v if NEG else v * 2.0, mask=m)

    def add(x, y):
        o = torch.empty_like(x)
        add_kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, y, o, x.numel())
        return o

    small = torch.randn(4096, device="cuda")
    add(small, small)                       # tuned here, before the region: a cache hit there
    torch.cuda.synchronize()
    mm = make_matmul(NAIVE_CONFIGS)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    big = torch.randn(1 << 24, device="cuda")
    o = torch.empty_like(big)
    t = time.perf_counter()
    with ks.profile(name="triton_tuning", trace_path=os.path.join(out, "triton_tuning.pt.trace.json.gz")) as p:
        for _ in range(3):
            mm(a, b)
        add(big, big)
        for neg in (False, True):
            scale_kernel[(triton.cdiv(big.numel(), 1024),)](big, o, big.numel(), BLOCK=1024, NEG=neg)
        torch.cuda.synchronize()
    print(f"triton region {time.perf_counter() - t:.1f} s")
    _save(p.report, out, "triton_tuning")
    # What this Triton exposes (the watch feature-detects each of these)
    jf = mm.kernel.fn
    ck = next(iter(jf.device_caches[0][0].values()), None) if hasattr(jf, "device_caches") else None
    print("facts: knobs.autotuning has listener:", hasattr(triton.knobs.autotuning, "listener"),
          "| CompiledKernel src:", type(getattr(ck, "src", None)).__name__,
          sorted(k for k in vars(getattr(ck, "src", None) or object())) if ck is not None else None,
          "| metadata fields:", getattr(getattr(ck, "metadata", None), "_fields", None),
          "| n_regs, n_spills:", getattr(ck, "n_regs", None), getattr(ck, "n_spills", None),
          "| configs_timings sample:", next(iter(getattr(mm.kernel, "configs_timings", {}).items()), None))


def inductor_workload(out):
    import torch._inductor.config as cfg
    import torch._inductor.select_algorithm  # noqa: F401 - imported so that "auto" watches it
    cfg.max_autotune_gemm_backends = "ATEN,TRITON"
    lin = torch.nn.Linear(1024, 1024, device="cuda")

    def f(x):
        return torch.relu(lin(x)) * 2.0
    g = torch.compile(f, mode="max-autotune-no-cudagraphs")
    x = torch.randn(1024, 1024, device="cuda")
    t = time.perf_counter()
    with torch.no_grad():
        with ks.profile(name="inductor_tuning", trace_path=os.path.join(out, "inductor_tuning.pt.trace.json.gz")) as p:
            g(x)
            torch.cuda.synchronize()
        print(f"inductor compile region {time.perf_counter() - t:.1f} s")
        _save(p.report, out, "inductor_tuning")
        with ks.profile(name="inductor_run", trace_path=os.path.join(out, "inductor_run.pt.trace.json.gz")) as p2:
            for _ in range(3):
                g(x)
            torch.cuda.synchronize()
    _save(p2.report, out, "inductor_run")


def links_workload(out):
    import torch._inductor.config as cfg
    import torch._inductor.select_algorithm  # noqa: F401 - imported so that "auto" watches it
    torch._dynamo.reset()
    cfg.max_autotune_gemm_backends = "ATEN,TRITON"
    cfg.force_disable_caches = True          # tuned here, in this process: its benchmarks in the trace
    tc = getattr(cfg, "test_configs", None)
    if hasattr(tc, "max_mm_configs"):        # a few templates per GEMM: a small fixture
        tc.max_mm_configs = 4
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(),
                              torch.nn.Linear(1024, 512)).to("cuda", torch.float16)
    x = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    g = torch.compile(mlp, mode="max-autotune-no-cudagraphs")
    t = time.perf_counter()
    path = os.path.join(out, "inductor_links.pt.trace.json.gz")
    with torch.no_grad(), ks.profile(name="inductor_links", trace_path=path) as p:
        g(x)
        torch.cuda.synchronize()
    print(f"links compile region {time.perf_counter() - t:.1f} s")
    rep = p.report
    _save(rep, out, "inductor_links")
    print(rep.autotune[["kernel", "tuning", "choice", "config", "num_warps", "num_stages", "p50_ms", "winner",
                        "launches", "benchmark_launches", "compiled_kernel", "note"]].to_string(max_colwidth=60))
    print(rep.trace.autotune[["kernel", "benchmark_range", "compiled_kernel"]].to_string(max_colwidth=70))


def helion_workload(out):
    import helion_tuning
    x = torch.randn(1 << 22, device="cuda")
    t = time.perf_counter()
    with ks.profile(name="helion_tuning", trace_path=os.path.join(out, "helion_tuning.pt.trace.json.gz")) as p:
        helion_tuning.scale_add(x, x)
        helion_tuning.scale_add(x, x)
        torch.cuda.synchronize()
    print(f"helion region {time.perf_counter() - t:.1f} s")
    _save(p.report, out, "helion_tuning")


def main(argv):
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    steps = argv[1:] or ["triton", "inductor", "helion"]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    try:
        import triton
        print(f"triton {triton.__version__}")
    except ImportError:
        pass
    rc = 0
    for s in steps:
        print(f"== {s}")
        t = time.perf_counter()
        try:
            {"triton": triton_workload, "inductor": inductor_workload, "helion": helion_workload,
             "links": links_workload}[s](out)
        except Exception:  # noqa: BLE001 - one workload failing must not lose the others
            traceback.print_exc()
            rc = 1
        print(f"== {s} done in {time.perf_counter() - t:.1f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
