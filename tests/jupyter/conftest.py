"""What the tests of the magics share: a real IPython shell with kernelscope loaded, a cell run
as the notebook runs it, and the replay child (kernelscope's script for ncu/Proton) run as a
real process without either."""
import json
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture()
def ipython_shell():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    return sh


def run_cell(sh, src):
    """Run ``src`` (dedented) as a notebook cell, stored in the history."""
    return sh.run_cell(textwrap.dedent(src), store_history=True)


def run_replay_child(workdir, setup, cell):
    """The replay script for ``setup`` then ``cell``, run in ``workdir``: (process, status)."""
    from kernelscope.capture.ncu_run import write_replay
    script, status = write_replay(str(workdir), setup, cell)
    out = subprocess.run([sys.executable, script], cwd=workdir, capture_output=True, text=True, timeout=300)
    with open(status) as f:
        return out, json.load(f)
