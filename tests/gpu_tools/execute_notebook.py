"""Execute tutorial notebooks in place on the device machine (not CI), as they are committed.

    KERNELSCOPE_REFRESH_RECORDINGS=1 python tests/gpu_tools/execute_notebook.py example_notebooks/06_*.ipynb

Runs each notebook top to bottom in a fresh kernel with its folder as the working directory;
with KERNELSCOPE_REFRESH_RECORDINGS=1 the notebooks write the recordings their no-GPU path loads
(example_notebooks/recordings/). Prints each code cell's outputs' text and fails on the first error.
"""
from __future__ import annotations

import os
import sys
import time

import nbclient
import nbformat


def main(paths) -> int:
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        t = time.perf_counter()
        client = nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3",
                                         resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 1
        nbformat.write(nb, path)
        print(f"== {path}: executed in {time.perf_counter() - t:.0f} s")
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            for o in c.get("outputs", []):
                text = o.get("text") or (o.get("data") or {}).get("text/plain", "")
                if text:
                    print(f"[{c.execution_count}] {text[:600].rstrip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
