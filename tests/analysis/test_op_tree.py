"""CPU ops as a call tree (analysis/op_tree.py) on real H200 recordings: depth and parent from the
times, host self time, and the GPU time of each op's kernels, self and inclusive (TensorBoard's
operator view), checked against a brute-force reading of the same tables."""
import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis.op_tree import op_gpu_time, op_summary, op_tree
from kernelscope.view.codec import decode_buffer
from kernelscope.view.report import view_model
from tests.conftest import DATA

TRACES = ["mlp_train.pt.trace.json.gz", "wild/llama_train.pt.trace.json.gz", "wild/resnet50_train.pt.trace.json.gz"]


def _enclosing(ops):
    """For each op, the ops of its thread that enclose it (brute force, O(n^2))."""
    start = ops["start_us"].to_numpy()
    end = start + ops["duration_us"].to_numpy()
    tid = ops["tid"].astype(str).to_numpy()
    dur = ops["duration_us"].to_numpy()
    out = []
    for i in range(len(ops)):
        # Strictly inside in time, or at the same start and longer (then earlier in the table).
        m = (tid == tid[i]) & (start <= start[i]) & (start[i] < end - 1e-3)
        m &= (start < start[i]) | (dur > dur[i]) | ((dur == dur[i]) & (np.arange(len(ops)) < i))
        m[i] = False
        out.append(np.flatnonzero(m))
    return out


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz")


def test_depth_and_parent_match_the_times(mlp):
    ops = mlp.ops.reset_index(drop=True)
    tree = op_tree(ops)
    enc = _enclosing(ops)
    assert tree["depth"].tolist() == [len(e) for e in enc]
    # The parent is the innermost enclosing op: the latest to start among them.
    start = ops["start_us"].to_numpy()
    want = [int(e[np.argmax(start[e])]) if len(e) else -1 for e in enc]
    assert tree["parent"].tolist() == want
    assert tree["depth"].max() == 4          # e.g. autograd::engine::evaluate_function -> ... -> aten::copy_


@pytest.mark.parametrize("trace", TRACES)
def test_self_time_and_inclusive_gpu_time(trace):
    rep = ks.load(DATA / trace)
    ops, k = rep.ops.reset_index(drop=True), rep.kernels
    tree = op_tree(ops)
    gpu = op_gpu_time(ops, k, tree)
    dur = ops["duration_us"].to_numpy()
    # Self time: the op's time less its children's; the tree's self times add up to the outermost ops' time.
    assert (tree["self_us"] >= 0).all()
    assert np.isclose(tree["self_us"].sum(), dur[tree["depth"].to_numpy() == 0].sum())
    # Self GPU time: the kernels whose launching op it is (the reader's join).
    by_op = k.groupby(k["op_index"].astype("Int64"))["duration_us"].sum()
    assert np.allclose(gpu["gpu_us"].to_numpy(), by_op.reindex(range(len(ops))).fillna(0).to_numpy())
    # Inclusive: every kernel counts in its op and in each op enclosing it (brute force over ancestors).
    parent = tree["parent"].to_numpy()
    want = np.zeros(len(ops))
    for i, d in zip(k["op_index"].dropna().astype(int), k.loc[k["op_index"].notna(), "duration_us"]):
        while i >= 0:
            want[i] += d
            i = parent[i]
    assert np.allclose(gpu["gpu_inclusive_us"].to_numpy(), want)
    # The outermost ops hold all the kernel time that has a CPU op.
    assert np.isclose(gpu.loc[tree["depth"] == 0, "gpu_inclusive_us"].sum(), k.loc[k["op_index"].notna(), "duration_us"].sum())


def test_a_recursive_op_counts_its_kernels_once(mlp):
    """aten::linear re-enters itself in this recording (the dispatcher's redispatch): per name,
    its inclusive GPU time counts each kernel once, not once per enclosing aten::linear."""
    ops, k = mlp.ops.reset_index(drop=True), mlp.kernels
    tree = op_tree(ops)
    nested = ops.loc[~tree["outermost_of_name"], "name"]
    assert "aten::linear" in set(nested)
    s = op_summary(ops, k).set_index("name")
    linear = ops.index[ops["name"] == "aten::linear"]
    parent = tree["parent"].to_numpy()

    def under_linear(i):
        while i >= 0:
            if i in set(linear):
                return True
            i = parent[i]
        return False

    kk = k[k["op_index"].notna()]
    want = kk.loc[[under_linear(int(i)) for i in kk["op_index"]], "duration_us"].sum()
    assert np.isclose(s.at["aten::linear", "gpu_inclusive_us"], want)
    assert s.at["aten::linear", "gpu_us"] == 0.0 < want     # it launches nothing itself: its children do
    assert s.at["aten::linear", "kernels_inclusive"] == sum(under_linear(int(i)) for i in kk["op_index"])


