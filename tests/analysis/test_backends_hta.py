"""Backend attribution on a corpus recorded elsewhere: every kernel launch in the Kineto traces of
Holistic Trace Analysis's test data (tests/data/hta/kernel_names.csv, one row per distinct kernel
with its launch count; how it was made is in tests/data/RECORDINGS.md). Before FBGEMM's table-batched
embedding helpers and Triton 2.x's suffixed names had rules, 274 of its 54,710 launches were "other"."""
import csv

import pytest

from kernelscope.analysis.backends import classify
from tests.conftest import DATA


def _rows():
    with open(DATA / "hta" / "kernel_names.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


ROWS = _rows()


def _label(row):
    return classify(row["name"], row["op"] or None, None, None, row["device_type"]).backend


def test_the_corpus_is_the_whole_of_hta_test_traces():
    assert len(ROWS) == 434 and sum(int(r["launches"]) for r in ROWS) == 54_710
    assert all(r["traces"] for r in ROWS)


def test_other_is_at_most_a_fifth_of_a_percent_of_launches():
    other = sum(int(r["launches"]) for r in ROWS if _label(r) == "other")
    # 24: ATen's repeat_interleave kernel at global scope and an at::to_dense_representation_kernel
    # whose library we could not find; neither name says who launched it.
    assert other <= 0.002 * 54_710
    assert other == 24


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"][:60])
def test_every_kernel_gets_its_label(row):
    assert _label(row) == row["backend"]


def test_fbgemm_and_triton_2_names_are_named():
    by = {}
    for r in ROWS:
        by.setdefault(_label(r), set()).add(r["name"])
    assert {n for n in by["Triton"] if n.startswith("triton__0d")} == {
        "triton__0d1d2d", "triton__0d1d2d3d", "triton__0d1d23d", "triton__0d1d2d3d4d5d", "triton__0d1d2d3d4d5d6d",
        "triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14"}
    fb = " ".join(by["FBGEMM"])
    for word in ("find_long_segments", "linearize_index_kernel", "bounds_check_indices_kernel<long>(",
                 "permute_pooled_embs_kernel", "recat_copy_async_kernel"):
        assert word in fb


def test_look_alikes_stay_with_their_own_library():
    # ATen's embedding kernels live in at::native; Liger's Triton embedding kernel has a bare name;
    # an unsuffixed name or one counting from 1 is no Triton 2.x signature.
    assert classify("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>"
                    "(long const*, float const*, float*, int, long, int)").backend == "ATen"
    assert classify("embedding_forward_kernel").backend == "other"
    for name in ("kernel_012", "triton__01", "conv_1d2d", "fusion_0"):
        assert classify(name).backend != "Triton", name
