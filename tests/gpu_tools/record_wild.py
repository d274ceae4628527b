"""Record real-world Kineto traces on a GPU (run on the device machine, not in CI).

Each workload is something a user runs and nobody here wrote: JAX next to torch, CuPy's and
torch's library calls (cuFFT, cuSOLVER, cuSPARSE, cuRAND, CUB), Helion, timm / transformers /
torchvision models built from their configs with random weights, a torch.compile model.

    python tests/gpu_tools/record_wild.py NAME OUTDIR      # writes OUTDIR/NAME.pt.trace.json.gz
    python tests/gpu_tools/record_wild.py list

The tests in tests/analysis/test_backends.py hold the hand labels of every kernel these traces contain.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("HELION_AUTOTUNE_EFFORT", "none")


def _torch():
    import torch
    torch.manual_seed(0)
    torch.cuda.init()
    return torch


def jax_in_torch():
    torch = _torch()
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x, w, b):
        h = jax.nn.gelu(x @ w + b)
        return (h * h).sum(axis=-1), jnp.max(h, axis=0), jnp.cumsum(h[:, :8], axis=1)

    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (2048, 1024), dtype=jnp.float32)
    w = jax.random.normal(key, (1024, 1024), dtype=jnp.float32)
    b = jnp.ones((1024,), jnp.float32)
    t = torch.randn(1024, 1024, device="cuda")

    def step():
        out = f(x, w, b)
        jax.block_until_ready(out)
        return t @ t

    return step


def cupy_libs():
    _torch()
    import cupy as cp
    import cupyx.scipy.sparse as sp
    rs = cp.random.RandomState(0)
    a = rs.standard_normal((512, 512), dtype=cp.float32)
    spd = a @ a.T + 512 * cp.eye(512, dtype=cp.float32)
    sig = (rs.standard_normal(1 << 20) + 1j * rs.standard_normal(1 << 20)).astype(cp.complex64)
    img = rs.standard_normal((1024, 1024), dtype=cp.float32)
    m = sp.random(8192, 8192, density=0.001, format="csr", dtype=cp.float32, random_state=0)
    dense = rs.standard_normal((8192, 64), dtype=cp.float32)
    vec = rs.standard_normal(8192, dtype=cp.float32)
    coo = m.tocoo()

    def step():
        out = [cp.fft.fft(sig), cp.fft.rfft2(img), cp.fft.ifft(sig)]
        out += [m @ dense, m @ vec, coo.tocsr()]
        out += list(cp.linalg.qr(a)) + list(cp.linalg.svd(a[:256, :256]))
        out += list(cp.linalg.eigh(spd)) + [cp.linalg.solve(spd, a[:, :4]), cp.linalg.cholesky(spd),
                                           cp.linalg.inv(spd)]
        out += [cp.random.standard_normal((1 << 20,), dtype=cp.float32), cp.random.rand(1 << 20)]
        out += [cp.sum(img), cp.cumsum(img.ravel()), cp.sort(img.ravel()), cp.argmax(img)]
        cp.cuda.Device().synchronize()
        return out

    return step


def torch_libs():
    torch = _torch()
    a = torch.randn(512, 512, device="cuda")
    spd = a @ a.T + 512 * torch.eye(512, device="cuda")
    sig = torch.randn(1 << 20, device="cuda", dtype=torch.complex64)
    img = torch.randn(1024, 1024, device="cuda")
    idx = torch.randint(0, 8192, (2, 65536), device="cuda")
    coo = torch.sparse_coo_tensor(idx, torch.randn(65536, device="cuda"), (8192, 8192)).coalesce()
    csr = coo.to_sparse_csr()
    dense = torch.randn(8192, 64, device="cuda")
    v = torch.randn(1 << 22, device="cuda")

    def step():
        out = list(torch.linalg.qr(a)) + list(torch.linalg.svd(a[:256, :256]))
        out += list(torch.linalg.eigh(spd)) + [torch.linalg.solve(spd, a[:, :4]), torch.linalg.cholesky(spd),
                                              torch.linalg.inv(spd), torch.linalg.lstsq(a, a[:, :4]).solution]
        out += [torch.fft.fft(sig), torch.fft.rfft2(img), torch.fft.ifft(sig)]
        out += [torch.sparse.mm(csr, dense), csr @ dense[:, 0], coo.to_sparse_csr()]
        out += [torch.sort(v), torch.unique(v[:65536].round()), torch.cumsum(v, 0), torch.topk(v, 16),
                torch.nonzero(v > 2), torch.randn(1 << 20, device="cuda"), torch.multinomial(v[:1024].abs(), 64)]
        torch.cuda.synchronize()
        return out

    return step


def helion_kernels():
    torch = _torch()
    sys.path.insert(0, os.path.dirname(__file__))
    from helion_kernels import add, matmul
    x = torch.randn(1 << 22, device="cuda")
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)

    def step():
        return add(x, x), matmul(a, a), a @ a

    return step


def gpt2_infer():
    torch = _torch()
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config()).cuda().to(torch.bfloat16).eval()
    ids = torch.randint(0, 50257, (4, 128), device="cuda")

    def step():
        with torch.no_grad():
            return model(ids).logits

    return step


def llama_train():
    torch = _torch()
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                      num_key_value_heads=8, vocab_size=32000, max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, 32000, (4, 512), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def resnet50_train():
    torch = _torch()
    import timm
    model = timm.create_model("resnet50", num_classes=1000).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def vit_compiled():
    torch = _torch()
    import torchvision
    model = torchvision.models.vit_b_16().cuda().eval()
    cm = torch.compile(model)
    x = torch.randn(32, 3, 224, 224, device="cuda")

    def step():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            return cm(x)

    return step


def bert_infer():
    torch = _torch()
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig()).cuda().half().eval()
    ids = torch.randint(0, 30522, (8, 256), device="cuda")

    def step():
        with torch.no_grad():
            return model(ids).last_hidden_state

    return step


def compiled_maxautotune_free():
    """torch.compile of a small MLP with dynamic=False: Inductor's pointwise, reduction and
    persistent-reduction Triton kernels (``triton_poi_``/``triton_red_``/``triton_per_``)."""
    torch = _torch()

    def f(x, w, g):
        h = torch.nn.functional.silu(x @ w)
        h = torch.nn.functional.layer_norm(h, h.shape[-1:]) * g
        return h.softmax(-1).sum(0), (h * h).mean(), h.amax(1)

    cf = torch.compile(f)
    x = torch.randn(4096, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")
    g = torch.randn(1024, device="cuda")

    def step():
        return cf(x, w, g)

    return step


WORKLOADS = {f.__name__: f for f in [jax_in_torch, cupy_libs, torch_libs, helion_kernels, gpt2_infer,
                                      llama_train, resnet50_train, vit_compiled, bert_infer,
                                      compiled_maxautotune_free]}


def record(name, outdir):
    import torch
    from torch.profiler import ProfilerActivity, profile
    step = WORKLOADS[name]()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    path = os.path.join(outdir, f"{name}.pt.trace.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    with gzip.open(path + ".gz") as f:
        t = json.load(f)
    kernels = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
    print(name, "events", len(t["traceEvents"]), "kernels", len(kernels), flush=True)


def jax_own(outdir):
    """JAX's own profiler: jax.profiler.trace(..., create_perfetto_trace=True)."""
    import glob
    import tempfile

    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x, w, b):
        h = jax.nn.gelu(x @ w + b)
        return (h * h).sum(axis=-1), jnp.max(h, axis=0)

    @jax.jit
    def g(x):
        return jnp.fft.fft(x.astype(jnp.complex64)).real.sum() + jnp.sort(x[0])[0]

    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (2048, 1024), dtype=jnp.float32)
    w = jax.random.normal(key, (1024, 1024), dtype=jnp.float32)
    b = jnp.ones((1024,), jnp.float32)
    for _ in range(3):
        jax.block_until_ready((f(x, w, b), g(x)))
    d = tempfile.mkdtemp()
    with jax.profiler.trace(d, create_perfetto_trace=True):
        for _ in range(2):
            jax.block_until_ready((f(x, w, b), g(x)))
    found = glob.glob(os.path.join(d, "**", "perfetto_trace.json.gz"), recursive=True)
    print("jax_own", found, flush=True)
    if found:
        shutil.copy(found[0], os.path.join(outdir, "jax_own.perfetto_trace.json.gz"))


if __name__ == "__main__":
    if sys.argv[1] == "list":
        print(" ".join([*WORKLOADS, "jax_own"]))
    elif sys.argv[1] == "jax_own":
        jax_own(sys.argv[2])
    else:
        t0 = time.time()
        record(sys.argv[1], sys.argv[2])
        print(sys.argv[1], f"{time.time() - t0:.1f} s", flush=True)
