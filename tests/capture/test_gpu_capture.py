"""Live capture on a CUDA device (run on the H200: ``pytest -m gpu tests/test_gpu_capture.py``).

Set ``KS_GPU_OUT`` to a folder to keep the recorded reports and traces for inspection.
"""
import os
import textwrap

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kernelscope as ks
from tests.conftest import written_out_union

OUT = os.environ.get("KS_GPU_OUT")


def _keep(rep, name):
    if OUT:
        os.makedirs(OUT, exist_ok=True)
        rep.save(os.path.join(OUT, name))


def _union_us(k):
    return written_out_union(zip(k["start_us"].astype(float), (k["start_us"] + k["duration_us"]).astype(float)))


@pytest.fixture(scope="module")
def shell():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    return sh


MIXED_SETUP = textwrap.dedent('''\
    import torch, cupy as cp, triton, triton.language as tl

    @triton.jit
    def ks_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "ks_saxpy")
    a = torch.randn(2048, 2048, device="cuda")
    x = torch.randn(1 << 20, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x)
    cx = cp.random.standard_normal(1 << 20, dtype=cp.float32); cy = cp.ones_like(cx)
    def step():
        m = a @ a
        z = saxpy(cp.float32(2.0), cx, cy)
        ks_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), BLOCK=1024)
        return m, z
    step(); torch.cuda.synchronize(); cp.cuda.Device().synchronize()
    ''')


def test_matmul_cupy_and_triton_in_one_cell_with_backends(shell):
    pytest.importorskip("cupy")
    pytest.importorskip("triton")
    r = shell.run_cell(MIXED_SETUP)
    assert r.success, r.error_in_exec
    r = shell.run_cell("%%kernelprofile -o rep_mixed --no-display\n"
                       "m = a @ a\n"
                       "z = saxpy(cp.float32(2.0), cx, cy)\n"
                       "ks_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), BLOCK=1024)\n")
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_mixed"]
    _keep(rep, "mixed_cell.ksreport.json.gz")
    k = rep.kernels
    by = {n: b for n, b in zip(k["name"], k["backend"])}
    print("KERNELS", sorted(by.items()))
    tri = [n for n in by if "ks_add_kernel" in n]
    cup = [n for n in by if "ks_saxpy" in n]
    gemm = [n for n in by if n not in tri and n not in cup]
    assert len(tri) == 1 and by[tri[0]] == "Triton"
    assert len(cup) == 1 and by[cup[0]] == "CuPy"
    assert gemm and all(by[n] == "cuBLAS" for n in gemm)
    # the launch configuration comes with each kernel
    row = k[k["name"] == tri[0]].iloc[0]
    assert row["grid_x"] == (1 << 20) // 1024 and row["registers_per_thread"] > 0
    assert rep.meta["no_gpu"] is False and rep.meta["cuda_event_us"] > 0
    print("ROUTE", rep.meta["capture_route"])
    assert rep.meta["capture_route"] in ("in-memory", "tmpfs")


def test_cuda_event_time_covers_the_kernel_union():
    a = torch.randn(4096, 4096, device="cuda")
    s2 = torch.cuda.Stream()
    torch.cuda.synchronize()
    with ks.profile() as prof:
        for _ in range(3):
            b = a @ a
        with torch.cuda.stream(s2):
            torch.relu(a) * 2
        b.sum()
    rep = prof.report
    k = rep.kernels
    union = _union_us(k)
    span = float((k["start_us"] + k["duration_us"]).max() - k["start_us"].min())
    ev = rep.meta["cuda_event_us"]
    print("CUDA_EVENT_US", ev, "UNION_US", union, "SPAN_US", span, "KERNELS", len(k))
    assert len(k) >= 6
    assert ev >= union
    assert ev >= 0.9 * span  # events bracket the region: about the kernels' extent or more
    assert k["stream"].nunique() == 2


