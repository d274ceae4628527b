"""Which earlier cells ``%%kernelprofile --ncu`` / ``--stalls`` replay (issue 30): the rules on
cells as text (:mod:`kernelscope.jupyter.cell_deps`), the replay child skipping an optional cell
that fails (a real child process), and the magic in a real IPython shell, where the child that
needs a GPU (Proton) is replaced by the real replay script run without Proton, handing back a
Proton profile recorded on the H200."""
import os
import re
import textwrap

import pytest

from tests.jupyter.conftest import run_cell, run_replay_child

IPython = pytest.importorskip("IPython")
pytest.importorskip("torch")

from IPython.core.inputtransformer2 import TransformerManager  # noqa: E402

from kernelscope.capture.ncu_run import ReplayCell  # noqa: E402
from kernelscope.jupyter.cell_deps import Cell, analyse, plan_replay  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
HATCHET = os.path.join(DATA, "counters", "proton_workload.hatchet")
_t = TransformerManager().transform_cell


def _plan(cells, profiled, **kw):
    cs = [c if isinstance(c, Cell) else Cell(i + 1, _t(textwrap.dedent(c))) for i, c in enumerate(cells)]
    for c in cs:
        c.source = _t(textwrap.dedent(c.source))
    p = plan_replay(cs, _t(textwrap.dedent(profiled)), **kw)
    return p, [c.count for c, _, _ in p.run], {c.count: why for c, why in p.left_out}


def test_the_issue_notebook_reads_a_report_between_two_profiles():
    # [2] was `%%kernelprofile -o met`; [3] reads its report; [5] reads what [3] made
    p, run, out = _plan([
        "import torch\nmodel = torch.nn.Linear(8, 8)\nx = torch.ones(4, 8)\n",
        Cell(2, "y = model(x)\n", outputs=("met",)),
        "k = met.kernels\n",
        "model.eval()\n",
        "top = k.sort_values('duration_us').head(3)\nprint(top)\n",
        "z = 5\n",
    ], "y = model(x)\n")
    assert run == [1, 4]
    assert [opt for _, opt, _ in p.run] == [False, True]           # [4] only changes model: optional
    assert out[3] == "reads kernelscope's results (met)"
    assert out[5] == "reads kernelscope's results (k)"
    assert out[2] == out[6] == "not needed by this cell"


def test_transitive_needs_and_rebinding():
    _, run, _ = _plan(["a = 1\n", "b = a + 1\n", "c = b * 2\n", "d = 9\n"], "print(c)\n")
    assert run == [1, 2, 3]
    # a later plain binding hides the earlier one; a kernelscope value rebound from clean values is clean
    _, run, out = _plan([Cell(1, "r = 1\n", outputs=("met",)), "x = met.kernels\n", "import torch\nx = torch.ones(3)\n"],
                        "x * 2\n")
    assert run == [3] and out[2] == "reads kernelscope's results (met)"
    # x = x + 1 needs the earlier x too
    _, run, _ = _plan(["x = 1\n", "x = x + 1\n"], "x\n")
    assert run == [1, 2]
    # a function's globals are needed where it is called
    _, run, _ = _plan(["w = 3\n", "def f(v):\n    return v * w\n", "q = 2\n"], "f(4)\n")
    assert run == [1, 2]


def test_changes_to_objects_are_found():
    base = "import torch\nmodel = torch.nn.Linear(8, 8)\n"
    for change in ("model.weight.data.zero_()\n", "model.fc = torch.nn.Linear(8, 8)\n", "m2 = model.to('cpu')\n",
                   "for p in model.parameters():\n    p.requires_grad_(False)\n", "train(model)\n",
                   "del model.bias\n", "model.state[0] = 1\n", "%time model.eval()\n"):
        _, run, _ = _plan([base, change], "model(torch.ones(2, 8))\n")
        assert run == [1, 2], change
    # ...through an optimizer bound in another cell
    _, run, _ = _plan([base, "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
                       "for _ in range(3):\n    opt.zero_grad()\n    model(torch.ones(2, 8)).sum().backward()\n    opt.step()\n"],
                      "model(torch.ones(2, 8))\n")
    assert run == [1, 2, 3]
    # a module's new object is not the module: changing it does not change torch
    p, run, _ = _plan(["import torch\nmodel = torch.nn.Linear(8, 8).half().cpu()\n", "model.eval()\n"], "model(1)\n")
    assert run == [1, 2] and p.run[1][2] == "changes model"
    # reading is not changing
    _, run, _ = _plan([base, "print(model)\nn = len(list(model.parameters()))\n"], "model(torch.ones(2, 8))\n")
    assert run == [1]


