"""Nsight Compute on a CUDA device (run on the H200: ``pytest -m gpu tests/test_gpu_ncu.py``):
``%%kernelprofile --ncu`` replaying cells under ncu, its filters and failure messages, and
``python -m kernelscope ncu -- CMD``. Needs ncu (PATH or $KERNELSCOPE_NCU), IPython and ncu-report.

Set ``KS_GPU_OUT`` to a folder to keep the reports for inspection.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
pytest.importorskip("ncu_report")
pytest.importorskip("triton")

import kernelscope as ks
from kernelscope.capture.ncu_run import NcuError, find_ncu

try:
    NCU = find_ncu()
except NcuError:
    pytest.skip("no ncu on this machine", allow_module_level=True)

OUT = os.environ.get("KS_GPU_OUT")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SETUP = textwrap.dedent('''\
    import torch, triton, triton.language as tl

    @triton.jit
    def ks_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def ks_strided(x_ptr, out_ptr, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + (offs * STRIDE) % n, mask=mask) * 2.0, mask=mask)

    n = 1 << 22
    x = torch.randn(n, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    grid = (triton.cdiv(n, 1024),)
    ks_add[grid](x, y, o, n, BLOCK=1024); ks_strided[grid](x, o, n, STRIDE=33, BLOCK=1024); a @ a   # compile
    torch.cuda.synchronize()
    ''')
CELL = "ks_add[grid](x, y, o, n, BLOCK=1024)\nks_strided[grid](x, o, n, STRIDE=33, BLOCK=1024)\nc = a @ a\n"


@pytest.fixture(scope="module")
def shell():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    r = sh.run_cell(SETUP, store_history=True)
    assert r.success, r.error_in_exec
    sh.setup_cell = sh.execution_count - 1
    return sh


def _keep(rep, name):
    if OUT:
        os.makedirs(OUT, exist_ok=True)
        rep.save(os.path.join(OUT, name + ".ksreport.json.gz"))
        path = (rep.meta.get("ncu_replay") or {}).get("report_path")
        if path:
            shutil.copy(path, os.path.join(OUT, name + ".ncu-rep"))


def _cell(sh, line, body=CELL):
    return sh.run_cell(f"%%kernelprofile {line}\n{body}", store_history=True)


def test_deep_dive_of_one_cell_keeps_the_kernel(shell, capsys):
    r = _cell(shell, f"--ncu --setup {shell.setup_cell} -o rep_ncu --no-display")
    assert r.success, r.error_in_exec
    out = capsys.readouterr().out
    rep = shell.user_ns["rep_ncu"]
    _keep(rep, "magic_ncu")
    info = rep.meta["ncu_replay"]
    print(out, info)
    assert f"Nsight Compute deep dive done: cells [{shell.setup_cell}] ran again first" in out
    assert info["setup"] == [f"[{shell.setup_cell}]"] and info["differences"] == []
    assert info["nvtx"] == "torch" and info["total_seconds"] > info["cell_seconds"] > 0
    assert os.path.exists(info["report_path"])
    k = rep.kernels
    assert info["profiled"] == len(k) >= 3            # the two Triton kernels and the GEMM's
    assert k["ncu_id"].notna().all() and k["top_stall"].notna().all()   # live launches, ncu's figures
    assert {"Triton", "cuBLAS"} <= set(k["backend"])
    assert torch.is_tensor(shell.user_ns["c"])                       # the live cell ran in this kernel
    # Triton kernels carry line info: hot spots point into the replayed setup cell's file
    hs = rep.ncu_detail["hotspots"]
    strided = rep.ncu.set_index("kernel_name").loc["ks_strided", "id"]
    top = hs[hs["id"] == strided].sort_values("rank").iloc[0]
    assert top["file"].endswith(f"cell_{shell.setup_cell}.py") and "STRIDE" in top["text"]
    assert top["location"] == f"In [{shell.setup_cell}], line 13"          # as the notebook numbers it
    from kernelscope.analysis.ncu_kernels import memory_access
    m = memory_access(rep.ncu).set_index("kernel_name")
    assert m.loc["ks_strided", "verdict"].startswith("poor") and m.loc["ks_strided", "load_efficiency"] <= 0.2
    assert any(f.kind == "nsight_compute" for f in rep.findings)
    assert rep.stalls["source"].eq("Nsight Compute").all() and len(rep.stalls) == len(rep.ncu)


def test_default_replay_takes_earlier_successful_cells(shell, capsys):
    bad = shell.run_cell("raise RuntimeError('only in the notebook')", store_history=True)
    assert not bad.success
    r = _cell(shell, "--ncu --kernels ks_add -o rep_default --no-display")
    assert r.success, r.error_in_exec
    out = capsys.readouterr().out
    rep = shell.user_ns["rep_default"]
    info = rep.meta["ncu_replay"]
    assert f"[{shell.setup_cell}]" in info["setup"] and f"[{shell.execution_count - 2}]" not in info["setup"]
    assert f"left out [{shell.execution_count - 2}]: raised when it ran" in out
    assert rep.ncu["kernel_name"].tolist() == ["ks_add"]              # --kernels REGEX
    assert rep.kernels["ncu_id"].notna().sum() == 1


def test_filter_matching_nothing_says_so(shell, capsys):
    r = _cell(shell, f"--ncu --setup {shell.setup_cell} --kernels no_such_kernel -o rep_none --no-display")
    assert r.success
    err = capsys.readouterr().err
    assert "no Nsight Compute deep dive: --kernels 'no_such_kernel' matched no kernel the replayed cell launched" in err
    assert "ks_strided" in err                                        # the live run's kernels, named
    assert shell.user_ns["rep_none"].ncu is None                      # the live report stays


def test_replay_that_differs_is_named(shell, capsys):
    body = "import sys\nz = x.exp() if sys.argv[0].endswith('replay.py') else x.sin()\n"
    r = _cell(shell, f"--ncu --setup {shell.setup_cell} -o rep_diff --no-display", body)
    assert r.success, r.error_in_exec
    err = capsys.readouterr().err
    diff = shell.user_ns["rep_diff"].meta["ncu_replay"]["differences"]
    assert len(diff) == 2 and "did not launch 1 kernel(s) the live run did" in diff[0]
    assert "warning: the replay launched 1 kernel(s) the live run did not" in err


def test_child_failing_shows_its_stderr(shell, capsys):
    shell.run_cell("raise RuntimeError('only in the notebook')", store_history=True)
    n = shell.execution_count - 1
    r = _cell(shell, f"--ncu --setup {shell.setup_cell},{n} -o rep_fail --no-display")
    assert r.success
    err = capsys.readouterr().err
    assert f"no Nsight Compute deep dive: the replay failed in cell [{n}] (RuntimeError: only in the notebook)" in err
    assert "The child's stderr ends:" in err and "Traceback" in err
    assert len(shell.user_ns["rep_fail"].kernels) >= 3 and shell.user_ns["rep_fail"].ncu is None


def test_cli_writes_and_prints_the_report(tmp_path):
    out = tmp_path / "tri.ncu-rep"
    p = subprocess.run([sys.executable, "-m", "kernelscope", "ncu", "-o", str(out), "--nvtx-include", "ks",
                        "--", sys.executable, os.path.join(ROOT, "tests", "gpu_tools", "record_ncu.py"),
                        "triton_kernels"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    print(p.stdout[-3000:], p.stderr[-2000:])
    assert p.returncode == 0, p.stderr
    assert out.exists() and f"kernelscope: wrote {out} (3 launch(es) profiled" in p.stdout
    assert "strided_kernel" in p.stdout and "poor: global loads use" in p.stdout
    rep = ks.load(out)
    assert rep.ncu["kernel_name"].tolist() == ["add_kernel", "strided_kernel", "matmul_kernel"]
    if OUT:
        shutil.copy(out, os.path.join(OUT, "cli_triton.ncu-rep"))


def test_a_smaller_section_set_still_reads(shell):
    r = _cell(shell, f"--ncu --setup {shell.setup_cell} --set basic --kernels ks_ -o rep_basic --no-display")
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_basic"]
    _keep(rep, "magic_ncu_basic")
    assert rep.meta["ncu_replay"]["set"] == "basic" and len(rep.ncu) == 2
    assert rep.ncu["duration_ns"].notna().all() and rep.ncu["compute_sm_throughput_pct"].notna().all()
    from kernelscope.view.report import view_model
    header, _ = view_model(rep)                          # the view copes with what the set lacks
    assert set(header["kernel_detail"]["launches"]) == {str(i) for i in rep.ncu["id"]}
