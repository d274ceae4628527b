"""Parts of the view payload made a cheaper way than pandas' plain one (they are built at each
display of a report of millions of events) give what the plain way gives: the longest idle gaps
(``nlargest``), thread ids as text (``astype(str)``), a window's labels, the tuning block's
``producer != backend``, and the string columns' codes."""
from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

import kernelscope as ks
from kernelscope.panels import tuning
from kernelscope.panels import window as view
from kernelscope.view import codec

DATA = pathlib.Path(__file__).parent.parent / "data"


def test_longest_gaps_are_nlargest():
    rng = np.random.default_rng(1)
    for t in range(1200):
        n = int(rng.integers(0, 300))
        p = np.array([1, 1, 1, rng.random() * 30, 1, 1, 1]) / (6 + 0.0)
        d = rng.choice([1.0, 2.0, 3.0, np.nan, 0.5, 2.5, -0.0], size=n, p=p / p.sum()) if t % 2 else rng.random(n)
        if t % 5 == 0 and n:
            d[rng.integers(0, n, 3)] = np.inf
        gaps = pd.DataFrame({"duration_us": d, "x": np.arange(n)}, index=rng.permutation(n) if t % 3 else None)
        for k in (1, 5, 40):
            got, want = view._longest(gaps, k), gaps.nlargest(k, "duration_us")
            assert got.equals(want) and list(got.index) == list(want.index), (t, k)
    # A real trace's gaps (the tiled ones hold many of equal length).
    g = ks.load(DATA / "launch_bound.pt.trace.json.gz").timeline.gaps
    g = pd.concat([g] * 50, ignore_index=True)
    assert view._longest(g, 5).equals(g.nlargest(5, "duration_us"))


def test_thread_ids_as_text_are_astype_str():
    for values in ([7, 8, 7] * 500, [7, "7", None, 8] * 300, [2**70, 1] * 600, [1.5, 2] * 10, [True, 1] * 700,
                   [np.int64(3), 4] * 600, []):
        col = pd.Series(values, dtype=object, index=np.arange(len(values)) * 2)
        got, want = view._text(col), col.astype(str)
        assert got.tolist() == want.tolist() and got.index.equals(want.index), values[:3]
        # The payload codes them as it codes the text column.
        (a, sa), (b, sb) = codec._encode(got, "str", len(got)), codec._encode(want, "str", len(want))
        assert a.tolist() == b.tolist() and sa == sb
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    for col in (rep.ops["tid"], rep.runtime["tid"]):
        assert view._text(col).tolist() == col.astype(str).tolist()


def test_labels_are_the_where():
    like = pd.DataFrame({"a": range(5)}, index=[3, 1, 4, 1, 5])
    second = np.array([True, False, True, True, False])
    got = view._labels(("op", "annotation"), second, like)
    assert got.tolist() == np.where(second, "annotation", "op").tolist() and got.index.equals(like.index)
    assert view._labels(("op", "annotation"), False, like).tolist() == ["op"] * 5


def test_producer_differs_is_not_equal():
    rng = np.random.default_rng(2)
    pool = ["Triton", "ATen", None, np.nan, "cuBLAS", "".join(["Tri", "ton"])]
    for n in (10, 1024, 5000):
        a = pd.Series([pool[i] for i in rng.integers(0, len(pool), n)], dtype=object, index=np.arange(n) + 7)
        b = pd.Series([pool[i] for i in rng.integers(0, len(pool), n)], dtype=object, index=np.arange(n) + 7)
        got, want = tuning._differs(a, b), a != b
        assert got.equals(want)
    k = ks.load(DATA / "tuning" / "triton_tuning.ksreport.json.gz").kernels
    k = pd.concat([k] * 40, ignore_index=True)
    assert tuning._differs(k["producer"], k["backend"]).equals(k["producer"] != k["backend"])


def test_string_columns_code_as_pandas_factorize():
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    k = pd.concat([rep.kernels] * 30, ignore_index=True)
    for col in (k["name"], k["occupancy_limiter"], k["device"], k["name"].astype(str),
                pd.Series(["a", None, "b"] * 500, dtype="str")):
        codes, uniq = pd.factorize(col, use_na_sentinel=True)
        arr, strings = codec._encode(col, "str", len(col))
        assert arr.tolist() == codes.tolist() and strings == [str(u) for u in uniq]