def test_process_state_and_magics():
    _, run, _ = _plan(["%env CUDA_LAUNCH_BLOCKING=1\n", "import os\nos.environ['X'] = '1'\n", "%cd /tmp\n",
                       "from math import *\n", "%matplotlib inline\n", "!nvidia-smi\n", "import torch\n",
                       "torch.manual_seed(0)\n", "torch.cuda.synchronize()\n"], "torch.ones(3).sum()\n")
    assert run == [1, 2, 3, 4, 7, 8]
    info = analyse(_t("%%time\ny = model(x)\n"))
    assert info.uses == {"model", "x"} and info.binds == {"y"}
    # kernelscope's own lines are not process state
    assert analyse(_t("%load_ext kernelscope\n")).process == []
    assert analyse("def broken(:\n").syntax_error


def test_long_cells_and_failed_cells():
    cells = [Cell(1, "import torch\nmodel = torch.nn.Linear(8, 8)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
                  seconds=2.0),
             Cell(2, "for _ in range(10**6):\n    opt.step()\n", seconds=600.0),
             Cell(3, "x = torch.ones(2, 8)\n", ok=False)]
    p, run, out = _plan(cells, "model(torch.ones(2, 8))\n")
    assert run == [1] and [c.count for c, names in p.too_long] == [2] and p.too_long[0][1] == []
    assert out[3] == "raised when it ran"
    _, run, _ = _plan(cells, "model(torch.ones(2, 8))\n", limit_s=None)
    assert run == [1, 2]
    # a long cell that binds what the profiled cell needs
    p, run, _ = _plan([Cell(1, "import torch\nmodel = torch.nn.Linear(8, 8)\n", seconds=120.0)], "model(1)\n")
    assert p.too_long[0][1] == ["model"]


_child = run_replay_child


def test_the_child_skips_an_optional_cell_that_fails(tmp_path):
    setup = [ReplayCell("[1]", "x = [1, 2]\n"), ReplayCell("[4]", "print(met.kernels)\n", optional=True),
             ReplayCell("[5]", "x.append(3)\n", optional=True)]
    out, status = _child(tmp_path, setup, ReplayCell("cell", "open('out.json', 'w').write(str(len(x)))\n"))
    assert out.returncode == 0, out.stderr
    assert status["skipped_cells"] == [{"label": "[4]", "error": "NameError: name 'met' is not defined"}]
    assert [c["label"] for c in status["cells"]] == ["[1]", "[5]"] and status["failed"] is None
    assert (tmp_path / "out.json").read_text() == "3"
    # a cell that binds what the cell needs still ends the replay
    out, status = _child(tmp_path, [ReplayCell("[1]", "x = met\n")], ReplayCell("cell", "x\n"))
    assert out.returncode == 3 and status["failed"]["label"] == "[1]"


@pytest.fixture()
def shell(ipython_shell):
    return ipython_shell


_run = run_cell


@pytest.fixture()
def fake_proton(monkeypatch, tmp_path):
    """The replay child, really run, without Proton (no GPU here); it hands back an H200 profile."""
    import kernelscope.capture.ncu_run as ncu_run
    import kernelscope.capture.stalls as stalls
    runs = []

    def replay_stalls(setup, cell, *, cwd=None, **kw):
        work = tmp_path / f"replay{len(runs)}"
        work.mkdir()
        out, status = _child(work, setup, cell)
        runs.append({"setup": [(c.label, c.optional) for c in setup], "status": status, "stderr": out.stderr})
        return (HATCHET if status.get("failed") is None else None), status, 1.5, out.stderr

    monkeypatch.setattr(stalls, "unavailable", lambda: None)
    monkeypatch.setattr(ncu_run, "replay_stalls", replay_stalls)
    return runs


def test_stalls_after_reading_a_report_in_a_real_shell(shell, fake_proton, capsys):
    n = shell.execution_count
    _run(shell, "import torch\nmodel = torch.nn.Linear(16, 16)\nx = torch.ones(4, 16)\n")
    _run(shell, "%%kernelprofile -o met --no-display\ny = model(x)\n")
    _run(shell, "k = met.kernels\n")
    _run(shell, "model.eval()\nprint(met.title)\n")          # changes model, but reads met: fails in the replay
    _run(shell, "1 / 0\n")
    capsys.readouterr()
    r = _run(shell, "%%kernelprofile --stalls -o st --no-display\nout = model(x)\n")
    assert r.success, r.error_in_exec
    said = capsys.readouterr()
    assert len(fake_proton) == 1
    assert fake_proton[0]["setup"] == [(f"[{n}]", False), (f"[{n + 3}]", True)]
    assert f"Warp stalls: replaying cells [{n}] (" in said.out and f"[{n + 3}] (" in said.out
    assert "skipped if it fails" in said.out
    # (cells of earlier tests in this shell may join a group)
    assert re.search(rf"left out [^:]*\[{n + 2}\][^:]*: reads kernelscope's results \(met\)", said.out)
    assert re.search(rf"left out [^:]*\[{n + 4}\][^:]*: raised when it ran", said.out)
    assert f"In [{n + 3}] raised NameError: name 'met' is not defined in the replay and was skipped" in said.err
    assert "no warp stalls" not in said.err
    rep = shell.user_ns["st"]
    assert rep.meta["stalls"]["setup"] == [f"[{n}]", f"[{n + 3}]"]
    assert any("was skipped" in x for x in rep.trace.meta["notes"])
    # --setup with --stalls: one replay, the cells named
    r = _run(shell, f"%%kernelprofile --stalls --setup {n} --no-display\nout = model(x)\n")
    assert r.success, r.error_in_exec
    assert fake_proton[1]["setup"] == [(f"[{n}]", False)]
    r = _run(shell, "%%kernelprofile --setup 1\nout = 1\n")
    assert not r.success and "--setup only apply with --ncu or --stalls" in str(r.error_in_exec)


