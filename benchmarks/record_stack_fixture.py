"""Record tests/data/kernelprofile_stack.pt.trace.json.gz through %%kernelprofile --stack in a real IPython shell."""
import sys
import textwrap
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

out = sys.argv[1]
sh = InteractiveShell.instance()
sh.run_line_magic("load_ext", "kernelscope")
r = sh.run_cell(textwrap.dedent("""\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 1024)).cuda()
    x = torch.randn(256, 1024, device="cuda")
    def norm(t):
        return torch.nn.functional.layer_norm(t, t.shape[-1:])
    for _ in range(2):
        norm(model(x)).sum().backward()
    torch.cuda.synchronize()
    """))
assert r.success, r.error_in_exec
path = str(Path(out, "kernelprofile_stack.pt.trace.json.gz"))
r = sh.run_cell(f"%%kernelprofile --stack --trace {path} -o rep --no-display\n" + textwrap.dedent("""\
    y = model(x)
    z = norm(y)
    for _ in range(2):
        z = z * 0.5 + 1
    loss = z.float().pow(2).mean()
    loss.backward()
    """))
assert r.success, r.error_in_exec
rep = sh.user_ns["rep"]
print("CELL", rep.meta["cell"], "ROUTE", rep.meta["capture_route"], "CUDA_EVENT_US", rep.meta["cuda_event_us"])
k = rep.kernels
print("KERNELS", len(k), "with source", int(k["source"].notna().sum()))
for (op, src), g in k.groupby([k["op"].astype(str), k["source"].astype(str)], sort=False):
    print(f"  {len(g):3d}  {op[:40]:40s} {src}")
rep.save(Path(out, "kernelprofile_stack.ksreport.json.gz"))
import kernelscope as ks  # noqa: E402 - after the recording, as a reader would

back = ks.load(path)
print("RELOADED", len(back.kernels), "frames", len(back.trace.frames), "sources(reader)", back.kernels["source"].dropna().unique()[:8].tolist())
