"""The tuning watch (capture/tuning/) without a GPU: it wraps Triton's real classes only while a
region runs, gives them back, says what it could not watch, and never fails a capture. What it
collects on a GPU is tested in test_gpu_tuning.py and read back from tests/data/tuning/."""
import subprocess
import sys
import textwrap

import pytest

import kernelscope as ks
from kernelscope.capture.tuning import TuningWatch, declared_constexprs, origins_of_source
from tests.conftest import DATA

torch = pytest.importorskip("torch")


def test_triton_is_given_back_after_the_region():
    triton = pytest.importorskip("triton")
    at, jf = triton.runtime.autotuner.Autotuner, triton.runtime.jit.JITFunction
    before = (at.run, jf.run)
    w = TuningWatch()
    w.start()
    assert at.run is not before[0] and jf.run is not before[1]
    assert w.watched[:2] == ["triton.autotune", "triton.jit"]
    w.stop()
    assert (at.run, jf.run) == before
    with ks.profile() as p:
        torch.ones(4) + 1
    assert (at.run, jf.run) == before
    assert "triton.autotune" in p.report.meta["tuning"]["watched"]


def test_inductor_feedback_saver_removed_after_the_region():
    sa = pytest.importorskip("torch._inductor.select_algorithm")
    fns = sa.get_algorithm_selector_cache().feedback_saver_fns
    n = len(fns)
    with ks.profile() as p:
        assert len(sa.get_algorithm_selector_cache().feedback_saver_fns) == n + 1
    assert len(sa.get_algorithm_selector_cache().feedback_saver_fns) == n
    assert "inductor.max_autotune" in p.report.meta["tuning"]["watched"]


def test_inductor_benchmark_choice_wrapped_only_during_the_region():
    """Each choice Inductor times runs inside a range that names it, only while a region runs:
    its classmethod is wrapped at start and given back, the same object, at stop."""
    sa = pytest.importorskip("torch._inductor.select_algorithm")
    cls = sa.AlgorithmSelectorCache
    before = vars(cls)["benchmark_choice"]
    assert isinstance(before, classmethod)
    with ks.profile() as p:
        inside = vars(cls)["benchmark_choice"]
        assert inside is not before and isinstance(inside, classmethod)
        assert inside.__func__.__wrapped__ is before.__func__
    assert vars(cls)["benchmark_choice"] is before
    assert "inductor.benchmark_ranges" in p.report.meta["tuning"]["watched"]


def test_each_benchmarked_choice_has_its_own_range():
    """A choice benchmarked twice keeps its range; choices of the same name (an extern's
    ``addmm`` in two tunings) get distinct ones, numbered, until the watch stops."""
    from types import SimpleNamespace

    from kernelscope.capture.tuning import TuningWatch
    w = TuningWatch()
    a, b = SimpleNamespace(name="addmm"), SimpleNamespace(name="addmm")
    first = w.inductor.bench_label(a)
    assert first == w.inductor.bench_label(a) == "inductor max-autotune benchmark #1: addmm"
    assert w.inductor.bench_label(b) == "inductor max-autotune benchmark #2: addmm"
    w.stop()
    assert not w.inductor._bench_labels


def test_no_benchmark_choice_is_a_note(monkeypatch):
    sa = pytest.importorskip("torch._inductor.select_algorithm")
    monkeypatch.delattr(sa.AlgorithmSelectorCache, "benchmark_choice")
    with ks.profile() as p:
        pass
    t = p.report.meta["tuning"]
    assert "inductor.max_autotune" in t["watched"] and "inductor.benchmark_ranges" not in t["watched"]
    assert any("benchmark_choice" in n for n in t["notes"])
    assert not hasattr(sa.AlgorithmSelectorCache, "benchmark_choice")