def test_a_long_cell_is_not_replayed_unasked(shell, fake_proton, capsys):
    from kernelscope.jupyter.replay import _LOGS
    n = shell.execution_count
    _run(shell, "import torch\nmodel = torch.nn.Linear(16, 16)\n")
    _run(shell, "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n")
    _run(shell, "for _ in range(3):\n    opt.zero_grad(); model(torch.ones(2, 16)).sum().backward(); opt.step()\n")
    log = _LOGS[shell]
    assert all(log.cells[c][2] is not None and log.cells[c][2] >= 0 for c in (n, n + 1, n + 2))
    log.cells[n + 2] = log.cells[n + 2][:2] + (400.0,)      # as if the training loop ran for minutes
    capsys.readouterr()
    r = _run(shell, "%%kernelprofile --stalls --no-display\nout = model(torch.ones(2, 16))\n")
    assert r.success, r.error_in_exec
    said = capsys.readouterr().out
    assert fake_proton[-1]["setup"] == [(f"[{n}]", False)]       # the optimizer is needed by the loop only
    assert f"left out In [{n + 2}]: it ran for 400.0 s" in said and "--replay-limit 401" in said
    r = _run(shell, "%%kernelprofile --stalls --replay-limit 500 --no-display\nout = model(torch.ones(2, 16))\n")
    assert r.success and fake_proton[-1]["setup"] == [(f"[{n}]", False), (f"[{n + 1}]", False), (f"[{n + 2}]", True)]
    # a long cell that binds what this cell needs: no replay, and the way to ask for it
    log.cells[n] = log.cells[n][:2] + (90.0,)
    count = len(fake_proton)
    r = _run(shell, "%%kernelprofile --stalls --no-display\nout = model(torch.ones(2, 16))\n")
    err = capsys.readouterr().err
    assert r.success and len(fake_proton) == count
    assert (f"no warp stalls: In [{n}] ran for 90.0 s when it ran and binds model, torch, which this cell needs" in err
            and f"--setup {n}," in err and "--replay-limit 91" in err)


def test_ncu_after_reading_a_report_in_a_real_shell(shell, monkeypatch, tmp_path, capsys):
    # The child really runs the cells, without ncu (no GPU here); it hands back a report ncu wrote on the H200.
    import kernelscope.capture.ncu_run as ncu_run
    report = os.path.join(DATA, "ncu_rep", "torch_ops.ncu-rep.xz")
    runs = []

    def replay(setup, cell, **kw):
        out, status = run_replay_child(tmp_path, setup, cell)
        runs.append([(c.label, c.optional) for c in setup])
        return ncu_run.NcuRun(report, ["ncu"], 2.5, out.returncode, stderr=out.stderr, status=status)

    monkeypatch.setattr(ncu_run, "replay", replay)
    n = shell.execution_count
    _run(shell, "import torch\nw = torch.ones(8, 8)\n")
    _run(shell, "%%kernelprofile -o met --no-display\nv = w @ w\n")
    _run(shell, "k = met.kernels\n")
    _run(shell, "w.mul_(2)\nprint(k)\n")                     # changes w, but reads k: skipped in the replay
    capsys.readouterr()
    r = _run(shell, "%%kernelprofile --ncu -o deep --no-display\nv = w @ w\n")
    assert r.success, r.error_in_exec
    said = capsys.readouterr()
    assert runs == [[(f"[{n}]", False), (f"[{n + 3}]", True)]]
    assert f"Nsight Compute deep dive: replaying cells [{n}] (" in said.out
    assert re.search(rf"left out [^:]*\[{n + 2}\][^:]*: reads kernelscope's results \(met\)", said.out)
    assert f"In [{n + 3}] raised NameError: name 'k' is not defined in the replay and was skipped" in said.err
    rep = shell.user_ns["deep"]
    assert rep.meta["ncu_replay"]["setup"] == [f"[{n}]", f"[{n + 3}]"] and len(rep.ncu) > 0
    assert any("was skipped" in x for x in rep.meta["notes"])
