"""%%kernelprofile --ncu and ``python -m kernelscope ncu`` without a GPU: choosing and
transforming the cells to replay in a real IPython shell, the replay child itself run as a real
process (everything but ncu), and the messages for what goes wrong. The run under ncu itself is
in test_gpu_ncu.py (the H200)."""
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.jupyter.conftest import run_cell, run_replay_child

IPython = pytest.importorskip("IPython")
torch = pytest.importorskip("torch")

import kernelscope as ks
from kernelscope.capture.ncu_run import (
    NCU_ENV,
    NcuError,
    NcuRun,
    ReplayCell,
    check_run,
    find_ncu,
    ncu_argv,
)
from kernelscope.jupyter.replay import plain_body, replay_cells, replay_differences, summary

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
NCU_REP = os.path.join(DATA, "ncu_rep")


@pytest.fixture()
def shell(ipython_shell):
    return ipython_shell


_run = run_cell


def test_earlier_successful_cells_become_plain_python(shell):
    start = shell.execution_count
    _run(shell, """\
        import torch
        x = torch.arange(6.0)
        """)
    _run(shell, "1 / 0")                                               # raised: left out
    _run(shell, """\
        %%kernelprofile --top 3
        y = x * 2
        """)
    _run(shell, """\
        %time z = y + 1
        !echo from-the-shell
        """)
    _run(shell, "%kernelprofile last")                                 # ours: left out entirely
    cells, notes = replay_cells(shell, None, shell.execution_count, "w = z * y\n")   # needs z, y, x
    mine = [c for c in cells if int(c.label.strip("[]")) >= start]
    assert [c.label for c in mine] == [f"[{start}]", f"[{start + 2}]", f"[{start + 3}]"]
    assert mine[1].source == "y = x * 2\n"                             # a %%kernelprofile cell's body
    assert "get_ipython().run_line_magic('time', 'z = y + 1')" in mine[2].source
    assert "get_ipython().system('echo from-the-shell')" in mine[2].source
    raised = [x.split(":")[0] for x in notes if x.endswith(": raised when it ran")]
    assert len(raised) == 1 and f"[{start + 1}]" in raised[0].replace(",", " ").split()
    # --setup names the cells; "none" replays only the cell
    only, _ = replay_cells(shell, f"{start},{start + 2}", shell.execution_count)
    assert [c.label for c in only] == [f"[{start}]", f"[{start + 2}]"]
    assert replay_cells(shell, "none", shell.execution_count)[0] == []
    with pytest.raises(ValueError, match="--setup takes cell numbers"):
        replay_cells(shell, "first", shell.execution_count)


def test_plain_body_drops_our_magics_only():
    assert plain_body("%load_ext kernelscope\n%matplotlib inline\nimport torch\n") == "%matplotlib inline\nimport torch\n"
    assert plain_body("%%kernelprofile --ncu --kernels gemm\nout = a @ b\n") == "out = a @ b\n"
    assert plain_body("%kernelprofile start\n") == ""


_child = run_replay_child


def test_replay_child_rebuilds_state_then_runs_the_cell_in_its_range(shell, tmp_path):
    # The parent turns the cells into plain Python; the child (this test runs it without ncu) needs no IPython.
    t = shell.transform_cell
    (tmp_path / "helper.py").write_text("import sys\nfrom_run = sys.argv[1:]\n")
    (tmp_path / "sub").mkdir()
    setup = [ReplayCell("[1]", t("import torch\nx = torch.arange(6.0)\n")),
             ReplayCell("[2]", t("%time y = x * 2\n!pip install something\n%matplotlib inline\n")),
             ReplayCell("[3]", t("def double(v):\n    return v * 2\n")),
             ReplayCell("[4]", t("%env KS_REPLAY_TEST=yes\n%run helper.py a b\n%cd sub\n"))]
    cell = ReplayCell("cell", t("import os, sys, json\nopen('out.json', 'w').write(json.dumps("
                                "[float(double(y).sum()), 'IPython' in sys.modules, os.environ['KS_REPLAY_TEST'], "
                                "from_run]))\n"))
    out, status = _child(tmp_path, setup, cell)
    assert out.returncode == 0, out.stderr
    # state from %time's body, %env, %run and %cd (the cell ran in sub/)
    assert json.loads((tmp_path / "sub" / "out.json").read_text()) == [60.0, False, "yes", ["a", "b"]]
    assert [c["label"] for c in status["cells"]] == ["[1]", "[2]", "[3]", "[4]"]
    assert status["skipped"] == ["!pip install something", "%matplotlib inline"]
    assert status["nvtx"] == "torch" and status["cell_seconds"] >= 0 and status["failed"] is None
    # Functions the cells define live in a __main__ of their own, as in a notebook: found by name.
    assert (tmp_path / "cell_3.py").read_text().startswith("def double")


def test_replay_child_failing_says_where_with_its_stderr(shell, tmp_path):
    setup = [ReplayCell("[1]", "x = 1\n"), ReplayCell("[2]", "open('/nonexistent/data.bin')\n")]
    out, status = _child(tmp_path, setup, ReplayCell("cell", "y = x\n"))
    assert out.returncode == 3 and status["failed"]["label"] == "[2]"
    run = NcuRun(None, ["ncu"], 1.0, out.returncode, stderr=out.stderr, status=status)
    with pytest.raises(NcuError) as e:
        check_run(run)
    msg = str(e.value)
    assert msg.startswith("the replay failed in cell [2] (FileNotFoundError: [Errno 2] No such file or directory")
    assert "--setup" in msg and "/nonexistent/data.bin" in msg.split("stderr ends:")[1]
    out, status = _child(tmp_path, [], ReplayCell("cell", "undefined_name + 1\n"))
    assert out.returncode == 4
    with pytest.raises(NcuError, match=r"the replay failed in this cell \(NameError: name 'undefined_name'"):
        check_run(NcuRun(None, ["ncu"], 1.0, 4, stderr=out.stderr, status=status))