def test_template_winners_tied_to_compiled_kernels():
    """A compiled template kernel is tied to the one tuning whose winner it runs (warps, stages,
    tile); where two tunings' winners fit it, the GEMM sizes in its source decide, else neither
    is tied and both say so."""
    from kernelscope.capture.tuning import NOT_COMPILED, link_template_winners

    def win(t, warps, key):
        return {"tuning": t, "winner": True, "choice": "Triton template", "num_warps": warps, "num_stages": 3,
                "_kw": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, "shape_key": key,
                "compiled_kernel": None, "note": None}
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "EVEN_K": True}
    rows = [win(0, 4, "addmm(2048x4096, 2048x1024, 1024x4096)"), win(1, 8, "addmm(2048x1024, 2048x4096, 4096x1024)")]
    link_template_winners(rows, [{"name": "triton_tem_fused_addmm_t_0", "num_warps": 4, "num_stages": 3, "_consts": tile},
                                 {"name": "triton_tem_fused_addmm_gelu_t_2", "num_warps": 8, "num_stages": 3, "_consts": tile}])
    assert [r["compiled_kernel"] for r in rows] == ["triton_tem_fused_addmm_t_0", "triton_tem_fused_addmm_gelu_t_2"]
    # the same winner twice: the sizes in the source tell them apart, or nothing is tied
    rows = [win(0, 4, "addmm(2048x4096, 2048x1024, 1024x4096)"), win(1, 4, "addmm(2048x1024, 2048x4096, 4096x1024)")]
    link_template_winners(rows, [{"name": "triton_tem_a_0", "num_warps": 4, "num_stages": 3,
                                  "_consts": dict(tile, _M=2048, _N=1024, _K=4096)}])
    assert [r["compiled_kernel"] for r in rows] == [None, "triton_tem_a_0"] and rows[1]["note"] is None
    assert rows[0]["note"] == NOT_COMPILED.format(n=1)
    rows[0]["note"] = None
    link_template_winners(rows, [{"name": "triton_tem_b_1", "num_warps": 4, "num_stages": 3, "_consts": tile}])
    assert rows[1]["compiled_kernel"] == "triton_tem_a_0" and rows[0]["compiled_kernel"] is None
    assert all("2 tunings chose this config (triton_tem_b_1 runs it)" in r["note"] for r in rows)


def test_a_winner_inductor_ran_with_another_config_says_so():
    """On the H200 a GEMM's compiled template kernel had another tile than its tuning's winner
    (Inductor's epilogue-fusion benchmark chose again): the winner says which kernel runs the
    GEMM and with what, and is not tied to it; with no kernel of its sizes, it says none fits."""
    from kernelscope.capture.tuning import NO_TEMPLATE_KERNEL, link_template_winners
    tile = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}
    row = {"tuning": 0, "winner": True, "choice": "Triton template", "num_warps": 8, "num_stages": 5, "_kw": tile,
           "shape_key": "addmm(384x512, 384x256, 256x512)", "compiled_kernel": None, "note": None}
    other = {"name": "triton_tem_fused_addmm_relu_t_0", "num_warps": 4, "num_stages": 2,
             "_consts": dict(tile, BLOCK_M=32, BLOCK_K=128, _M=384, _N=512, _K=256)}
    link_template_winners([row], [other])
    assert row["compiled_kernel"] is None
    assert row["note"].startswith("not run as tuned: this GEMM's compiled kernel triton_tem_fused_addmm_relu_t_0 "
                                  "has BLOCK_M=32, BLOCK_N=32, BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=2")
    row["note"] = None
    link_template_winners([row], [])
    assert row["note"] == NO_TEMPLATE_KERNEL


def test_a_triton_without_an_attribute(monkeypatch):
    triton = pytest.importorskip("triton")
    monkeypatch.delattr(triton.runtime.autotuner, "Autotuner")
    with ks.profile() as p:
        torch.ones(4) + 1
    t = p.report.meta["tuning"]
    assert "this Triton has no Autotuner.run: autotuning not watched" in t["notes"]
    assert "triton.jit" in t["watched"] and "triton.autotune" not in t["watched"]
    assert len(p.report.ops) > 0        # the capture itself is whole


def _child(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, cwd=str(DATA.parent.parent))


def test_a_missing_triton_is_a_note():
    r = _child("""
        import sys
        for m in ("triton", "triton.runtime", "triton.runtime.autotuner", "triton.runtime.jit"):
            sys.modules[m] = None             # as if Triton were not installed
        import torch, kernelscope as ks
        with ks.profile() as p:
            torch.ones(4) + 1
        print("auto", p.report.meta["tuning"]["notes"])
        with ks.profile(tuning=True) as p:
            torch.ones(4) + 1
        print("forced", p.report.meta["tuning"]["notes"], len(p.report.ops) > 0)
    """)
    assert r.returncode == 0, r.stderr
    auto, forced = r.stdout.strip().splitlines()[-2:]
    assert auto.startswith("auto [") and "Triton was not imported when the region started" in auto
    assert forced.startswith("forced [") and "Triton could not be imported" in forced and forced.endswith("True")


