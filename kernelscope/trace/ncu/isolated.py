"""Reading an Nsight Compute report in a child process.

NVIDIA's ``ncu_report`` aborts the whole process (protobuf ``Check failed``, SIGABRT) on some
damaged reports that pass our framing check (two records swapped, for one). A report from
elsewhere is read in a child Python that pickles the tables back, so such a file costs the
child, not the notebook kernel or ``jupyter server``; its death becomes a TraceError.

The parent makes and always removes the temp folder the report is unpacked into (a child that
dies, is killed or interrupted cannot clean up after itself), and gives the child a time budget
(``KERNELSCOPE_NCU_TIMEOUT_S``, default 300 s) and a size cap on each file it writes (the unpack
cap, :func:`~kernelscope.trace.files.max_trace_bytes`).
"""
from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelscope.errors import TraceError

# The package's parent folder, so that the child imports this very kernelscope.
_ROOT = str(Path(os.path.abspath(__file__)).parents[3])


def read_isolated(path, *, source: bool | int = True, timeout_s: float | None = None):
    """:func:`~kernelscope.trace.ncu.report.read_ncu_report` run in a child process, given at
    most ``timeout_s`` seconds (None: :func:`ncu_timeout_s`).

    >>> read_isolated("tests/data/ncu_rep/triton_kernels.ncu-rep.xz").launches.shape[0]   # doctest: +SKIP
    7
    """
    from kernelscope.trace.files import max_trace_bytes
    from kernelscope.trace.ncu.report import import_ncu_report
    name = os.fspath(path)
    import_ncu_report(name)    # the install hint from here, where the user's environment is
    budget = ncu_timeout_s() if timeout_s is None else float(timeout_s)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
    work = tempfile.mkdtemp(prefix="kernelscope-ncu-")
    env["TMPDIR"] = work        # whatever NVIDIA's reader writes goes where we remove it
    limit = max_trace_bytes() + (64 << 20)
    try:
        try:
            child = subprocess.Popen([sys.executable, "-m", "kernelscope.trace.ncu.isolated"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, preexec_fn=lambda: _cap_files(limit))
        except OSError as e:
            raise TraceError(name, f"could not start a process to read it ({e.strerror or e})") from None
        try:
            out, err = child.communicate(pickle.dumps((name, source, work)), timeout=budget)
        except subprocess.TimeoutExpired:
            raise TraceError(name, f"reading it took longer than {budget:g} s (set "
                                   "KERNELSCOPE_NCU_TIMEOUT_S to allow more)") from None
        finally:
            if child.poll() is None:        # timed out or interrupted (Ctrl-C): end it first
                child.kill()
                child.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if child.returncode == 0:
        kind, value = pickle.loads(out)   # our own child's answer, not the file's bytes
        if kind == "error":
            raise TraceError(name, value)
        return value
    raise TraceError(name, f"Nsight Compute's reader crashed on it ({_death(child.returncode, err)}): "
                           "the report is damaged")


def ncu_timeout_s() -> float:
    """Seconds a child may take to read one ``.ncu-rep``: ``KERNELSCOPE_NCU_TIMEOUT_S``, else 300.

    >>> ncu_timeout_s() > 0
    True
    """
    env = os.environ.get("KERNELSCOPE_NCU_TIMEOUT_S")
    if not env:
        return 300.0
    try:
        value = float(env)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"KERNELSCOPE_NCU_TIMEOUT_S must be a number of seconds above 0, not {env!r}")
    return value


def _cap_files(limit: int) -> None:
    """In the child, before it runs: no file it writes grows past ``limit`` bytes."""
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _death(rc: int, stderr: bytes) -> str:
    why = f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit status {rc}"
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    said = next((ln for ln in lines if "Check failed" in ln), lines[-1] if lines else "")
    return f"{why}: {said[-200:]}" if said else why


def _main() -> None:
    from kernelscope.trace.ncu.report import read_ncu_report
    name, source, work = pickle.loads(sys.stdin.buffer.read())
    # The answer goes to the real stdout; whatever the reader prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        answer = ("tables", read_ncu_report(name, source=source, workdir=work))
    except TraceError as e:
        answer = ("error", e.problem)
    out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    out.close()


if __name__ == "__main__":
    _main()
