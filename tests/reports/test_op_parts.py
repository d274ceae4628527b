"""The call tree and the CPU-ops table a big report starts on a second thread (Report.op_tree,
Report.op_summary): the same tables as computed in line, and the same view payload."""
import dataclasses
import pickle
import threading
from concurrent.futures import Future

import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.op_tree import op_summary, op_tree
from kernelscope.reports import report as report_mod
from kernelscope.view.codec import pack
from kernelscope.view.report import view_model
from tests.conftest import DATA

TRACES = ["mlp_train.pt.trace.json.gz", "compiled.pt.trace.json.gz", "mixed_cell.ksreport.json.gz", "launch_bound.pt.trace.json.gz"]


def _load(name, ahead: bool, monkeypatch):
    # The real threshold is 1M ops; these real recordings are smaller, so the test moves it.
    monkeypatch.setattr(report_mod, "AHEAD_OPS", 1 if ahead else 10**12)
    return ks.load(DATA / name, progress=False)


@pytest.mark.parametrize("name", TRACES)
def test_ahead_is_what_in_line_computes(name, monkeypatch):
    rep = _load(name, True, monkeypatch)
    assert isinstance(rep._op_parts[1], Future)       # started on a thread when built
    ops = rep.ops.reset_index(drop=True)
    tree = op_tree(ops)
    pd.testing.assert_frame_equal(rep.op_tree, tree)
    pd.testing.assert_frame_equal(rep.op_summary, op_summary(ops, rep.kernels, tree))
    assert not isinstance(rep._op_parts[1], pd.DataFrame) and rep._op_parts[1].done()


@pytest.mark.parametrize("name", TRACES)
def test_view_payload_identical_with_and_without_the_thread(name, monkeypatch):
    ahead = pack(*view_model(_load(name, True, monkeypatch)))
    in_line = pack(*view_model(_load(name, False, monkeypatch)))
    assert ahead == in_line


def test_small_report_starts_no_thread_and_replaced_ops_are_recomputed(monkeypatch):
    before = {t.name for t in threading.enumerate()}
    rep = _load("mlp_train.pt.trace.json.gz", False, monkeypatch)
    assert rep._op_parts is None
    assert "kernelscope-op-tree" not in {t.name for t in threading.enumerate()} - before
    assert len(rep.op_tree) == len(rep.ops) > 10
    rep.trace = dataclasses.replace(rep.trace, ops=rep.ops.iloc[:10])
    assert len(rep.op_tree) == 10
    assert rep.op_summary["calls"].sum() == 10


def test_error_on_the_thread_is_raised_where_the_result_is_asked_for():
    got = report_mod._in_background(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        got.result(timeout=30)


def test_a_report_with_its_tree_on_the_thread_pickles_with_the_tree(monkeypatch):
    rep = _load("mlp_train.pt.trace.json.gz", True, monkeypatch)
    back = pickle.loads(pickle.dumps(rep))
    assert isinstance(rep._op_parts[1], Future) and back._op_parts is None
    pd.testing.assert_frame_equal(back.op_summary, rep.op_summary)