def test_declared_constexprs_of_a_real_kernel():
    pytest.importorskip("triton")
    sys.path.insert(0, str(DATA.parent.parent / "example_notebooks"))
    import triton
    from tuned_matmul import matmul_kernel
    assert declared_constexprs(triton.jit(matmul_kernel)) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}


def test_origins_of_an_inductor_wrapper():
    src = ("# Topologically Sorted Source Nodes: [linear, relu, mul], Original ATen: [aten.addmm, aten.relu, aten.mul]\n"
           "triton_poi_fused_addmm_mul_relu_0 = async_compile.triton('triton_poi_fused_addmm_mul_relu_0', '''\n"
           "...'''\n# no comment before this one\ntriton_per_fused_sum_1 = async_compile.triton('triton_per_fused_sum_1', '''")
    assert origins_of_source(src) == {"triton_poi_fused_addmm_mul_relu_0": "aten.addmm, aten.relu, aten.mul"}


def test_saved_report_keeps_the_in_process_tables(tmp_path):
    rep = ks.load(DATA / "tuning" / "triton_tuning.ksreport.json.gz")
    back = ks.load(rep.save(tmp_path / "again.ksreport.json.gz"))
    cols = ["kernel", "tuning", "config", "num_warps", "p50_ms", "p20_ms", "p80_ms", "registers", "spills",
            "theoretical_occupancy", "occupancy_limiter", "winner", "cached"]
    assert back.autotune[cols].equals(rep.autotune[cols])
    assert back.trace.variants.equals(rep.trace.variants)
    assert back.kernels["config"].equals(rep.kernels["config"]) and back.meta["tuning"] == rep.meta["tuning"]
    assert back.autotune["cached"].tolist() == [False] * 12 + [True] * 4     # the add kernel: a cache hit


def test_a_launched_function_pays_the_watch_once():
    """The JIT watch sees a function at its first launch and then steps aside for it (its later
    launches call Triton's own run: nothing per launch), and stop() takes the shortcut away."""
    triton = pytest.importorskip("triton")
    sys.path.insert(0, str(DATA.parent.parent / "example_notebooks"))
    from tuned_matmul import matmul_kernel
    fn = triton.jit(matmul_kernel)
    original = triton.runtime.jit.JITFunction.run
    w = TuningWatch()
    w.start()
    with pytest.raises(Exception):   # noqa: B017 - no GPU here: Triton's own run fails after the watch saw it
        fn.run(grid=(1,), warmup=False)
    assert id(fn) in w.triton._jits
    assert vars(fn)["run"].__func__ is original        # the next launch goes straight to Triton
    w.stop()
    assert "run" not in vars(fn) and triton.runtime.jit.JITFunction.run is original


