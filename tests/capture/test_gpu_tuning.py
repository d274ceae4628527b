"""The tuning watch on a CUDA device (run on the H200: ``pytest -m gpu tests/capture/test_gpu_tuning.py``):
real Triton autotunings and compiled variants, collected while a region runs, saved and loaded."""
import os
import sys

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import kernelscope as ks  # noqa: E402


@triton.jit
def _copy(x, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) * 3.0, mask=m)


def _tuned():
    return triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in
                                    ((128, 1), (512, 4), (2048, 8))], key=["n"])(triton.jit(_copy.fn))


def test_autotuning_in_the_region_is_collected_with_variants(tmp_path):
    k = _tuned()
    x = torch.randn(1 << 20, device="cuda")
    o = torch.empty_like(x)
    with ks.profile() as p:
        k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
        torch.cuda.synchronize()
    rep = p.report
    a = rep.autotune
    print(a[["kernel", "config", "num_warps", "p50_ms", "p20_ms", "p80_ms", "registers", "spills",
             "theoretical_occupancy", "occupancy_limiter", "winner", "cached"]].to_string())
    assert len(a) == 3 and a["winner"].sum() == 1 and not a["cached"].any()
    assert set(a["config"]) == {"BLOCK=128", "BLOCK=512", "BLOCK=2048"}
    assert a["p50_ms"].notna().all() and (a["p20_ms"] <= a["p80_ms"]).all()
    assert a["registers"].notna().all(), "every candidate's compiled variant identified"
    assert a["theoretical_occupancy"].notna().all()
    # one warp per block: the 32-block limit of sm_90 caps it at half the SM's warps
    one = a[a["num_warps"] == 1].iloc[0]
    assert one["theoretical_occupancy"] == 0.5 and "blocks" in one["occupancy_limiter"]
    launch = rep.kernels[rep.kernels["name"] == "_copy"]
    win = a[a["winner"]].iloc[0]
    # every launch (the tuner's own, then the one that used the winner) names its variant; the
    # 14-register variants were recorded by CUPTI as 16 (analysis/producers.py)
    assert launch["config"].notna().all() and set(launch["producer"]) == {"Triton"}
    assert set(launch["config_source"]) == {"process (compiled variant)"}
    assert launch.sort_values("start_us")["config"].iloc[-1] == win["config"]   # the table is not in time order
    # each candidate's launches: the tuner's own (inside the watch's benchmark ranges) and, for
    # the winner, the one launch that used it
    assert (a["benchmark_launches"] > 0).all() and (a["launches"] >= a["benchmark_launches"]).all()
    assert (a["launches"] - a["benchmark_launches"]).tolist() == [1 if w else 0 for w in a["winner"]]
    assert a["launches"].sum() == len(launch)
    assert set(a["resources_source"]) == {"Triton's compiled variant (ptxas, as Triton reports it)"}
    # the in-process tables survive a save and load
    back = ks.load(rep.save(tmp_path / "t.ksreport.json.gz"))
    assert back.autotune[["config", "p50_ms", "winner"]].equals(a[["config", "p50_ms", "winner"]])
    assert back.kernels["config"].tolist() == rep.kernels["config"].tolist()
    # the watch put Triton's functions back
    assert triton.runtime.autotuner.Autotuner.run.__qualname__ == "Autotuner.run"
    assert triton.runtime.jit.JITFunction.run.__qualname__ == "JITFunction.run"


def test_a_tuning_before_the_region_is_a_cache_hit():
    k = _tuned()
    x = torch.randn(1 << 16, device="cuda")
    o = torch.empty_like(x)
    k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
    torch.cuda.synchronize()
    with ks.profile() as p:
        k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
        torch.cuda.synchronize()
    a = p.report.autotune
    print(a[["config", "p50_ms", "winner", "cached", "note"]].to_string())
    assert len(a) == 3 and a["cached"].all() and a["winner"].sum() == 1


def test_a_tuning_read_from_tritons_disk_cache(tmp_path, monkeypatch):
    """cache_results=True: a second autotuner of the same kernel reads the first one's timings
    from Triton's disk cache (no benchmark): its candidates are said measured earlier, with times."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(1 << 16, device="cuda")
    o = torch.empty_like(x)

    def tuned():
        return triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in
                                        ((128, 1), (512, 4), (2048, 8))], key=["n"], cache_results=True)(triton.jit(_copy.fn))
    first = tuned()
    first[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
    torch.cuda.synchronize()
    k = tuned()
    with ks.profile() as p:
        k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
        torch.cuda.synchronize()
    a = p.report.autotune
    print(a[["config", "p50_ms", "winner", "cached", "benchmark_launches", "note"]].to_string())
    assert len(a) == 3 and a["cached"].all() and a["winner"].sum() == 1 and a["p50_ms"].notna().all()
    assert type(k.cache) is dict and len(k.cache) == 1


def test_inductor_template_choices_have_registers():
    """max-autotune's Triton template choices: registers (and spills, shared memory) read from
    each choice's benchmark kernel after it ran, labelled with where; never a guess."""
    import torch._inductor.config as cfg
    import torch._inductor.select_algorithm  # noqa: F401 - imported so that "auto" watches it
    torch._dynamo.reset()
    cfg.max_autotune_gemm_backends = "ATEN,TRITON"
    lin = torch.nn.Linear(512, 512, device="cuda")
    g = torch.compile(lambda x: torch.relu(lin(x)), mode="max-autotune-no-cudagraphs")
    x = torch.randn(512, 512, device="cuda")
    with torch.no_grad(), ks.profile() as p:
        g(x)
        torch.cuda.synchronize()
    a = p.report.autotune
    t = a[a["choice"] == "Triton template"]
    print(t[["kernel", "config", "num_warps", "p50_ms", "registers", "spills", "shared_mem_bytes",
             "theoretical_occupancy", "resources_source", "note"]].to_string())
    assert len(t)
    known = t[t["registers"].notna()]
    assert len(known) and known["resources_source"].notna().all() and known["theoretical_occupancy"].notna().all()
    assert t.loc[t["registers"].isna() & t["p50_ms"].notna(), "note"].str.startswith("registers not known").all()


