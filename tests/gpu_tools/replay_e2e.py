"""Issue 30 end to end on the H200 (run_gpu_checks.sh e2e): a real Jupyter kernel (nbclient) runs a notebook that reads a
report between two profiles, then --stalls and --ncu with no --setup, --stalls --setup, and a
sticky CUDA error followed by another %%kernelprofile."""
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

OUT = os.environ.get("OUT", "/tmp")
cells = [
    "%load_ext kernelscope",
    """import torch, triton, triton.language as tl
import kernelscope as ks
print(ks.__file__)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda().half()
x = torch.randn(512, 1024, device="cuda", dtype=torch.half)""",
    """@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)

def add(a, b):
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out""",
    """%%kernelprofile -o met --no-display
y = model(x)
z = add(y, y)
torch.cuda.synchronize()""",
    """k = met.kernels
print(len(k), "launches;", k["name"].nunique(), "kernels")""",
    "model.eval()",
    """print(met.title, "read again:", len(k))""",
    "unrelated = [i * i for i in range(10)]",
    """%%kernelprofile --stalls -o st --no-display
y = model(x)
z = add(y, y)
torch.cuda.synchronize()""",
    """print(st.stalls.to_string(max_colwidth=50))
print("meta stalls:", json.dumps({k: v for k, v in st.meta.get("stalls", {}).items() if k != "source"}, default=str))
print("notes:", [n for n in st.meta.get("notes", []) if "replay" in n])""",
    """%%kernelprofile --ncu -o nc --launches 8 --no-display
y = model(x)
z = add(y, y)
torch.cuda.synchronize()""",
    """info = nc.meta["ncu_replay"]
print({k: info[k] for k in ("setup", "setup_seconds", "cell_seconds", "total_seconds", "profiled", "skipped", "differences")})
cols = [c for c in nc.kernels.columns if c in ("name", "top_stall", "ncu_achieved_occupancy_pct", "ncu_theoretical_occupancy_pct", "duration_us")]
print(nc.kernels[cols].head(8).to_string(max_colwidth=50))
print("stalls rows:", len(nc.stalls) if nc.stalls is not None else None, "findings:", len(nc.findings))
print("notes:", [n for n in nc.meta.get("notes", []) if "replay" in n])""",
    """%%kernelprofile --stalls --setup 2,3 -o st2 --no-display
y = model(x)
z = add(y, y)
torch.cuda.synchronize()""",
    """print(len(st2.stalls), "kernels with stalls;", st2.meta["stalls"]["setup"])""",
    """@triton.jit
def bad_kernel(p):
    tl.store(p + (1 << 40), 1.0)""",
    """%%kernelprofile
bad_kernel[(1,)](x)
torch.cuda.synchronize()""",
    """%%kernelprofile
q = 1""",
    """from kernelscope.capture.recorder import _torch_profiler_enabled
print("torch profiler still enabled:", _torch_profiler_enabled(torch))""",
]
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
nb.cells[9].source = "import json\n" + nb.cells[9].source
t0 = time.time()
client = NotebookClient(nb, timeout=150, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": OUT}})


def dump(i, c):
    print(f"\n===== In [{c.get('execution_count')}] (cell {i}) at {time.time() - t0:.1f} s =====")
    print(c.source[:300])
    print("----- out -----")
    for o in c.get("outputs", []):
        if o.output_type == "stream":
            print(f"[{o.name}] " + o.text[-4000:])
        elif o.output_type == "error":
            print(f"[error] {o.ename}: {o.evalue[:1500]}")
        elif "text/plain" in o.get("data", {}):
            print("[result] " + o["data"]["text/plain"][:1500])
    sys.stdout.flush()


with client.setup_kernel():
    for i, c in enumerate(nb.cells):
        try:
            client.execute_cell(c, i)
        except Exception as e:  # noqa: BLE001 - a cell that stops is printed, the rest still run
            print("CELL STOPPED:", type(e).__name__, str(e)[:1500])
        dump(i, c)
        nbformat.write(nb, os.path.join(OUT, "e2e.ipynb"))
print(f"notebook ran in {time.time() - t0:.1f} s")
