"""What the graph watch costs a process's first capture (run on the H200):
    python benchmarks/graphs/probe_first.py
Prints the first capture of a Linear layer with the watch on, in a fresh process without
torch.compile loaded, and the eager launch cost with the watch on and off."""
import sys
import time

import torch

x = torch.randn(1, 64, device="cuda")
lin = torch.nn.Linear(64, 64).cuda()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    lin(x)
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
import kernelscope as ks  # noqa: E402


def capture():
    g = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    t = time.perf_counter()
    with torch.cuda.graph(g):
        lin(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3, g


if sys.argv[1:] == ["off"]:
    print(f"first capture, watch off: {capture()[0]:.1f} ms")
else:
    w = ks.watch_graphs()
    ms, g = capture()
    print(f"first capture, watch on: {ms:.1f} ms (torch's compiler loaded before: no); "
          f"ops: {[n.get('op') for n in w.records[-1]['nodes']]}")
    print(f"second capture, watch on: {capture()[0]:.1f} ms")