_INTERPRETED = """
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"      # Triton's own interpreter: its real Autotuner, on the CPU
    import torch, triton, triton.language as tl
    import kernelscope as ks
    from triton.runtime.autotuner import Autotuner

    @triton.jit
    def add_one(x, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

    timed = []
    def bench(fn, quantiles):                  # a user's do_bench: runs the config once, says its times
        fn(); timed.append(1)
        return [0.3 / len(timed), 0.1, 0.5]    # later configs faster: the last one wins
    def tuner(**kw):
        return triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((16, 1), (32, 2), (64, 4))],
                               key=["n"], do_bench=bench, **kw)(add_one)
    original = Autotuner.run
    out = {}
    x = torch.zeros(256)
    k = tuner()
    with ks.profile() as p:
        for n in (64, 64, 64, 128, 128):       # two shapes tuned here, each launched again
            k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, n)
        out["during"] = [type(k.cache).__name__, vars(k)["run"].__func__ is original]
    a = p.report.autotune
    out["rows"] = a[["tuning", "shape_key", "config", "p50_ms", "winner", "cached", "note"]].astype(object).where(a.notna(), None).values.tolist()
    out["after"] = [type(k.cache) is dict, len(k.cache), sorted(set(vars(k)) & {"run", "_bench", "prune_configs"}),
                    Autotuner.run is original]
    out["ranges"] = sorted(set(o for o in p.report.ops["name"] if o.startswith("triton.autotune benchmark")))
    with ks.profile() as p:                     # both shapes tuned before this region: cache hits
        k[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    out["hits"] = p.report.autotune[["shape_key", "config", "p50_ms", "winner", "cached", "note"]].astype(object).where(
        p.report.autotune.notna(), None).values.tolist()
    k2 = tuner()
    k2[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    with ks.profile() as p:                     # one shape tuned before: Triton still holds its times
        k2[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    out["hit"] = p.report.autotune[["config", "winner", "cached"]].values.tolist()
    n0 = len(timed)
    one = tuner(prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[:1]})
    with ks.profile() as p:                     # pruned to one config
        one[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    out["pruned"] = [p.report.autotune[["config", "p50_ms", "winner", "note"]].astype(object).where(
        p.report.autotune.notna(), None).values.tolist(), len(timed) - n0]
    import collections
    odd = tuner()
    odd.cache = collections.OrderedDict()       # not the dict the hooks expect: watched call by call
    with ks.profile() as p:
        for _ in range(3):
            odd[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    out["odd"] = [p.report.autotune[["config", "winner"]].values.tolist(), "run" in vars(odd), type(odd.cache).__name__]
    class Counting(Autotuner):                  # a subclass with a run of its own keeps it
        calls = 0
        def run(self, *args, **kwargs):
            Counting.calls += 1
            return super().run(*args, **kwargs)
    sub = tuner()
    sub.__class__ = Counting
    with ks.profile() as p:
        for _ in range(3):
            sub[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, 64)
    out["subclass"] = [Counting.calls, len(p.report.autotune), "run" in vars(sub)]
    print("RESULT", json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted():
    """What the watch collected from Triton's interpreted autotuner (one child process)."""
    pytest.importorskip("triton")
    r = _child(_INTERPRETED)
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    return json.loads(next(line for line in r.stdout.splitlines() if line.startswith("RESULT "))[7:])


def test_autotuner_pays_nothing_per_launch_and_is_given_back(interpreted):
    """Triton's real Autotuner (its interpreter, no GPU): after its first launch in the region it
    runs Triton's own ``run`` and a dict cache; each tuning is still collected with its own times
    (two shapes, the second tuning replacing Triton's configs_timings), and stop() gives back a
    plain dict holding every key, no instance attributes, the class's run."""
    got = interpreted
    assert got["during"] == ["_NoteNewKeys", True]
    assert got["after"] == [True, 2, [], True]
    rows = got["rows"]
    assert [r[:3] for r in rows] == [[0, "64, torch.float32", "BLOCK=64"], [0, "64, torch.float32", "BLOCK=32"],
                                     [0, "64, torch.float32", "BLOCK=16"], [1, "128, torch.float32", "BLOCK=64"],
                                     [1, "128, torch.float32", "BLOCK=32"], [1, "128, torch.float32", "BLOCK=16"]]
    assert [r[3] for r in rows] == pytest.approx([0.1, 0.15, 0.3, 0.3 / 6, 0.3 / 5, 0.3 / 4])
    assert [r[4] for r in rows] == [True, False, False, True, False, False]
    assert not any(r[5] for r in rows)
    # each config timed inside a profiler range that names it
    assert got["ranges"] == [f"triton.autotune benchmark: add_one [BLOCK={b}]" for b in (16, 32, 64)]


def test_autotuner_cache_hit_and_pruned_to_one(interpreted):
    got = interpreted
    assert sorted((r[0], r[1], r[3], r[4]) for r in got["hits"]) == [("128, torch.float32", "BLOCK=64", True, True),
                                                                      ("64, torch.float32", "BLOCK=64", True, True)]
    assert all(r[5].endswith("Triton keeps only the winner of this shape") for r in got["hits"])
    assert sorted(got["hit"]) == [["BLOCK=16", False, True], ["BLOCK=32", False, True], ["BLOCK=64", True, True]]
    # an autotuner whose cache is not a plain dict is not hooked: each call is watched instead
    rows, hooked, kind = got["odd"]
    assert len(rows) == 3 and sum(w for _, w in rows) == 1 and not hooked and kind == "OrderedDict"
    assert got["subclass"] == [3, 3, False]
    rows, benched = got["pruned"]
    assert len(rows) == 1 and rows[0][0] == "BLOCK=16" and rows[0][2]
    if benched:      # Triton 3.6 times even the one config left
        assert rows[0][1] is not None and rows[0][3] is None
    else:            # Triton 3.7+ takes it without timing
        assert rows[0][1] is None and rows[0][3].startswith("the only config left after pruning")
