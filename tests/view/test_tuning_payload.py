"""The tuning block's payload (panels/tuning.py): what the browser gets of rep.autotune and of each
kernel's knobs, from the H200 tuning recordings."""
import dataclasses

import pandas as pd

import kernelscope as ks
from kernelscope.panels.tuning import CANDIDATE_COLUMNS, MAX_ROWS, tuning_payload
from kernelscope.view.report import view_model
from tests.conftest import DATA

TUNING = DATA / "tuning"


def test_payload_of_the_triton_recording():
    rep = ks.load(TUNING / "triton_tuning.ksreport.json.gz")
    t = view_model(rep)[0]["tuning"]
    assert [x["kernel"] for x in t["tunings"]] == ["matmul_kernel", "add_kernel"]
    mm = t["tunings"][0]
    assert mm["candidates"] == mm["shown"] == 12 and not mm["cached"] and t["tunings"][1]["cached"]
    assert mm["rows"][0]["winner"] and [r["p50_ms"] for r in mm["rows"]] == sorted(r["p50_ms"] for r in mm["rows"])
    assert [c[0] for c in t["columns"]["candidates"]] == [c[0] for c in CANDIDATE_COLUMNS]
    knobs = t["kernels"]["matmul_kernel"]["knobs"]
    assert sum(r["launches"] for r in knobs) == int((rep.kernels["name"] == "matmul_kernel").sum())
    assert t["kernels"]["scale_kernel"]["knobs"][0]["config"] is None
    assert t["watched"] == ["triton.autotune", "triton.jit"]


def test_thousands_of_candidates_are_capped_in_the_view_not_the_report():
    rep = ks.load(TUNING / "triton_tuning.ksreport.json.gz")
    a = rep.trace.autotune
    many = pd.concat([a[a["kernel"] == "matmul_kernel"]] * 200, ignore_index=True)
    big = ks.Report(dataclasses.replace(rep.trace, autotune=many))
    assert len(big.autotune) == 2400
    t = tuning_payload(big)["tunings"][0]
    assert t["candidates"] == 2400 and t["shown"] == len(t["rows"]) == MAX_ROWS


def test_no_tuning_no_rows():
    t = view_model(ks.load(DATA / "mlp_train.pt.trace.json.gz"))[0]["tuning"]
    assert t["tunings"] == [] and t["watched"] is None
    nvjet = [v for n, v in t["kernels"].items() if n.startswith("nvjet_")]
    assert nvjet and all(v["producer"] == "cuBLAS" and v["decoded"].startswith("nvjet:") for v in nvjet)


def test_a_tensorrt_kernel_names_its_layer(tmp_path):
    """Constructed names on a real trace and a real engine inspector JSON (see
    tests/analysis/test_tensorrt_layers.py): the view says which layer ran each tactic; where
    several layers share one, the layers the engine's order names, and how many launches it
    could not name."""
    from tests.analysis.test_tensorrt_layers import ENGINE, FIRST, SHARED, _tactics, engine_trace_file
    t = _tactics()
    rep = ks.load(engine_trace_file(tmp_path, t + t[1:] + t[:1]), tensorrt_layers=ENGINE)
    kernels = view_model(rep)[0]["tuning"]["kernels"]
    assert kernels[FIRST]["facts"] == [["TensorRT layer", "Conv_0 + Relu_1 (CaskConvolution)"]]
    assert kernels[SHARED]["facts"][0][1] == (
        "4 layers (CaskConvolution), each launch's from the engine's layer order: Conv_3 + Relu_4, "
        "Conv_5 + Add_6 + Relu_7, Conv_8 + Relu_9, Conv_10 + Add_11 + Relu_12; 4 launches: one of 4 layers "
        "(CaskConvolution) that share this tactic (which one ran is not in the kernel name)")
    assert all("facts" not in v for v in view_model(ks.load(TUNING / "triton_tuning.ksreport.json.gz"))[0]
               ["tuning"]["kernels"].values())


def test_each_candidate_names_the_launches_that_ran_it():
    """rep.autotune's launches/kernel_rows: the launches of rep.kernels identified as each
    candidate's config and warps; the payload sends them as the view's rows (a window's own)."""
    from kernelscope.view.report import view_model
    rep = ks.load(TUNING / "triton_tuning.ksreport.json.gz")
    a, k = rep.autotune, rep.kernels
    mm = a[a["kernel"] == "matmul_kernel"]
    for r in mm.itertuples():
        ran = k[(k["name"] == "matmul_kernel") & (k["config"] == r.config) & (k["num_warps"] == r.num_warps)]
        assert r.launches == len(ran) == len(r.kernel_rows) and sorted(r.kernel_rows) == list(ran.index)
    # every matmul launch ran exactly one candidate; this recording predates the benchmark ranges
    assert mm["launches"].sum() == int((k["name"] == "matmul_kernel").sum())
    assert mm["benchmark_launches"].isna().all()
    # the add kernel was tuned before the region: only its winner ran here, once
    add = a[a["kernel"] == "add_kernel"]
    assert add.loc[add["winner"], "launches"].tolist() == [1] and add.loc[~add["winner"], "launches"].tolist() == [0, 0, 0]
    # Inductor's choices are not linked (benchmarked under a placeholder name)
    assert ks.load(TUNING / "inductor_tuning.ksreport.json.gz").autotune["launches"].isna().all()
    win = mm[mm["winner"]].iloc[0]
    row = view_model(rep)[0]["tuning"]["tunings"][0]["rows"][0]
    assert row["winner"] and row["launch_rows"] == win["kernel_rows"]
    # a window: the view's rows of the same launches
    header = view_model(rep, window=(float(k.loc[win["kernel_rows"][0], "start_us"]), None))[0]
    got = header["tuning"]["tunings"][0]["rows"][0]["launch_rows"]
    start = k["start_us"].to_numpy()
    inside = [i for i in win["kernel_rows"] if start[i] >= k.loc[win["kernel_rows"][0], "start_us"]]
    assert len(got) == len(inside) > 0 and header["window"] is not None
