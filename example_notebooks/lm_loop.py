"""The workloads of notebook 9 (the same as ``benchmarks/training/record.py`` and the ``decode``
workload of ``benchmarks/graphs/record.py``, which recorded ``tests/data``'s H200 traces):

- :func:`make_lm_step`: one training step of a small transformer language model (AdamW, bf16
  autocast, a pinned batch copied in each step); ``leak=True`` keeps each step's loss and a copy
  of its logits, as a loop that logs tensors instead of numbers does;
- :class:`Decoder` and :func:`capture_decode_graphs`: a vLLM-style decode step over a static KV
  cache, captured as one CUDA graph per batch size.
"""
import torch


def make_lm_step(leak=False, device="cuda", vocab=8192, d=512, layers=4, heads=8, seq=256, batch=16):
    """A training step of a fresh model: embedding, ``layers`` pre-norm transformer blocks with a
    causal mask, the vocabulary head, cross-entropy, backward, fused AdamW.

    >>> step = make_lm_step(device="cpu", vocab=64, d=32, layers=1, heads=2, seq=8, batch=2)
    >>> step().item() > 0
    True
    """
    torch.manual_seed(0)
    nn = torch.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, dropout=0.0, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens):
            mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
            return self.head(self.blocks(self.embed(tokens), mask=mask, is_causal=True))

    model = LM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    data = torch.randint(0, vocab, (batch, seq + 1))
    data = data.pin_memory() if device == "cuda" else data
    kept = []

    def step():
        tokens = data.to(device, non_blocking=True)
        x, y = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if leak:
            kept.append(loss)                       # a tensor on the GPU, not loss.item()...
            kept.append(logits.detach().clone())    # ...and a copy of the logits "for later"
        return loss

    return step


class Decoder:
    """A decode step: embedding, ``layers`` blocks of (RMS norm, fused QKV, attention over a
    static KV cache, output projection, gated MLP), logits, for a batch of one token per sequence.

    >>> dec = Decoder(device="cpu", vocab=64, d=32, heads=2, layers=1, ctx=4)
    >>> cache = dec.cache(2)
    >>> dec.step(torch.tensor([1, 2]), cache).shape
    torch.Size([2, 64])
    """

    def __init__(self, device="cuda", vocab=32000, d=512, heads=8, layers=2, ctx=256):
        torch.manual_seed(0)
        nn = torch.nn
        self.device, self.vocab, self.d, self.heads, self.ctx = device, vocab, d, heads, ctx
        self.model = nn.ModuleDict({
            "embed": nn.Embedding(vocab, d),
            "layers": nn.ModuleList([nn.ModuleDict({
                "norm": nn.RMSNorm(d), "qkv": nn.Linear(d, 3 * d, bias=False),
                "o": nn.Linear(d, d, bias=False), "norm2": nn.RMSNorm(d),
                "up": nn.Linear(d, 4 * d, bias=False), "down": nn.Linear(2 * d, d, bias=False)})
                for _ in range(layers)]),
            "head": nn.Linear(d, vocab, bias=False)}).to(device).to(torch.bfloat16).eval()

    def cache(self, batch):
        """A random KV cache of ``ctx`` positions for up to ``batch`` sequences, per layer."""
        shape = (batch, self.heads, self.ctx, self.d // self.heads)
        return [(torch.randn(shape, device=self.device, dtype=torch.bfloat16),
                 torch.randn(shape, device=self.device, dtype=torch.bfloat16)) for _ in self.model["layers"]]

    def step(self, tokens, cache):
        m = self.model
        h = m["embed"](tokens)                                   # [B, d]
        for i, blk in enumerate(m["layers"]):
            x = blk["norm"](h)
            q, k, v = blk["qkv"](x).chunk(3, dim=-1)
            b = q.shape[0]
            q = q.view(b, self.heads, 1, -1)
            kc, vc = cache[i]
            kc[:b, :, -1] = k.view(b, self.heads, -1)
            vc[:b, :, -1] = v.view(b, self.heads, -1)
            a = torch.nn.functional.scaled_dot_product_attention(q, kc[:b], vc[:b])
            h = h + blk["o"](a.reshape(b, -1))
            g, u = blk["up"](blk["norm2"](h)).chunk(2, dim=-1)
            h = h + blk["down"](torch.nn.functional.silu(g) * u)
        return m["head"](h)


def capture_decode_graphs(dec, sizes=(1, 2, 4, 8)):
    """One CUDA graph of ``dec.step`` per batch size (each warmed up on a side stream first, as
    capturing needs): ``{batch: graph}``. The graphs read and write the cache and token buffers
    kept on ``dec.buffers``."""
    cache = dec.cache(max(sizes))
    graphs, inputs = {}, {}
    with torch.no_grad():
        for b in sizes:
            tokens = torch.randint(0, dec.vocab, (b,), device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    dec.step(tokens, cache)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                dec.step(tokens, cache)
            graphs[b], inputs[b] = g, tokens
    dec.buffers = (cache, inputs)
    return graphs
