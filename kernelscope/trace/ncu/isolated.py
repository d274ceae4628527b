"""Reading an Nsight Compute report in a child process.

NVIDIA's ``ncu_report`` aborts the whole process (protobuf ``Check failed``, SIGABRT) on some
damaged reports that pass our framing check (two records swapped, for one). A report from
elsewhere is read in a child Python that pickles the tables back, so such a file costs the
child, not the notebook kernel or ``jupyter server``; its death becomes a TraceError.
"""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

from kernelscope.errors import TraceError

# The package's parent folder, so that the child imports this very kernelscope.
_ROOT = str(Path(os.path.abspath(__file__)).parents[3])


def read_isolated(path, *, source: bool | int = True):
    """:func:`~kernelscope.trace.ncu.report.read_ncu_report` run in a child process.

    >>> read_isolated("tests/data/ncu_rep/triton_kernels.ncu-rep.xz").launches.shape[0]   # doctest: +SKIP
    7
    """
    from kernelscope.trace.ncu.report import import_ncu_report
    name = os.fspath(path)
    import_ncu_report(name)    # the install hint from here, where the user's environment is
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run([sys.executable, "-m", "kernelscope.trace.ncu.isolated"],
                              input=pickle.dumps((name, source)), capture_output=True, env=env)
    except OSError as e:
        raise TraceError(name, f"could not start a process to read it ({e.strerror or e})") from None
    if done.returncode == 0:
        kind, value = pickle.loads(done.stdout)   # our own child's answer, not the file's bytes
        if kind == "error":
            raise TraceError(name, value)
        return value
    raise TraceError(name, f"Nsight Compute's reader crashed on it ({_death(done)}): the report is damaged")


def _death(done) -> str:
    rc = done.returncode
    why = f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit status {rc}"
    lines = [ln.strip() for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    said = next((ln for ln in lines if "Check failed" in ln), lines[-1] if lines else "")
    return f"{why}: {said[-200:]}" if said else why


def _main() -> None:
    from kernelscope.trace.ncu.report import read_ncu_report
    name, source = pickle.loads(sys.stdin.buffer.read())
    # The answer goes to the real stdout; whatever the reader prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        answer = ("tables", read_ncu_report(name, source=source))
    except TraceError as e:
        answer = ("error", e.problem)
    out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    out.close()


if __name__ == "__main__":
    _main()
