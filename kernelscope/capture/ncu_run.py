"""Running programs under Nsight Compute (``ncu``): the deep dive of ``%%kernelprofile --ncu``
and ``python -m kernelscope ncu -- CMD``.

ncu cannot attach to a running Jupyter kernel (with ncu 2025.3.1 a first ``--mode attach``
profiled one kernel and hung, a second profiled nothing), so a cell is *replayed*: a child
Python process under ncu runs the notebook's earlier cells (plain Python, transformed by the
parent), then the cell inside the NVTX range :data:`RANGE`, and ncu profiles only that range
(``--nvtx --nvtx-include``). Nothing here imports IPython; the child needs none either.

Every way this fails ends in :class:`NcuError` with a message that says what to do: no ncu,
counters not permitted (``ERR_NVGPUCTRPERM``), the child failing (its stderr tail), nothing
profiled (a ``--kernels`` filter matching no kernel).
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RANGE = "kernelscope"       # the NVTX push/pop range around the profiled cell
NCU_ENV = "KERNELSCOPE_NCU"  # path of the ncu to use, where it is not on PATH
DEFAULT_SET = "full"         # every section the deep dive shows (stalls, source, roofline)
STDERR_TAIL = 25             # lines of the child's stderr quoted when it fails
_COMMON_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/NVIDIA-Nsight-Compute*/ncu",
                  "/usr/local/cuda-*/bin/ncu")
PERM_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"


class NcuError(RuntimeError):
    """Profiling under Nsight Compute did not give a report; the message says why and what to do."""


@dataclass
class NcuRun:
    """What one ncu run did: the report it wrote and what the child process said."""

    report_path: str | None
    argv: list
    seconds: float
    returncode: int
    log: str = ""
    stdout: str = ""
    stderr: str = ""
    profiled: list = field(default_factory=list)     # kernel names ncu says it profiled
    status: dict = field(default_factory=dict)       # the replay child's own account (cells, times)


def find_ncu(explicit: str | None = None) -> str:
    """The ncu executable: ``explicit``, else ``$KERNELSCOPE_NCU``, else ``ncu`` on PATH, else the
    usual install places; an :class:`NcuError` saying how to point at one if there is none.

    >>> find_ncu()                                       # doctest: +SKIP
    '/usr/local/cuda/bin/ncu'
    """
    for cand, what in ((explicit, "the path given"), (os.environ.get(NCU_ENV), f"${NCU_ENV}")):
        if cand:
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
            raise NcuError(f"{what} ({cand}) is not an executable ncu")
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _COMMON_PLACES:
        hits = sorted(glob.glob(pattern))  # noqa: PTH207 - absolute patterns, which Path.glob does not take
        if hits and os.access(hits[-1], os.X_OK):
            return hits[-1]
    raise NcuError(
        "Nsight Compute (ncu) was not found on PATH. Install Nsight Compute (it comes with the CUDA "
        "toolkit, or from https://developer.nvidia.com/nsight-compute), or point kernelscope at it: "
        f"%env {NCU_ENV}=/path/to/ncu in the notebook (export {NCU_ENV}=... in a shell).")


def ncu_argv(ncu: str, out: str, command: list, *, section_set: str = DEFAULT_SET, kernels: str | None = None,
             launches: int | None = None, nvtx_range: str | None = None, log_file: str | None = None) -> list:
    """The ncu command line (``--clock-control none``: clocks as the program runs them).

    >>> ncu_argv("ncu", "/tmp/r", ["python", "x.py"], kernels="gemm", launches=3, nvtx_range="kernelscope")[:6]
    ['ncu', '--set', 'full', '--import-source', 'yes', '--clock-control']
    """
    argv = [ncu, "--set", section_set, "--import-source", "yes", "--clock-control", "none",
            "--target-processes", "all", "-f", "-o", out]
    if nvtx_range:
        argv += ["--nvtx", "--nvtx-include", f"{nvtx_range}/"]
    if kernels:
        # Match the names kernelscope shows (demangled, with namespaces and templates).
        argv += ["--kernel-name-base", "demangled", "--kernel-name", f"regex:{kernels}"]
    if launches:
        argv += ["--launch-count", str(int(launches))]
    if log_file:
        argv += ["--log-file", log_file]
    return argv + list(command)


def run_ncu(argv: list, out: str, *, cwd=None, env=None, timeout=None, status_file=None) -> NcuRun:
    """Run ncu, wait, and check what came out; raises :class:`NcuError` unless a report was written.

    The child runs in its own process group: Ctrl-C (or a timeout) stops ncu and the program
    it profiles, then re-raises.
    """
    log = _value_after(argv, "--log-file")
    report = out if out.endswith(".ncu-rep") else out + ".ncu-rep"
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True)
    except OSError as e:
        raise NcuError(f"could not start {argv[0]}: {e}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException as e:   # KeyboardInterrupt, TimeoutExpired: stop the whole group we started
        _stop(proc)
        if isinstance(e, subprocess.TimeoutExpired):
            raise NcuError(f"Nsight Compute did not finish within {timeout:.0f} s and was stopped; profile fewer "
                           "kernels (--kernels REGEX, --launches N) or a smaller --set") from None
        raise
    seconds = time.perf_counter() - t0
    text = _read(log) if log else stdout
    status = {}
    if status_file and os.path.exists(status_file):
        try:
            with Path(status_file).open() as f:
                status = json.load(f)
        except (OSError, ValueError):
            status = {}
    run = NcuRun(report_path=report if os.path.exists(report) else None, argv=list(argv), seconds=seconds,
                 returncode=proc.returncode, log=text, stdout=stdout, stderr=stderr,
                 profiled=profiled_kernels(text), status=status)
    check_run(run)
    return run


def profiled_kernels(log: str) -> list:
    """Kernel names from ncu's ``==PROF== Profiling "NAME" ...`` lines, in order.

    >>> profiled_kernels('==PROF== Profiling "add_kernel" - 0: 0%....50%....100% - 40 passes')
    ['add_kernel']
    """
    return re.findall(r'^==PROF== Profiling "(.*?)"', log or "", flags=re.M)


def check_run(run: NcuRun) -> None:
    """Raise :class:`NcuError` with the cause when ``run`` gave no usable report.

    >>> try:
    ...     check_run(NcuRun(None, ["ncu"], 1.0, 1, log="==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"))
    ... except NcuError as e:
    ...     print(str(e)[:61])
    Nsight Compute may not read this GPU's performance counters (
    """
    text = "\n".join([run.log or "", run.stdout or "", run.stderr or ""])
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuError(
            "Nsight Compute may not read this GPU's performance counters (ERR_NVGPUCTRPERM): "
            "the driver restricts them to administrators. Run the notebook as root, or have an administrator allow "
            "all users (options nvidia NVreg_RestrictProfilingToAdminUsers=0 in /etc/modprobe.d, then reload the "
            f"driver or reboot); see {PERM_URL}")
    failed = run.status.get("failed")
    if failed:
        tail = "\n".join((run.stderr or "").rstrip().splitlines()[-STDERR_TAIL:])
        where = "this cell" if failed.get("label") == "cell" else f"cell {failed.get('label')}"
        raise NcuError(
            f"the replay failed in {where} ({failed.get('error', 'an error')}); nothing was profiled. "
            + ("Name the cells to replay with --setup (e.g. --setup 1,3-5), or make the failing cell succeed. "
               if failed.get("label") != "cell" else "")
            + f"The child's stderr ends:\n{tail}")
    if run.report_path is None:
        errors = [ln for ln in (run.log or "").splitlines() if ln.startswith("==ERROR==")]
        if errors:
            raise NcuError("Nsight Compute failed: " + " ".join(e[len("==ERROR=="):].strip() for e in errors[:3]))
        if "No kernels were profiled" in text:
            raise NcuError("Nsight Compute profiled no kernel")   # the caller says which filter
        tail = "\n".join((run.stderr or run.stdout or "").rstrip().splitlines()[-STDERR_TAIL:])
        raise NcuError(f"Nsight Compute wrote no report (exit status {run.returncode}). The output ends:\n{tail}")


def _stop(proc):
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def _value_after(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def _read(path) -> str:
    try:
        with Path(path).open(errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# -- replaying notebook cells -----------------------------------------------------------------------
@dataclass
class ReplayCell:
    """One cell of the replay: a label ("[3]", or "cell" for the profiled one) and plain Python.
    An ``optional`` cell (in the replay only because it changes an object the profiled cell uses)
    is skipped, with a note, if it raises; ``seconds`` is how long it ran live (None: unknown)."""

    label: str
    source: str
    optional: bool = False
    seconds: float | None = None


def write_replay(workdir: str, setup: list, cell: ReplayCell, *, warmup: int = 0,
                 proton: str | None = None) -> tuple[str, str]:
    """Write the child's script and its cells into ``workdir``; returns (script, status file).

    Each cell is its own file (``cell_3.py``), so that ``inspect`` finds the source of functions
    it defines (Triton's ``@triton.jit`` needs it) and Nsight Compute's source view shows the lines.
    The profiled cell runs inside an NVTX range (for ncu), or, with ``proton`` (a path without
    suffix), under Triton's Proton PC sampling, which writes ``proton + ".hatchet"``.
    """
    cells = []
    for c in [*setup, cell]:
        name = "cell_this.py" if c.label == "cell" else f"cell_{re.sub(r'[^0-9A-Za-z_]+', '_', c.label).strip('_')}.py"
        path = str(Path(workdir, name))
        Path(path).write_text(c.source)
        cells.append({"label": c.label, "path": path, "optional": bool(c.optional)})
    status = str(Path(workdir, "status.json"))
    script = str(Path(workdir, "replay.py"))
    Path(script).write_text(_CHILD.replace("@CELLS@", repr(cells)).replace("@STATUS@", json.dumps(status))
                            .replace("@RANGE@", json.dumps(RANGE)).replace("@WARMUP@", str(int(warmup)))
                            .replace("@PROTON@", repr(proton)))
    return script, status


def replay(setup: list, cell: ReplayCell, *, section_set: str = DEFAULT_SET, kernels: str | None = None,
           launches: int | None = None, warmup: int = 0, ncu: str | None = None, python: str | None = None,
           cwd=None, timeout=None, workdir: str | None = None) -> NcuRun:
    """Run ``setup`` cells then ``cell`` in a child Python under ncu, profiling only ``cell``.

    >>> run = replay([ReplayCell("[1]", "import torch; x = torch.ones(9, device='cuda')")],
    ...              ReplayCell("cell", "y = x * 2"))                                     # doctest: +SKIP
    >>> run.report_path, run.status["cell_seconds"]                                      # doctest: +SKIP
    """
    exe = find_ncu(ncu)
    workdir = workdir or tempfile.mkdtemp(prefix="kernelscope-ncu-")
    script, status = write_replay(workdir, setup, cell, warmup=warmup)
    out = str(Path(workdir, "cell.ncu-rep"))
    argv = ncu_argv(exe, out, [python or sys.executable, script], section_set=section_set, kernels=kernels,
                    launches=launches, nvtx_range=RANGE, log_file=str(Path(workdir, "ncu.log")))
    return run_ncu(argv, out, cwd=cwd, timeout=timeout, status_file=status, env=child_env(workdir))


def child_env(workdir: str) -> dict:
    """The replay child's environment: ours, with a Triton cache of its own, so that Triton
    kernels compile from the replayed cell files (a cached kernel keeps the line info of the
    notebook cell it was first compiled from, which no file holds).

    >>> child_env("/tmp/w")["TRITON_CACHE_DIR"]
    '/tmp/w/triton-cache'
    """
    return dict(os.environ, TRITON_CACHE_DIR=str(Path(workdir, "triton-cache")))


def replay_stalls(setup: list, cell: ReplayCell, *, python: str | None = None, cwd=None, timeout=None,
                  workdir: str | None = None) -> tuple:
    """Run ``setup`` cells then ``cell`` in a child Python, ``cell`` under Proton PC sampling;
    returns ``(hatchet path or None, status dict, seconds, stderr tail)``.

    >>> path, status, secs, err = replay_stalls([], ReplayCell("cell", "import torch; torch.ones(9, device='cuda') * 2"))  # doctest: +SKIP
    """
    workdir = workdir or tempfile.mkdtemp(prefix="kernelscope-stalls-")
    base = str(Path(workdir, "stalls"))
    script, status_file = write_replay(workdir, setup, cell, proton=base)
    t0 = time.perf_counter()
    p = subprocess.Popen([python or sys.executable, script], cwd=cwd, env=child_env(workdir),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except (KeyboardInterrupt, subprocess.TimeoutExpired):
        _stop(p)
        raise
    status = {}
    try:
        with Path(status_file).open() as f:
            status = json.load(f)
    except (OSError, ValueError):
        pass
    status["returncode"] = p.returncode
    path = base + ".hatchet"
    return (path if os.path.exists(path) else None), status, time.perf_counter() - t0, (err or "")[-3000:]


# The replay child. Plain Python: the cells were transformed by IPython in the parent; what is
# left of IPython in them (get_ipython().run_line_magic(...) for %time, %matplotlib, !pip ...)
# meets a small stand-in that runs the bodies of magics that only time or capture their code,
# applies the state-changing %env, %cd and %run, and skips the others, saying so in the status file.
_CHILD = r'''
import json, os, sys, time, traceback

CELLS = @CELLS@
STATUS = @STATUS@
RANGE = @RANGE@
WARMUP = @WARMUP@
PROTON = @PROTON@
status = {"cells": [], "skipped": [], "skipped_cells": [], "failed": None, "nvtx": None}
# The cells get a __main__ of their own (as in the notebook): our names stay out of their way,
# and pickle/multiprocessing find the functions they define.
import types
_main = types.ModuleType("__main__")
_main.__builtins__ = __builtins__
sys.modules["__main__"] = _main
ns = _main.__dict__
_RUN_BODY = {"time", "timeit", "prun", "capture", "kernelprofile", "memit"}
_OURS = {"kernelprofile", "load_ext", "reload_ext"}


def _save():
    with open(STATUS, "w") as f:
        json.dump(status, f)


class _Shell:
    """Stands in for IPython's shell in the replay."""
    user_ns = ns

    def run_line_magic(self, name, line, _stack_depth=1):
        if name in _RUN_BODY and line.strip():
            exec(compile(line, "<%" + name + ">", "exec"), ns)
        elif name == "env" and ("=" in line or len(line.split()) == 2):   # state the cells rely on
            key, _, value = line.strip().partition("=") if "=" in line else line.strip().partition(" ")
            os.environ[key.strip()] = value.strip()
        elif name == "cd" and line.strip():
            os.chdir(os.path.expanduser(line.strip().strip("'\"")))
        elif name == "run" and line.split():
            args = line.split()
            path = [a for a in args if not a.startswith("-")][0]
            argv, sys.argv = sys.argv, [path] + args[args.index(path) + 1:]
            try:
                with open(path) as f:
                    exec(compile(f.read(), path, "exec"), ns)
            finally:
                sys.argv = argv
        elif name not in _OURS:
            status["skipped"].append("%" + name + " " + line)

    def run_cell_magic(self, name, line, cell):
        if name in _RUN_BODY:
            exec(compile(cell, "<%%" + name + ">", "exec"), ns)
        elif name == "writefile":
            path = line.split()[-1]
            with open(path, "a" if "-a" in line.split() else "w") as f:
                f.write(cell)
        else:
            status["skipped"].append("%%" + name + " " + line)

    def system(self, cmd):
        status["skipped"].append("!" + cmd)

    def getoutput(self, cmd, split=True):
        status["skipped"].append("!" + cmd)
        return []

    def __getattr__(self, name):
        raise AttributeError("get_ipython()." + name + " is not available in kernelscope's replay (no IPython here)")


ns["get_ipython"] = lambda: _Shell()


def _nvtx():
    """push and pop of an NVTX range, from a library the cells already use where possible."""
    if "torch" in sys.modules:
        import torch
        return "torch", torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    if "cupy" in sys.modules:
        import cupy
        return "cupy", cupy.cuda.nvtx.RangePush, cupy.cuda.nvtx.RangePop
    try:
        import nvtx
        return "nvtx", nvtx.push_range, nvtx.pop_range
    except ImportError:
        pass
    try:
        import torch
        return "torch", torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except ImportError:
        pass
    import ctypes
    for lib in ("libnvToolsExt.so.1", "libnvToolsExt.so"):
        try:
            nv = ctypes.CDLL(lib)
            return lib, (lambda name: nv.nvtxRangePushA(name.encode())), nv.nvtxRangePop
        except OSError:
            continue
    raise RuntimeError("no way to open an NVTX range here (install torch, cupy or the nvtx package)")


def _run(label, path):
    t0 = time.perf_counter()
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    exec(code, ns)
    return time.perf_counter() - t0


t_setup = time.perf_counter()
for c in CELLS[:-1]:
    try:
        s = _run(c["label"], c["path"])
    except BaseException as e:
        error = type(e).__name__ + ": " + str(e)[:300]
        if c.get("optional") and isinstance(e, Exception):
            # It binds nothing the profiled cell needs: go on without it, and say so.
            status["skipped_cells"].append({"label": c["label"], "error": error})
            print("kernelscope replay: " + c["label"] + " raised " + error + "; skipped", file=sys.stderr)
            continue
        status["failed"] = {"label": c["label"], "error": error}
        _save()
        traceback.print_exc()
        sys.exit(3)
    status["cells"].append({"label": c["label"], "seconds": s})
status["setup_seconds"] = time.perf_counter() - t_setup
last = CELLS[-1]
try:
    for _ in range(WARMUP):
        _run("cell", last["path"])
    if PROTON:
        # Proton PC sampling around this cell only: a CUPTI client of its own, in a process where
        # no torch.profiler ran (one activity subscriber per process before CUDA 13.3).
        import triton.profiler as proton
        _save()
        proton.start(PROTON, backend="cupti", mode="pcsampling")
        try:
            status["cell_seconds"] = _run("cell", last["path"])
            if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
                sys.modules["torch"].cuda.synchronize()
        finally:
            proton.finalize()
    else:
        kind, push, pop = _nvtx()
        status["nvtx"] = kind
        _save()
        push(RANGE)
        try:
            status["cell_seconds"] = _run("cell", last["path"])
            if kind == "torch" and sys.modules["torch"].cuda.is_available():
                sys.modules["torch"].cuda.synchronize()   # the cell's kernels finish inside the range
        finally:
            pop()
except BaseException as e:
    status["failed"] = {"label": "cell", "error": type(e).__name__ + ": " + str(e)[:300]}
    _save()
    traceback.print_exc()
    sys.exit(4)
_save()
'''
