"""The package's docstring examples, run by ``python -m pytest`` (``--doctest-modules`` in
pyproject.toml): each runs in ``tests/data`` with real H200 recordings in its namespace, so an
example reads ``ks.load("launch_bound.pt.trace.json.gz")`` and shows what that file gives.

Names every example may use: ``ks``, ``np``, ``pd``, ``json``; ``rep``, the bundled demo recording
(an MLP's training steps, ``mlp_train.pt.trace.json.gz``); ``before`` and ``after``, a launch-bound
loop and the same loop as a CUDA graph, and ``c``, their comparison; ``ncu``, an Nsight Compute
report of three Triton kernels; ``ranks``, two ranks of a distributed run; ``cs``, copies and
side streams; ``live``, a cell recorded with hardware counters and warp stalls; ``tmp``, a fresh
folder for what an example writes.
"""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).parent
DATA = ROOT / "tests" / "data"
PACKAGE = ROOT / "kernelscope"


def pytest_ignore_collect(collection_path, config):
    # --doctest-modules imports every module under the test paths; outside the package only test
    # modules are meant to be (the GPU recorders in tests/gpu_tools run their work when imported,
    # and import torch; conftests are pytest's own, and two of them share a module name).
    p = collection_path
    if p.suffix == ".py" and PACKAGE not in p.parents and not p.name.startswith("test_") \
            and p.name != "__init__.py":
        return True
    return None


@pytest.fixture(scope="session")
def recordings():
    """The recordings the examples share, each read once."""
    import kernelscope as ks
    before = ks.load(DATA / "launch_bound.pt.trace.json.gz")
    after = ks.load(DATA / "graphs.pt.trace.json.gz")
    return {"rep": ks.load(DATA / "mlp_train.pt.trace.json.gz"), "before": before, "after": after,
            "c": ks.compare(before, after), "ncu": ks.load_ncu(DATA / "ncu_rep" / "triton_kernels.ncu-rep.xz"),
            "ranks": ks.load_ranks(DATA / "ranks"), "cs": ks.load(DATA / "copies_streams.pt.trace.json.gz"),
            "live": ks.load(DATA / "counters" / "live_counters.ksreport.json.gz")}


@pytest.fixture(autouse=True)
def _doctest_names(request):
    if type(request.node).__name__ != "DoctestItem":
        yield
        return
    import json

    import numpy as np
    import pandas as pd

    import kernelscope as ks
    ns = request.getfixturevalue("doctest_namespace")
    ns.update(ks=ks, np=np, pd=pd, json=json, tmp=request.getfixturevalue("tmp_path"),
              **request.getfixturevalue("recordings"))
    request.getfixturevalue("monkeypatch").chdir(DATA)
    # One table layout wherever the examples run (pandas reads the terminal's width otherwise).
    with pd.option_context("display.width", 100, "display.max_columns", 8, "display.max_rows", 12,
                           "display.max_colwidth", 40, "display.precision", 4):
        yield