def test_ncu_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(NCU_ENV, raising=False)
    with pytest.raises(NcuError, match=r"Nsight Compute \(ncu\) was not found on PATH.*%env KERNELSCOPE_NCU=/path/to/ncu"):
        find_ncu()
    monkeypatch.setenv(NCU_ENV, str(tmp_path / "nope"))
    with pytest.raises(NcuError, match=r"\$KERNELSCOPE_NCU \(.*nope\) is not an executable ncu"):
        find_ncu()
    # ncu's own words for missing counter permissions (its documented error line)
    perm = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
            "Counters on the target device 0. For instructions on enabling permissions and to get more "
            "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    with pytest.raises(NcuError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        check_run(NcuRun(None, ["ncu"], 1.0, 1, log=perm))
    with pytest.raises(NcuError, match="^Nsight Compute profiled no kernel$"):
        check_run(NcuRun(None, ["ncu"], 1.0, 0, log="==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n"))
    argv = ncu_argv("ncu", "o", ["python", "r.py"], kernels="gemm|attn", launches=2, nvtx_range="kernelscope")
    assert argv[argv.index("--nvtx-include") + 1] == "kernelscope/"
    assert argv[argv.index("--kernel-name") + 1] == "regex:gemm|attn" and "--launch-count" in argv


def test_magic_without_ncu_keeps_the_live_report(shell, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(NCU_ENV, raising=False)
    r = _run(shell, """\
        %%kernelprofile --ncu -o rep_no_ncu --no-display
        w = torch.ones(8, 8) @ torch.ones(8, 8)
        """)
    assert r.success, r.error_in_exec
    err = capsys.readouterr().err
    assert "kernelscope: no Nsight Compute deep dive: Nsight Compute (ncu) was not found on PATH" in err
    rep = shell.user_ns["rep_no_ncu"]
    assert rep.ncu is None and int((rep.ops["name"] == "aten::mm").sum()) == 1
    for line, msg in (("--kernels gemm", "--kernels only apply with --ncu"),
                      ("--ncu --kernels '('", "is not a regular expression"),
                      ("--ncu --launches 0", "--launches must be at least 1")):
        r = _run(shell, f"%%kernelprofile {line}\nw = 1\n")
        assert not r.success and msg in str(r.error_in_exec)
    r = _run(shell, "%kernelprofile start --ncu")
    assert not r.success and "--ncu is for %%kernelprofile on a cell" in str(r.error_in_exec)


def test_replay_differences_in_words():
    live = ks.load(os.path.join(NCU_REP, "ncu_torch_ops.pt.trace.json.gz"))
    same = ks.load_ncu(os.path.join(NCU_REP, "torch_ops.ncu-rep.xz"), kernels_report=live)
    args = SimpleNamespace(kernels=None, launches=None)
    assert replay_differences(live, same, args) == []
    # a --kernels filter: only the matching live kernels are expected
    assert replay_differences(live, same, SimpleNamespace(kernels="nvjet", launches=None)) == []
    other = ks.load_ncu(os.path.join(NCU_REP, "triton_kernels.ncu-rep.xz"), kernels_report=live)
    d = replay_differences(live, other, args)
    # named as kernelscope shows them (the first five)
    assert d[0] == ("the replay did not launch 6 kernel(s) the live run did: cuBLAS GEMM 256x128 (sm90), CUTLASS GEMM "
                    "256x128 (sm80, simt), elementwise add (vectorized x4), elementwise Gelu (vectorized x4), "
                    "elementwise direct_copy")
    assert d[1].startswith("the replay launched 3 kernel(s) the live run did not: add_kernel, strided_kernel, matmul_kernel")
    assert "fresh process" in d[1]
    s = summary({"setup": ["[1]", "[3]"], "setup_seconds": 2.04, "cell_seconds": 38.2, "total_seconds": 45.9,
                 "profiled": 6, "set": "full", "report_path": "/tmp/k/cell.ncu-rep"})
    assert s == ("Nsight Compute deep dive done: cells [1], [3] ran again first (2.0 s), then this cell under ncu "
                 "--set full (38.2 s; 6 launch(es) profiled); 45.9 s in all. Report: /tmp/k/cell.ncu-rep")


def test_cli_without_ncu(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + str(tmp_path))
    env.pop(NCU_ENV, None)
    out = subprocess.run([sys.executable, "-m", "kernelscope", "ncu", "--", sys.executable, "-c", "pass"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and "Nsight Compute (ncu) was not found on PATH" in out.stderr
    out = subprocess.run([sys.executable, "-m", "kernelscope", "ncu"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and "give the program to profile after --" in out.stderr


def test_hot_spots_named_as_the_notebook_numbers_cells():
    from kernelscope.jupyter.replay import name_cells
    rep = ks.load_ncu(os.path.join(NCU_REP, "triton_kernels.ncu-rep.xz"))
    hs = rep.ncu_detail["hotspots"]
    hs["file"] = ["/tmp/kernelscope-ncu-x/cell_3.py"] * (len(hs) - 1) + ["/tmp/kernelscope-ncu-x/cell_this.py"]
    name_cells(rep, "/tmp/kernelscope-ncu-x")
    assert hs["location"].iloc[0] == f"In [3], line {int(hs['line'].iloc[0])}"
    assert hs["location"].iloc[-1] == f"this cell, line {int(hs['line'].iloc[-1])}"
    name_cells(rep, "/elsewhere")          # files outside the replay's folder keep their names
