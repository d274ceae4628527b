"""Inductor's max-autotune choices tied to their launches (analysis/autotune.py:
candidate_launches), on H200 recordings made with the watch's range around each choice's
benchmark (tests/data/tuning/inductor_links: a small fp16 MLP, two addmm tunings; notebook 8's
compile), and on one made before the ranges (tests/data/tuning/inductor_tuning)."""
import pytest

import kernelscope as ks
from kernelscope.analysis.autotune import HARNESS_OPS, INDUCTOR_BENCH_RANGE, UNMARKED_INDUCTOR
from kernelscope.analysis.producers import FROM_TRACE_AND_PROCESS
from tests.conftest import DATA

TUNING = DATA / "tuning"
NOTEBOOK = DATA.parent.parent / "example_notebooks" / "recordings"


@pytest.fixture(scope="module")
def links():
    return ks.load(TUNING / "inductor_links.ksreport.json.gz")


@pytest.fixture(scope="module")
def compile_tuning():
    return ks.load(NOTEBOOK / "08_compile_tuning.ksreport.json.gz")


def _choices(rep):
    a = rep.autotune
    return a[a["tuner"] == "inductor max-autotune"]


@pytest.mark.parametrize("which", ["links", "compile_tuning"])
def test_each_choice_names_its_own_benchmark_launches(which, request):
    rep = request.getfixturevalue(which)
    a, k = _choices(rep), rep.kernels
    assert a["tuning"].nunique() == 2 and a["benchmark_range"].str.startswith(INDUCTOR_BENCH_RANGE).all()
    assert (a["benchmark_launches"] > 0).all()
    seen = []
    for r in a.to_dict("records"):
        ran = k.iloc[r["kernel_rows"]]
        bench = ran[~ran["name"].str.startswith("triton_tem_")]
        assert len(bench) == r["benchmark_launches"]
        # not the benchmark harness's L2 flush and zeroed output, though they run inside the range
        assert not bench["op"].isin(HARNESS_OPS).any()
        if r["choice"] == "Triton template":
            # its template, run under Inductor's placeholder name, with the choice's warps
            assert set(bench["name"]) == {"triton_mm"} and (bench["block_x"] == r["num_warps"] * 32).all()
            assert bench["registers_per_thread"].nunique() == 1
        else:
            # the extern's cuBLAS GEMM (and ATen's copy of the bias), under the choice's aten::addmm
            assert set(bench["backend"]) <= {"cuBLAS", "ATen"} and (bench["backend"] == "cuBLAS").any()
            assert set(bench["op"]) == {"aten::addmm"}
        seen.extend(bench.index)
    # no launch is two choices' benchmark, and every template and cuBLAS launch of the tuning is one's
    assert len(seen) == len(set(seen))
    tuned = k[(k["name"] == "triton_mm") | k["short_name"].str.startswith("cuBLAS")]
    assert set(tuned.index) <= set(seen)


def test_the_range_tells_the_two_externs_apart(links):
    """addmm and bias_addmm both run cuBLAS under aten::addmm; each range holds one's kernels."""
    a, k = _choices(links), links.kernels
    for _, g in a.groupby("tuning"):
        names = {r["config"]: set(k.iloc[r["kernel_rows"]]["short_name"]) for r in g.to_dict("records")
                 if r["choice"] == "extern"}
        plain, bias = names["extern_kernels.addmm"], names["extern_kernels.bias_addmm"]
        assert any("[no epilogue, adds C]" in n for n in plain) and all("[bias, beta 0]" in n for n in bias)
        assert not (plain & bias)


def test_registers_of_the_templates_now_recorded(compile_tuning):
    """Notebook 8's compile, re-recorded on the H200: every timed template choice has its
    registers, and the winner's are those of the compiled template's launch."""
    a, k = _choices(compile_tuning), compile_tuning.kernels
    tem = a[(a["choice"] == "Triton template") & a["p50_ms"].notna()]
    assert tem["registers"].notna().all() and tem["theoretical_occupancy"].notna().all()
    for r in tem.to_dict("records"):
        assert set(k.iloc[r["kernel_rows"]]["registers_per_thread"]) == {r["registers"]}


def test_template_launches_carry_the_tile_of_their_compiled_kernel():
    """The steady state of notebook 8's compile: a template's launch event has warps and stages
    only; the tile comes from its compiled kernel's constexprs, which is the tuning's winner's."""
    run = ks.load(NOTEBOOK / "08_compile_run.ksreport.json.gz")
    tem = run.kernels[run.kernels["name"].str.startswith("triton_tem_")]
    assert len(tem) and set(tem["config_source"]) == {FROM_TRACE_AND_PROCESS}
    assert set(tem["config"]) == {"BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8"}


def test_a_recording_without_the_ranges_is_empty_with_a_note():
    a = _choices(ks.load(TUNING / "inductor_tuning.ksreport.json.gz"))
    assert len(a) and a["launches"].isna().all() and a["benchmark_launches"].isna().all()
    assert a["note"].str.contains(UNMARKED_INDUCTOR, regex=False).all()


def test_the_trace_alone_keeps_the_ranges(links):
    """The saved Kineto trace holds the ranges (the choices themselves are in the report)."""
    t = ks.load(TUNING / "inductor_links.pt.trace.json.gz")
    names = t.trace.ops["name"].astype(str)
    got = set(names[names.str.startswith(INDUCTOR_BENCH_RANGE)])
    assert got == set(_choices(links)["benchmark_range"])


@pytest.mark.parametrize("which", ["links", "compile_tuning"])
def test_each_winning_template_is_tied_to_its_compiled_kernel(which, request):
    """The winner of each tuning ran, besides its benchmark, where the compiled template kernel
    that runs it ran: its launcher's warps and stages and its source's tile are the winner's."""
    rep = request.getfixturevalue(which)
    a, k = _choices(rep), rep.kernels
    won = a[a["winner"]]
    assert len(won) == 2 and (won["choice"] == "Triton template").all()
    assert won["compiled_kernel"].str.startswith("triton_tem_").all() and won["compiled_kernel"].is_unique
    for r in won.to_dict("records"):
        ran = k[k["name"] == r["compiled_kernel"]]
        assert r["launches"] - r["benchmark_launches"] == len(ran) == 1
        assert set(ran.index) <= set(r["kernel_rows"])
        assert ran["config"].tolist() == [r["config"]] and ran["num_warps"].tolist() == [r["num_warps"]]
        assert ran["num_stages"].tolist() == [r["num_stages"]]
    # the losers ran only in their benchmark
    lost = a[~a["winner"]]
    assert (lost["launches"] == lost["benchmark_launches"]).all() and lost["compiled_kernel"].isna().all()


def test_the_view_shows_a_tuning_beside_its_compiled_kernel(links):
    """The payload's tuning names the compiled kernel (the view shows the tuning in that kernel's
    details), and the winner's launch link includes that kernel's launch."""
    from kernelscope.view.report import view_model
    tunings = view_model(links)[0]["tuning"]["tunings"]
    won = _choices(links)
    won = won[won["winner"]].set_index("tuning")
    for t in tunings:
        name = won.loc[t["tuning"], "compiled_kernel"]
        assert t["match_kernels"] == [name]
        row = next(r for r in t["rows"] if r["winner"])
        assert set(won.loc[t["tuning"], "kernel_rows"]) == set(row["launch_rows"])
        assert int((links.kernels["name"] == name).idxmax()) in row["launch_rows"]
