"""%%kernelprofile in a real IPython shell, recording real torch CPU ops.

GPU cells are in test_gpu_capture.py. The wheel test builds the package and loads the
extension from the built wheel in a fresh interpreter.
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
IPython = pytest.importorskip("IPython")

import kernelscope as ks
from kernelscope.capture import active
from kernelscope.capture.lines import line_sources
from tests.conftest import iopub_until_idle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    sh.user_ns["torch"] = torch
    yield sh


def _magics(sh):
    return sh.magics_manager.registry["KernelProfileMagics"]


def _count(rep, name):
    return int((rep.ops["name"] == name).sum())


def _cell_lines(rep):
    """{op name: [file(line): func, ...]} for the ops of a --stack recording."""
    ops = rep.ops
    real = ops[~ops["name"].str.startswith("kernelscope.")]
    out = {}
    for n, s in zip(real["name"], line_sources(real["tid"], real["start_us"], ops)):
        out.setdefault(n, []).append(s)
    return out


def test_load_ext_registers_line_and_cell_magic(shell):
    assert "kernelprofile" in shell.magics_manager.magics["cell"]
    assert "kernelprofile" in shell.magics_manager.magics["line"]


def test_cell_runs_in_the_namespace_and_report_shows_after_output(shell, capsys):
    r = shell.run_cell(textwrap.dedent("""\
        %%kernelprofile -o rep_basic
        x = torch.ones(16, 16)
        for _ in range(3):
            x = torch.mm(x, x) * 0.1
        print("hello from the cell")
        x.sum() + 1
        """))
    out = capsys.readouterr().out
    assert r.success, r.error_in_exec
    assert torch.is_tensor(shell.user_ns["x"])               # cell variables land in the namespace
    assert float(r.result) == pytest.approx(float(shell.user_ns["x"].sum() + 1))  # the cell's value is its result
    i_print, i_out, i_rep = out.index("hello from the cell"), out.index("Out["), out.index("kernelscope report")
    assert i_print < i_out < i_rep                           # output, value, then the report
    rep = shell.user_ns["rep_basic"]
    assert _magics(shell).last is rep
    assert _count(rep, "aten::mm") == 3
    if not torch.cuda.is_available():
        assert "no GPU found" in out and rep.meta["no_gpu"] is True
    assert rep.meta["partial"] is False


def test_options_output_save_top_sort(shell, tmp_path, capsys):
    path = tmp_path / "cell.ksreport.json.gz"
    r = shell.run_cell(f"%%kernelprofile -o rep_opts --save {path} --top 2 --sort mean\n"
                       "y = torch.mm(torch.ones(8, 8), torch.ones(8, 8))\n")
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_opts"]
    # Display options are the display's, not the report's: shown with them, saved without them.
    assert "view" not in rep.meta
    assert repr(rep.display(top=2, sort="mean")) in capsys.readouterr().out
    back = ks.load(path)
    assert _count(back, "aten::mm") == _count(rep, "aten::mm") == 1
    assert "view" not in back.meta


def test_no_display_and_last(shell, capsys):
    r = shell.run_cell("%%kernelprofile --no-display -o rep_nd\nz = torch.ones(4) * 3\n")
    assert r.success
    assert "kernelscope report" not in capsys.readouterr().out
    shell.run_line_magic("kernelprofile", "last")
    assert "kernelscope report" in capsys.readouterr().out
    assert _magics(shell).last is shell.user_ns["rep_nd"]


def test_warmup_and_repeat_run_the_cell_k_plus_n_times(shell, capsys):
    shell.user_ns["runs"] = 0
    r = shell.run_cell("%%kernelprofile --warmup 2 --repeat 3 -o rep_rep --no-display\n"
                       "runs += 1\n"
                       "w = torch.mm(torch.ones(8, 8), torch.ones(8, 8))\n")
    cap = capsys.readouterr()
    assert r.success, r.error_in_exec
    assert shell.user_ns["runs"] == 5
    assert "runs 5 times (2 warm-up, 3 recorded)" in cap.err
    rep = shell.user_ns["rep_rep"]
    assert _count(rep, "aten::mm") == 3                      # only the recorded runs
    reps = rep.meta["repeats"]
    assert reps["n"] == 3 and reps["warmup"] == 2
    assert isinstance(reps["per_kernel_total_us"], dict)


def test_cell_that_raises_shows_partial_report_then_the_error(shell, capsys):
    r = shell.run_cell("%%kernelprofile -o rep_err\n"
                       "before = torch.mm(torch.ones(4, 4), torch.ones(4, 4))\n"
                       "1 / 0\n"
                       "after = 1\n")
    out = capsys.readouterr().out
    assert isinstance(r.error_in_exec, ZeroDivisionError)
    assert "before" in shell.user_ns and "after" not in shell.user_ns
    rep = shell.user_ns["rep_err"]
    assert rep.partial and rep.meta["error"].startswith("ZeroDivisionError")
    assert _count(rep, "aten::mm") == 1
    assert out.index("PARTIAL") < out.index("ZeroDivisionError")
    assert re.search(r"line 3", out)                         # the traceback points at the cell's line
    assert active() is None


def test_keyboard_interrupt_stops_profiler_and_next_cell_profiles(shell, capsys):
    r = shell.run_cell("%%kernelprofile -o rep_int --no-display\n"
                       "torch.ones(2) * 2\n"
                       "raise KeyboardInterrupt\n")
    assert isinstance(r.error_in_exec, KeyboardInterrupt)
    assert shell.user_ns["rep_int"].partial
    assert active() is None and not torch._C._autograd._profiler_enabled()
    r = shell.run_cell("%%kernelprofile -o rep_next --no-display\nq = torch.mm(torch.ones(2, 2), torch.ones(2, 2))\n")
    assert r.success and _count(shell.user_ns["rep_next"], "aten::mm") == 1


def test_nested_use_is_a_clear_error(shell, capsys):
    r = shell.run_cell("%%kernelprofile --no-display\n"
                       "import kernelscope as ks\n"
                       "with ks.profile():\n"
                       "    pass\n")
    assert "already recording" in str(r.error_in_exec)
    shell.run_line_magic("kernelprofile", "start")
    try:
        r = shell.run_cell("%%kernelprofile\nprint(1)\n")
        assert "`%kernelprofile start` not yet stopped" in str(r.error_in_exec)
    finally:
        shell.run_line_magic("kernelprofile", "stop --no-display")
    assert active() is None


def test_other_torch_profiler_active_says_how_to_stop_it(shell, capsys):
    other = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    other.start()
    try:
        r = shell.run_cell("%%kernelprofile\nprint(1)\n")
    finally:
        other.stop()
    msg = str(r.error_in_exec)
    assert "another torch.profiler is already recording" in msg and "prof.stop()" in msg


def test_stack_maps_ops_to_the_cells_own_lines(shell, capsys):
    r = shell.run_cell(textwrap.dedent("""\
        %%kernelprofile --stack -o rep_stack --no-display
        a = torch.ones(8, 8)
        def f(t):
            return torch.relu(t)
        for _ in range(2):
            a = torch.mm(a, a)
        b = f(a)
        """))
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_stack"]
    cell = rep.meta["cell"]["file"]
    assert cell.startswith("<ipython-input-") and rep.meta["cell"]["first_line"] == 2
    lines = _cell_lines(rep)
    assert lines["aten::ones"] == [f"{cell}(2): <module>"]    # line 1 is the %%kernelprofile line
    assert lines["aten::mm"] == [f"{cell}(6): <module>"] * 2
    assert lines["aten::relu"] == [f"{cell}(4): f"]


def test_start_stop_spans_several_cells(shell, capsys):
    shell.run_line_magic("kernelprofile", "start --stack -o rep_span --no-display")
    shell.run_cell("s1 = torch.mm(torch.ones(4, 4), torch.ones(4, 4))\n")
    shell.run_cell("k = 2\ns2 = torch.mm(torch.ones(4, 4), torch.ones(4, 4)) * k\n")
    shell.run_line_magic("kernelprofile", "stop")
    rep = shell.user_ns["rep_span"]
    lines = _cell_lines(rep)["aten::mm"]
    assert len(lines) == 2 and lines[0] != lines[1]
    assert lines[0].endswith("(1): <module>") and lines[1].endswith("(2): <module>")
    assert active() is None


def test_bad_option_values_are_usage_errors(shell, capsys):
    from IPython.core.error import UsageError
    for line in ("--repeat 0", "--warmup -1", "--top 0", "--stack --lean"):
        with pytest.raises(UsageError):
            shell.run_cell_magic("kernelprofile", line, "pass\n")
    assert active() is None


def test_help_explains_each_option(shell, capsys):
    doc = _magics(shell).kernelprofile.__doc__
    for opt in ("--top", "--sort", "--output", "--save", "--trace", "--warmup", "--repeat", "--stack",
                "--memory", "--lean", "--no-display", "--baseline", "--compare", "start", "stop", "last"):
        assert opt in doc, opt
    assert "runs K+N times" in doc
    shell.user_ns["ran"] = False
    r = shell.run_cell("%%kernelprofile --help\nran = True\n")
    assert r.success and shell.user_ns["ran"] is False
    out = capsys.readouterr().out
    assert "--repeat N" in out and "Record CUDA activity only" in out


def test_memory_records_the_allocator(shell, capsys):
    shell.user_ns["kept"] = []
    r = shell.run_cell("%%kernelprofile --memory -o rep_mem --no-display\nkept.append(torch.ones(512, 1024))\n")
    assert r.success, r.error_in_exec
    m = shell.user_ns["rep_mem"].memory
    assert m is not None and m.device == "cpu" and m.peak_bytes >= 2 * 2**20
    assert "aten::ones" in set(m.held["op"])
    r = shell.run_cell("%%kernelprofile -o rep_nomem --no-display\nkept.append(torch.ones(8, 8))\n")
    assert r.success and shell.user_ns["rep_nomem"].memory is None      # off by default: it costs per op
    shell.run_line_magic("kernelprofile", "start --memory -o rep_span --no-display")
    shell.run_cell("kept.append(torch.ones(256, 1024))\n")
    shell.run_line_magic("kernelprofile", "stop")
    assert shell.user_ns["rep_span"].memory.peak_bytes >= 2**20
    assert active() is None


def test_baseline_and_compare(shell, capsys):
    pytest.importorskip("kernelscope.analysis.diff")
    shell.run_cell("%%kernelprofile --baseline small --no-display\nu = torch.mm(torch.ones(8, 8), torch.ones(8, 8))\n")
    assert "small" in _magics(shell).baselines
    r = shell.run_cell("%%kernelprofile --compare small -o rep_cmp\nu = torch.mm(torch.ones(64, 64), torch.ones(64, 64))\n")
    assert r.success, r.error_in_exec
    assert shell.user_ns["rep_cmp"].meta["compared_with"] == "small"
    r = shell.run_cell("%%kernelprofile --compare nosuch --no-display\nu = 1\n")
    assert "no baseline named 'nosuch'" in capsys.readouterr().err


def test_baseline_again_re_measures_and_keeps_the_first(shell, capsys):
    shell.run_cell("%%kernelprofile --baseline step --repeat 2 -o first_step --no-display\n"
                   "u = torch.mm(torch.ones(8, 8), torch.ones(8, 8))\n")
    first = _magics(shell).baselines["step"]
    assert first is shell.user_ns["first_step"]
    capsys.readouterr()
    r = shell.run_cell("%%kernelprofile --baseline step --repeat 2 -o fixed_step\n"
                       "u = torch.mm(torch.ones(64, 64), torch.ones(64, 64))\n")
    assert r.success, r.error_in_exec
    out = capsys.readouterr().out
    # The comparison is shown (with the re-measure section where the baseline listed items), and
    # one line says the baseline stays the first run and how to store a new one.
    assert "kernelscope comparison" in out
    assert "re-measured against baseline 'step', which stays as it was" in out
    assert "--baseline NEW_NAME" in out and "%kernelprofile baselines" in out
    assert _magics(shell).baselines["step"] is first
    assert shell.user_ns["fixed_step"].meta["compared_with"] == "step"
    # A third run is measured against the same first run, and a new name stores a new baseline.
    shell.run_cell("%%kernelprofile --baseline step --no-display\nu = torch.ones(4) * 2\n")
    assert _magics(shell).baselines["step"] is first
    shell.run_cell("%%kernelprofile --baseline step2 --no-display\nu = torch.ones(4) * 2\n")
    assert _magics(shell).baselines["step2"] is _magics(shell).last
    capsys.readouterr()
    shell.run_line_magic("kernelprofile", "baselines")
    listed = capsys.readouterr().out
    assert "step: " in listed and "2 repeats" in listed and "step2: " in listed and "1 run (no repeats)" in listed


def _ipython_load_ext(env, cwd):
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "import kernelscope, kernelscope.jupyter.magics as magics\n"
            "sh = InteractiveShell.instance()\n"
            "sh.run_line_magic('load_ext', 'kernelscope')\n"
            "r = sh.run_cell('%%kernelprofile -o rep --no-display\\nimport torch\\nt = torch.mm(torch.ones(3, 3), torch.ones(3, 3))\\n')\n"
            "assert r.success, r.error_in_exec\n"
            "print('FILE', kernelscope.__file__)\n"
            "print('MAGICS', magics.__file__)\n"
            "print('MM', int((sh.user_ns['rep'].ops['name'] == 'aten::mm').sum()))\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_load_ext_from_the_editable_install(tmp_path):
    import importlib.metadata
    try:
        importlib.metadata.distribution("kernelscope")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("kernelscope is not pip-installed here (e.g. the GPU machine runs from PYTHONPATH)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = _ipython_load_ext(env, tmp_path)  # not the repo root: the import must come from the install
    assert f"FILE {ROOT}/kernelscope/__init__.py" in out
    assert f"MAGICS {ROOT}/kernelscope/jupyter/magics.py" in out
    assert "MM 1" in out


def test_load_ext_from_a_built_wheel(tmp_path):
    dist = tmp_path / "dist"
    b = subprocess.run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation",
                        "-w", str(dist)], capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, (b.stdout + b.stderr)[-4000:]
    wheels = list(dist.glob("kernelscope-*.whl"))
    assert len(wheels) == 1
    site = tmp_path / "site"
    i = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site),
                        str(wheels[0])], capture_output=True, text=True, timeout=300)
    assert i.returncode == 0, i.stderr[-3000:]
    assert (site / "kernelscope" / "jupyter" / "magics.py").is_file()
    assert not (site / "magics").exists() and not (site / "kernelscope_magics").exists()   # one top-level package
    env = dict(os.environ, PYTHONPATH=str(site))
    out = _ipython_load_ext(env, tmp_path)
    assert f"FILE {site}/kernelscope/__init__.py" in out
    assert f"MAGICS {site}/kernelscope/jupyter/magics.py" in out
    assert "MM 1" in out


def test_in_a_real_ipykernel_value_then_report_and_cell_lines():
    """Through a real Jupyter kernel (ipykernel, as JupyterLab runs it): the cell's value comes
    first, then the report's display bundle; --stack lines use ipykernel's cell file names."""
    jc = pytest.importorskip("jupyter_client.manager")
    km, kc = jc.start_new_kernel(kernel_name="python3")

    def run(code):
        out = []
        for m in iopub_until_idle(kc, kc.execute(code)):
            t = m["msg_type"]
            if t == "stream" and m["content"]["name"] == "stdout":
                out.append(("stdout", m["content"]["text"]))
            elif t in ("execute_result", "display_data"):
                out.append((t, sorted(m["content"]["data"])))
            elif t == "error":
                out.append(("error", m["content"]["ename"]))
        return out

    try:
        assert not [x for x in run("%load_ext kernelscope") if x[0] == "error"]
        out = run("%%kernelprofile --stack -o rep\nimport torch\na = torch.ones(4, 4)\nb = torch.mm(a, a)\nb.sum()")
        kinds = [x[0] for x in out if x[0] != "stdout"]
        assert kinds == ["execute_result", "display_data"]
        bundle = out[[x[0] for x in out].index("display_data")][1]
        assert "text/plain" in bundle and "text/html" in bundle
        out = run("from kernelscope.capture.lines import line_sources\n"
                  "o = rep.ops[rep.ops.name.str.startswith('aten::')]\n"
                  "print(rep.meta['cell']['file'])\n"
                  "print(dict(zip(o.name, line_sources(o.tid, o.start_us, rep.ops))))")
        text = "".join(x[1] for x in out if x[0] == "stdout")
        cell = text.splitlines()[0]
        assert re.fullmatch(r".*/ipykernel_\d+/\d+\.py", cell)
        lines = eval(text.splitlines()[1])
        assert lines["aten::ones"] == f"{cell}(3): <module>"
        assert lines["aten::mm"] == f"{cell}(4): <module>"
        assert lines["aten::sum"] == f"{cell}(5): <module>"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_metrics_and_stalls_without_a_gpu_keep_the_profile(shell, capsys):
    """--metrics and --stalls on a machine without CUDA: the ordinary profile with a note each.
    (On a GPU the second, stall-sampling run is announced as --repeat's runs are:
    tests/test_gpu_counters.py.)"""
    if torch.cuda.is_available():
        pytest.skip("has a GPU: tests/test_gpu_counters.py covers this")
    shell.user_ns["runs_ms"] = []
    r = shell.run_cell(textwrap.dedent("""\
        %%kernelprofile --metrics --interval-us 50 --stalls --no-display -o rep_ms
        runs_ms.append(1)
        y_ms = torch.ones(8) * 2
        """))
    assert r.success, r.error_in_exec
    # no second run where stalls cannot be sampled: nothing announced, the cell ran once
    assert "the cell runs" not in capsys.readouterr().err
    assert shell.user_ns["runs_ms"] == [1]
    rep = shell.user_ns["rep_ms"]
    assert (rep.ops["name"] == "aten::mul").sum() == 1
    assert any("hardware counters need a CUDA device" in n for n in rep.notes)
    assert any("warp stalls need a CUDA device" in n for n in rep.notes)
    assert len(rep.metrics) == 0 and len(rep.stalls) == 0


def test_metrics_options_are_checked(shell):
    r = shell.run_cell("%%kernelprofile --interval-us 20\nx = 1\n")
    assert not r.success and "with --metrics" in str(r.error_in_exec)
    r = shell.run_cell("%%kernelprofile --metrics --interval-us 0.5\nx = 1\n")
    assert not r.success and "at least 1" in str(r.error_in_exec)
    with pytest.raises(Exception, match="--stalls are for %%kernelprofile on a cell"):
        shell.run_line_magic("kernelprofile", "start --stalls")


def test_metrics_names_reach_the_profile():
    from kernelscope.jupyter.magics import _metrics
    assert _metrics("default") is True and _metrics(None) is None
    assert _metrics("dram__bytes.sum, sm__cycles_active.avg") == ["dram__bytes.sum", "sm__cycles_active.avg"]


def test_titles_name_the_cell_and_the_output(shell, capsys, tmp_path):
    """A report is titled by its cell's number (In [N]) and the -o name, never by IPython's temp
    file name, and a saved one keeps its title."""
    path = tmp_path / "t.ksreport.json"
    r = shell.run_cell(f"%%kernelprofile -o rep_named --no-display --save {path}\nq = torch.ones(4) + 1\n",
                       store_history=True)
    assert r.success, r.error_in_exec
    n = r.execution_count
    rep = shell.user_ns["rep_named"]
    assert rep.title == f"rep_named · In [{n}]" and not rep.title.endswith(".py")
    assert ks.load(path).title == rep.title
    r = shell.run_cell("%%kernelprofile --no-display\nq = torch.ones(4) + 2\n", store_history=True)
    assert _magics(shell).last.title == f"In [{r.execution_count}]"
    # %kernelprofile start ... stop: the cells it spanned.
    a = shell.run_cell("%kernelprofile start --no-display", store_history=True).execution_count
    shell.run_cell("q = torch.ones(4) * 3", store_history=True)
    b = shell.run_cell("%kernelprofile stop", store_history=True).execution_count
    assert _magics(shell).last.title == f"In [{a}]–[{b}]"
    capsys.readouterr()


def test_kineto_log_lines_stay_out_of_the_cell(shell, capfd):
    """Kineto writes USDT lines (and, without a GPU, gpuGetDeviceCount failed with code 35)
    straight to file descriptor 2: they are kept in the report, not shown under the cell."""
    capfd.readouterr()
    r = shell.run_cell("%%kernelprofile -o rep_quiet --no-display\nimport sys\nq = torch.ones(4) * 3\n"
                       "print('user stderr', file=sys.stderr)\n")
    assert r.success, r.error_in_exec
    out, err = capfd.readouterr()
    assert "USDT" not in err and "gpuGetDeviceCount" not in err, err
    assert "user stderr" in err                              # the cell's own stderr still shows
    log = shell.user_ns["rep_quiet"].meta.get("profiler_log", [])
    assert any("profiler_start" in ln for ln in log), log
    assert not [n for n in shell.user_ns["rep_quiet"].notes if "USDT" in n]


def test_a_bad_save_path_keeps_the_cells_own_exception(shell, tmp_path, capsys):
    bad = tmp_path / "nofolder" / "r.ksreport.json"
    r = shell.run_cell(f"%%kernelprofile -o rep_badsave --save {bad}\n"
                       "x = torch.ones(4) + 1\n"
                       "1 / 0\n")
    captured = capsys.readouterr()
    assert isinstance(r.error_in_exec, ZeroDivisionError)      # the cell's error, not the save's
    assert f"the report could not be saved to {bad}" in captured.err
    rep = shell.user_ns["rep_badsave"]
    assert rep.partial and any("could not be saved" in n for n in rep.notes)
    assert active() is None


def test_a_bad_trace_path_keeps_the_recording(shell, tmp_path, capsys):
    bad = tmp_path / "missing" / "t.pt.trace.json"
    r = shell.run_cell(f"%%kernelprofile -o rep_badtrace --no-display --trace {bad}\n"
                       "y = torch.mm(torch.ones(4, 4), torch.ones(4, 4))\n")
    assert r.error_in_exec is None
    rep = shell.user_ns["rep_badtrace"]
    assert _count(rep, "aten::mm") == 1                          # the recording is all there
    assert any(f"the Chrome trace could not be written to {bad}" in n for n in rep.notes)
    assert "raw_trace" not in rep.meta and not bad.exists()


def test_a_cells_first_run_is_noted(shell, capsys):
    """Issue 28: a cell whose code has not run before in this kernel is profiled cold; the report
    says so. Run again (or after the same code ran as a plain cell) it is not noted."""
    from kernelscope.jupyter.magics import FIRST_RUN_NOTE
    code = "fr = torch.mm(torch.ones(12, 12), torch.ones(12, 12)) * 3\n"
    r = shell.run_cell("%%kernelprofile -o rep_first --no-display\n" + code, store_history=True)
    assert r.success, r.error_in_exec
    rep = shell.user_ns["rep_first"]
    assert rep.meta.get("first_run") is True and FIRST_RUN_NOTE in rep.notes
    assert "first run: this cell's code has not run before" in repr(rep)
    r = shell.run_cell("%%kernelprofile -o rep_second --no-display\n" + code, store_history=True)
    assert r.success, r.error_in_exec
    assert "first_run" not in shell.user_ns["rep_second"].meta
    plain = "fr2 = torch.mm(torch.ones(6, 6), torch.ones(6, 6))\n"
    shell.run_cell(plain, store_history=True)
    shell.run_cell("%%kernelprofile -o rep_third --no-display\n" + plain, store_history=True)
    assert FIRST_RUN_NOTE not in shell.user_ns["rep_third"].notes
    # --warmup 1 ran it unrecorded first: no note.
    shell.run_cell("%%kernelprofile --warmup 1 -o rep_warm --no-display\nfr3 = torch.ones(3) * 2\n", store_history=True)
    assert FIRST_RUN_NOTE not in shell.user_ns["rep_warm"].notes
    capsys.readouterr()


def test_load_ext_arms_the_graph_watch_once_torch_is_imported():
    # %load_ext does not import torch: the watch is armed before the first cell after torch is.
    pytest.importorskip("torch")
    from IPython.core.interactiveshell import InteractiveShell

    from kernelscope.capture import graph_watch
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    sh.run_cell("import torch")
    sh.run_cell("1")
    w = graph_watch.current()
    assert w is not None
    import torch
    # Without a GPU the watch stays off (nothing to capture); with one it is on.
    assert w.on == torch.cuda.is_available()
    assert not any(getattr(cb, "__name__", "") == "arm" for cb in sh.events.callbacks["pre_run_cell"])
