"""A cell that breaks the CUDA context (issue 30): the profiler started before the failure is
stopped, so the next ``%%kernelprofile`` does not blame "another torch.profiler"; a lost context
is named, with the restart it needs.

On CPU, torch.profiler's stop fails the way it does after a sticky CUDA error: its first step,
``torch.cuda.synchronize()``, raises before Kineto is turned off (torch/autograd/profiler.py,
``profile.__exit__``). On the H200 a real illegal memory access does it, in a real IPython shell
in a process of its own (the context cannot be mended).
"""
import os
import subprocess
import sys

import pytest

from tests.jupyter.conftest import run_cell

IPython = pytest.importorskip("IPython")
torch = pytest.importorskip("torch")

from kernelscope.capture.recorder import _torch_profiler_enabled  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ILLEGAL = "CUDA error: an illegal memory access was encountered"


@pytest.fixture()
def shell(ipython_shell):
    return ipython_shell


_run = run_cell


def test_a_profiler_whose_stop_fails_is_turned_off(shell, monkeypatch, capsys):
    import torch.autograd.profiler as ap
    real_exit = ap.profile.__exit__

    def exit_after_a_sticky_error(self, *a):
        if self.enabled:
            raise RuntimeError(ILLEGAL)      # what torch.cuda.synchronize() raises there
        return real_exit(self, *a)

    monkeypatch.setattr(ap.profile, "__exit__", exit_after_a_sticky_error)
    r = _run(shell, "%%kernelprofile\nx = 1\n")
    assert not r.success and ILLEGAL in str(r.error_in_exec)
    monkeypatch.setattr(ap.profile, "__exit__", real_exit)
    assert not _torch_profiler_enabled(torch)
    r = _run(shell, "%%kernelprofile -o after --no-display\nimport torch\nx = torch.ones(3) * 2\n")
    assert r.success, r.error_in_exec
    assert int((shell.user_ns["after"].ops["name"] == "aten::mul").sum()) == 1


def test_a_lost_context_is_named_with_the_restart_it_needs(shell, monkeypatch, capsys):
    import kernelscope.capture.recorder as recorder
    monkeypatch.setattr(recorder, "cuda_context_lost", lambda torch=None: ILLEGAL)
    r = _run(shell, "%%kernelprofile\nx = 1\n")
    assert not r.success
    msg = str(r.error_in_exec)
    assert msg.startswith(f"kernelscope: the CUDA context of this process is lost after an earlier error ({ILLEGAL})")
    assert "restart the kernel" in msg and "another torch.profiler" not in msg


SCRIPT = r'''
import sys, traceback
sys.path.insert(0, @ROOT@)
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
sh.run_line_magic("load_ext", "kernelscope")
def cell(src):
    r = sh.run_cell(src, store_history=True)
    print("RESULT", r.success, repr(str(r.error_in_exec or r.error_before_exec))[:400], flush=True)
cell("""
import torch, triton, triton.language as tl
@triton.jit
def bad(p):
    tl.store(p + (1 << 40), 1.0)
x = torch.zeros(4, device="cuda")
torch.cuda.synchronize()
""")
cell("%%kernelprofile\nbad[(1,)](x)\ntorch.cuda.synchronize()\n")
cell("%%kernelprofile\ny = 1\n")
'''


@pytest.mark.gpu
def test_a_real_illegal_memory_access(tmp_path):
    pytest.importorskip("triton")
    script = tmp_path / "sticky.py"
    script.write_text(SCRIPT.replace("@ROOT@", repr(ROOT)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    text = out.stdout + out.stderr
    print(text[-4000:])
    results = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    assert len(results) == 3, text[-3000:]
    assert results[0].startswith("RESULT True")
    assert results[1].startswith("RESULT False") and "illegal memory access" in results[1]
    assert "the CUDA context of this kernel is lost" in text and "profiler was stopped" in text
    assert results[2].startswith("RESULT False") and "restart the kernel" in results[2]
    assert "another torch.profiler" not in text
