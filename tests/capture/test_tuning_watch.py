"""The tuning watch (capture/tuning.py) without a GPU: it wraps Triton's real classes only while a
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
    assert id(fn) in w._jits
    assert vars(fn)["run"].__func__ is original        # the next launch goes straight to Triton
    w.stop()
    assert "run" not in vars(fn) and triton.runtime.jit.JITFunction.run is original
