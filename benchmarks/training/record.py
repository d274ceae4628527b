"""Record real training loops on a CUDA machine (the H200), for issue 43's step and memory views.

    python benchmarks/training/record.py OUT

Writes under OUT:
- ``lm_steps.pt.trace.json.gz``: a small transformer language model trained with AdamW under bf16
  autocast, a pinned-memory batch copied in each step, recorded by torch.profiler with
  ``schedule(wait=1, warmup=2, active=12)``, ``profile_memory=True``, shapes and stacks (the trace
  holds ProfilerStep#N ranges and the allocator's [memory] events);
- ``lm_memory.pickle``: ``torch.cuda.memory._snapshot()`` after 4 steps recorded with
  ``_record_memory_history`` (alloc/free events with their stacks);
- ``leak_steps.pt.trace.json.gz``: the same model whose loop keeps every step's loss tensor and a
  copy of one activation (memory grows each step);
- ``facts.json``: per-step wall times unprofiled, the allocator's peak and reserved bytes.
"""
from __future__ import annotations

import gzip
import json
import pickle
import shutil
import sys
import time
from pathlib import Path


def make(torch, vocab=8192, d=512, layers=4, heads=8, seq=256, batch=16):
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

    model = LM().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    data = torch.randint(0, vocab, (batch, seq + 1)).pin_memory()
    keep = []

    def step(leak=False):
        batch_ = data.to("cuda", non_blocking=True)
        x, y = batch_[:, :-1], batch_[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if leak:
            keep.append(loss)                       # keeps each step's graph-free loss...
            keep.append(logits.detach().clone())    # ...and a copy of its logits
        return loss
    return model, step


def _gz(path: Path):
    with path.open("rb") as f, gzip.open(str(path) + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    path.unlink()


def main(out: Path):
    import torch
    out.mkdir(parents=True, exist_ok=True)
    facts = {"torch": torch.__version__}
    _, step = make(torch)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    facts["unprofiled_step_ms"] = times
    P = torch.profiler
    sched = P.schedule(wait=1, warmup=2, active=12, repeat=1)
    trace = out / "lm_steps.pt.trace.json"
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA], schedule=sched,
                   record_shapes=True, profile_memory=True, with_stack=True,
                   on_trace_ready=lambda p: p.export_chrome_trace(str(trace))) as prof:
        for _ in range(16):
            step()
            prof.step()
    _gz(trace)
    torch.cuda.memory._record_memory_history(max_entries=200000)
    for _ in range(4):
        step()
    torch.cuda.synchronize()
    with (out / "lm_memory.pickle").open("wb") as f:
        pickle.dump(torch.cuda.memory._snapshot(), f)
    torch.cuda.memory._record_memory_history(enabled=None)
    facts["max_allocated"] = torch.cuda.max_memory_allocated()
    facts["max_reserved"] = torch.cuda.max_memory_reserved()
    _, leaky = make(torch)
    trace = out / "leak_steps.pt.trace.json"
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA],
                   schedule=P.schedule(wait=0, warmup=1, active=8, repeat=1), record_shapes=True,
                   profile_memory=True, with_stack=True,
                   on_trace_ready=lambda p: p.export_chrome_trace(str(trace))) as prof:
        for _ in range(9):
            leaky(leak=True)
            prof.step()
    _gz(trace)
    (out / "facts.json").write_text(json.dumps(facts, indent=1))
    print(json.dumps(facts), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