def test_summary_of_parents_and_leaves():
    rep = ks.load(DATA / "wild/llama_train.pt.trace.json.gz")
    s = op_summary(rep.ops, rep.kernels).set_index("name")
    # A leaf that launches its own kernels: self = inclusive.
    assert s.at["aten::mm", "gpu_us"] == pytest.approx(s.at["aten::mm", "gpu_inclusive_us"])
    assert s.at["aten::mm", "gpu_us"] > 0
    # A parent op shows the GPU time of what it called (TensorBoard's "device total duration").
    assert s.at["aten::linear", "gpu_us"] == 0 and s.at["aten::linear", "gpu_inclusive_us"] > 500
    assert (s["self_us"] <= s["total_us"] + 1e-6).all()
    assert (s["gpu_inclusive_us"] >= s["gpu_us"] - 1e-6).all()


def test_empty_ops():
    empty = pd.DataFrame({"name": [], "tid": [], "start_us": [], "duration_us": []})
    assert op_tree(empty).empty and op_summary(empty, pd.DataFrame()).empty


def test_the_view_sends_every_op_at_its_depth(mlp):
    header, buf = view_model(mlp)
    host = decode_buffer(header, buf)["host"]
    ops = mlp.ops.reset_index(drop=True)
    kinds = np.array(host["kind"], dtype=object)
    is_op = np.isin(kinds, ["op", "annotation"])
    assert is_op.sum() == len(ops)
    assert sorted(np.asarray(host["depth"])[is_op].tolist()) == sorted(op_tree(ops)["depth"].tolist())
    # record_function ranges (Optimizer.step#AdamW.step) are annotations, drawn as such.
    names = np.array(host["name"], dtype=object)
    assert set(names[kinds == "annotation"]) == set(ops.loc[ops["cat"] == "user_annotation", "name"])
    # CUDA API calls carry the correlation id that ties a launch to its kernel.
    runtime = kinds == "runtime"
    corr = set(np.asarray(host["correlation"])[runtime].tolist())
    assert set(mlp.kernels["correlation"].dropna().astype(int)) <= corr
    # The CPU ops table: self and inclusive times per op name.
    first = header["ops"][0]
    assert {"self_us", "gpu_us", "gpu_inclusive_us", "kernels_inclusive"} <= set(first)


def _stack_walk(ops):
    """The tree by a walk with a stack over each thread's ops by start (what op_tree did before
    it worked on whole arrays): parent, depth, and whether an enclosing op has the same name."""
    start = ops["start_us"].to_numpy(float)
    dur = np.nan_to_num(ops["duration_us"].to_numpy(float))
    end, tid, names = start + dur, ops["tid"].astype(str).to_numpy(), ops["name"].astype(str).tolist()
    par, dep, outer = [-1] * len(ops), [0] * len(ops), [True] * len(ops)
    stack, cur = [], None
    for i in np.lexsort((-dur, start, tid)).tolist():
        if start[i] != start[i]:
            continue
        if tid[i] != cur:
            stack, cur = [], tid[i]
        while stack and start[i] >= end[stack[-1]] - 1e-3:
            stack.pop()
        if stack:
            par[i], dep[i] = stack[-1], len(stack)
        outer[i] = names[i] not in {names[j] for j in stack}
        stack.append(i)
    return par, dep, outer


@pytest.mark.parametrize("trace", TRACES + ["wild/bert_infer.pt.trace.json.gz", "wild/gpt2_infer.pt.trace.json.gz",
                                            "wild/vit_compiled.pt.trace.json.gz", "ranks/rank1.pt.trace.json.gz"])
def test_the_tree_is_the_stack_walks(trace):
    """op_tree works on whole arrays (pointer jumping); it finds what a walk with a stack finds."""
    ops = ks.load(DATA / trace, progress=False).ops.reset_index(drop=True)
    tree = op_tree(ops)
    par, dep, outer = _stack_walk(ops)
    assert tree["parent"].tolist() == par and tree["depth"].tolist() == dep
    assert tree["outermost_of_name"].tolist() == outer
    assert tree["depth"].max() >= 2


def test_the_tree_is_the_stack_walks_on_made_up_nestings():
    """Random call trees on a few threads (equal starts, zero durations, ops ending within the
    tolerance of their parent's end, missing starts, recursive names), sorted or shuffled: the
    array walk finds what the stack walk finds."""
    rng = np.random.default_rng(11)
    for t in range(300):
        n = int(rng.integers(1, 120))
        start = np.round(rng.random(n) * rng.choice([5.0, 50.0, 1e6]), int(rng.integers(0, 4)))
        dur = np.round(rng.random(n) * rng.choice([0.5, 5.0, 30.0]), int(rng.integers(0, 3)))
        dur[rng.random(n) < 0.1] = 0.0
        start[rng.random(n) < 0.03] = np.nan
        ops = pd.DataFrame({"name": rng.choice(["step", "aten::mm", "aten::add", "f"], n),
                            "tid": rng.choice([1, 2, "2", 7], n).astype(object), "start_us": start,
                            "duration_us": dur})
        if t % 2:
            ops = ops.sort_values(["tid", "start_us"], key=lambda c: c.astype(str) if c.name == "tid" else c,
                                  kind="stable").reset_index(drop=True)
        tree = op_tree(ops)
        par, dep, outer = _stack_walk(ops)
        assert tree["parent"].tolist() == par and tree["depth"].tolist() == dep, t
        assert tree["outermost_of_name"].tolist() == outer, t
