"""Big traces for the benchmarks: a real recording tiled with ``tools/tile_trace.py``.

The tool is the repository's own (``tools/tile_trace.py``), so a clone reproduces every figure;
``--tile-tool PATH`` (scripts that take it) or the environment variable ``KERNELSCOPE_TILE_TRACE``
name another. Tiled traces are cached in ``benchmarks/out/``.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
ENV = "KERNELSCOPE_TILE_TRACE"


def tile_tool(path=None) -> pathlib.Path:
    """The tiling script: ``path``, ``$KERNELSCOPE_TILE_TRACE``, or the repository's own.

    >>> tile_tool().relative_to(ROOT).as_posix()
    'tools/tile_trace.py'
    """
    given = path or os.environ.get(ENV)
    if given:
        p = pathlib.Path(given).expanduser()
        if not p.is_file():
            sys.exit(f"tile_trace.py not found at {p} (from {'--tile-tool' if path else ENV})")
        return p
    return ROOT / "tools" / "tile_trace.py"


def make_trace(source: pathlib.Path, events: int, name: str | None = None, tool=None, out=None) -> pathlib.Path:
    """``source`` tiled to about ``events`` events, made once and cached in ``out`` (default
    benchmarks/out/; big traces are better under /tmp)."""
    folder = pathlib.Path(out) if out is not None else OUT
    folder.mkdir(exist_ok=True, parents=True)
    path = folder / (name or f"{pathlib.Path(source).name.split('.')[0]}_{events}.json")
    if not path.exists():
        tmp = path.with_name(path.name + ".part" + ("".join(path.suffixes[-1:])))
        subprocess.run([sys.executable, str(tile_tool(tool)), str(source), str(tmp), "--events", str(events)],
                       check=True)
        tmp.rename(path)   # a run cut short leaves no half-written trace behind to be reused
    return path