def test_graph_replay_is_recorded_as_graph_launches():
    x = torch.randn(256, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 1.0001 + 0.5
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x
        for _ in range(50):
            y = y * 1.0001 + 0.5
    torch.cuda.synchronize()
    with ks.profile() as prof:
        g.replay()
        g.replay()
    k = prof.report.kernels
    assert len(k) == 200
    assert bool(k["graph_launch"].all())


def test_stack_maps_kernels_to_the_cells_lines(shell):
    r = shell.run_cell(textwrap.dedent("""\
        %%kernelprofile --stack -o rep_stack --no-display
        q = torch.randn(1024, 1024, device="cuda")
        def act(t):
            return torch.relu(t)
        for _ in range(2):
            q = q @ q
        r = act(q)
        """))
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_stack"]
    _keep(rep, "stack_cell.ksreport.json.gz")
    cell = rep.meta["cell"]["file"]
    k = rep.kernels
    print("SOURCES", sorted(set(k["op"].astype(str) + " @ " + k["source"].astype(str))))
    rnd = k[k["op"].astype(str).str.contains("normal_|randn")]
    mm = k[k["op"].astype(str).str.contains("aten::mm")]
    relu = k[k["op"].astype(str).str.contains("relu|clamp_min")]
    assert len(rnd) >= 1 and set(rnd["source"]) == {f"{cell}(2): <module>"}
    assert len(mm) == 2 and set(mm["source"]) == {f"{cell}(6): <module>"}
    assert len(relu) >= 1 and set(relu["source"]) == {f"{cell}(4): act"}


def test_repeat_keeps_per_kernel_totals_per_run(shell):
    shell.run_cell("w = torch.randn(2048, 2048, device='cuda')")
    r = shell.run_cell("%%kernelprofile --warmup 1 --repeat 3 -o rep_rep --no-display\n"
                       "v = torch.relu(w @ w)\n")
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_rep"]
    reps = rep.meta["repeats"]
    per = reps["per_kernel_total_us"]
    summ = rep.summary().set_index("name")["total_us"]
    print("REPEATS", per, reps["cuda_event_us"])
    assert set(per) == set(summ.index)
    for name, vals in per.items():
        assert len(vals) == 3 and all(v > 0 for v in vals)
        assert sum(vals) == pytest.approx(summ[name])
    assert all(v is not None and v > 0 for v in reps["cuda_event_us"])


def test_lean_records_kernels_without_cpu_ops():
    a = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    with ks.profile(lean=True) as prof:
        for _ in range(4):
            a = a * 1.5
    rep = prof.report
    assert len(rep.kernels) == 4
    assert not (rep.ops["cat"] == "cpu_op").any()
    assert rep.meta["cuda_event_us"] > 0


def test_cell_that_raises_keeps_the_kernels_it_ran(shell):
    r = shell.run_cell("%%kernelprofile -o rep_err --no-display\n"
                       "e = torch.randn(512, 512, device='cuda') @ torch.randn(512, 512, device='cuda')\n"
                       "raise RuntimeError('after the matmul')\n")
    assert isinstance(r.error_in_exec, RuntimeError)
    rep = shell.user_ns["rep_err"]
    assert rep.partial and len(rep.kernels) >= 2
    assert (rep.kernels["backend"] == "cuBLAS").any()


def test_profiler_noise_stays_out_and_reports_are_titled(shell, capfd):
    # Kineto writes USDT/STAGE lines to fd 2 at start and stop; a cell's output must not show them,
    # and the reports of two cells must be told apart by their titles.
    a = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    capfd.readouterr()
    with ks.profile() as prof:
        a @ a
    rep = prof.report
    err = capfd.readouterr().err
    print("ks.profile title:", rep.title, "| stderr:", repr(err[:200]), "| profiler_log:", rep.meta.get("profiler_log"))
    assert "USDT" not in err and "STAGE" not in err
    assert "test_gpu_capture.py" in rep.title and "live profiler" not in rep.title
    shell.run_cell("%%kernelprofile -o rep_titled --no-display\nc = a @ a\n")
    err = capfd.readouterr().err
    rep2 = shell.user_ns["rep_titled"]
    print("magic title:", rep2.title, "| stderr:", repr(err[:200]))
    assert "USDT" not in err and "STAGE" not in err
    assert "rep_titled" in rep2.title
    assert len(rep2.kernels) >= 1 and rep2.wall_time_clock