def test_inductor_choices_are_linked_to_their_launches():
    """Each max-autotune choice timed in the region is tied to its own benchmark launches (the
    watch's range around Inductor's benchmark_choice: the template's placeholder-named kernel,
    the extern's cuBLAS kernel; not the harness's L2 flush), and a winning template to the
    launches of the compiled template kernel that runs it; the wrapper is given back."""
    import torch._inductor.config as cfg
    from torch._inductor import select_algorithm as sa

    from kernelscope.analysis.autotune import HARNESS_OPS
    torch._dynamo.reset()
    cfg.max_autotune_gemm_backends = "ATEN,TRITON"
    tc = getattr(cfg, "test_configs", None)
    few = {"force_disable_caches": True}       # tuned here, in this process
    if hasattr(tc, "max_mm_configs"):          # a few templates per GEMM: a quick compile
        few["test_configs.max_mm_configs"] = 4
    before = vars(sa.AlgorithmSelectorCache)["benchmark_choice"]
    lin1 = torch.nn.Linear(256, 512, device="cuda", dtype=torch.float16)
    lin2 = torch.nn.Linear(512, 128, device="cuda", dtype=torch.float16)
    g = torch.compile(lambda x: lin2(torch.relu(lin1(x))), mode="max-autotune-no-cudagraphs")
    x = torch.randn(384, 256, device="cuda", dtype=torch.float16)
    with cfg.patch(few), torch.no_grad(), ks.profile() as p:
        g(x)
        g(x)
        torch.cuda.synchronize()
    assert vars(sa.AlgorithmSelectorCache)["benchmark_choice"] is before
    rep = p.report
    assert "inductor.benchmark_ranges" in rep.meta["tuning"]["watched"], rep.meta["tuning"]
    a = rep.autotune
    a = a[a["tuner"] == "inductor max-autotune"]
    print(a[["kernel", "tuning", "choice", "config", "num_warps", "num_stages", "p50_ms", "winner", "launches",
             "benchmark_launches", "compiled_kernel", "note"]].to_string(max_colwidth=50))
    assert a["tuning"].nunique() == 2
    timed = a[a["p50_ms"].notna()]
    assert (timed["benchmark_launches"] > 0).all(), "every timed choice has its benchmark launches"
    k = rep.kernels
    for r in timed.to_dict("records"):
        mine = k.iloc[r["kernel_rows"]]
        own = mine[~mine["name"].str.startswith("triton_tem_")]
        assert len(own) == r["benchmark_launches"] and not own["op"].isin(HARNESS_OPS).any()
        if r["choice"] == "Triton template":
            assert own["name"].str.startswith("triton_").all() and (own["block_x"] == r["num_warps"] * 32).all()
        else:
            assert not own["name"].str.startswith("triton").any()
    # No launch is two choices' benchmark.
    rows = [i for r in timed["kernel_rows"] for i in r]
    assert len(rows) == len(set(rows))
    print(k[k["name"].str.startswith("triton_tem_")][["name", "config", "num_warps", "num_stages"]].to_string())
    tied = 0
    for _, w in a[a["winner"]].groupby("tuning"):
        w = w.iloc[0]
        if w["choice"] != "Triton template":
            assert not isinstance(w["compiled_kernel"], str)
            continue
        if not isinstance(w["compiled_kernel"], str):
            # Two winners that cannot be told apart, or a GEMM Inductor compiled with another
            # config than its tuning's winner (on the H200 its epilogue-fusion benchmark chose
            # again for the GEMM with the fused ReLU): the note says which, never a guess.
            note = str(w["note"])
            assert "cannot be told apart" in note or note.startswith(("not run as tuned", "not tied")), note
            if note.startswith("not run as tuned"):
                other = note.split("compiled kernel ")[1].split(" ")[0]
                ran = k[k["name"] == other]
                assert len(ran) == 2 and not (ran["config"] == w["config"]).all(), ran[["name", "config"]]
            continue
        tied += 1
        ran = k[k["name"].isin(w["compiled_kernel"].split(", "))]
        assert len(ran) == 2 and w["launches"] - w["benchmark_launches"] == 2
        assert (ran["num_warps"] == w["num_warps"]).all() and (ran["config"] == w["config"]).all()
    assert tied, "at least one winning template is tied to the kernel that runs it"


def test_tuning_false_watches_nothing():
    k = _tuned()
    x = torch.randn(4096, device="cuda")
    o = torch.empty_like(x)
    with ks.profile(tuning=False) as p:
        k[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
        torch.cuda.synchronize()
    assert len(p.report.autotune) == 0 and "tuning" not in p.report.meta


def test_helion_search_is_collected():
    pytest.importorskip("helion")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu_tools"))
    import helion_tuning
    x = torch.randn(1 << 20, device="cuda")
    with ks.profile() as p:
        helion_tuning.scale_add(x, x)
        torch.cuda.synchronize()
    rep = p.report
    a = rep.autotune
    print(a[["kernel", "producer", "config", "num_warps", "p50_ms", "winner"]].to_string())
    print(rep.kernels[["name", "producer", "config", "config_source"]].drop_duplicates().to_string())
    assert len(a) >= 3 and set(a["producer"]) == {"Helion"} and a["winner"].sum() == 1
    assert "Helion" in set(rep.kernels["producer"])
