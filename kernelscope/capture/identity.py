"""Where a recording came from: the title it is given (the notebook cell or file line that
started it) and, in a torch.distributed job, its rank tag (rank, world size, backend, host)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def caller_title():
    """Where the recording was started: ``In [5]`` in a notebook cell, else ``file.py:line``."""
    here = str(Path(os.path.abspath(__file__)).parents[1])
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not (os.path.abspath(name).startswith(here + os.sep) or name.endswith("contextlib.py")):
            break
        f = f.f_back
    if f is None:
        return None
    name = f.f_code.co_filename
    from kernelscope.capture.lines import is_cell_file
    if is_cell_file(name):
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        from kernelscope.capture.lines import cell_number
        n = cell_number(shell)
        return f"In [{n}]" if n is not None else "a notebook cell"
    return f"{Path(name).name}:{f.f_lineno}"


def rank_tag():
    """Rank, world size, backend, host and local rank of this process when torch.distributed
    is initialized (a torchrun job), else None."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        tag = {"rank": int(dist.get_rank()), "world_size": int(dist.get_world_size()),
               "backend": str(dist.get_backend())}
    except (RuntimeError, ValueError, AttributeError):
        return None
    import socket
    local = os.environ.get("LOCAL_RANK", "")
    tag["host"] = socket.gethostname()
    tag["local_rank"] = int(local) if local.isdigit() else None
    return tag


def tag_trace(p, tag):
    """Write the rank tag into the trace header, so that a trace file saved from this recording
    (``trace_path``, or Kineto's own export) says which rank and host it came from."""
    import json

    from kernelscope.trace.distributed import RANK_TAG
    try:
        p.add_metadata_json(RANK_TAG, json.dumps(tag))
    except (RuntimeError, AttributeError):
        pass  # an older torch without header metadata: meta["distributed"] still has the tag
