"""Full Nsight Compute reports (``.ncu-rep``), recorded on the H200 with ``ncu --set full
--import-source yes`` (tests/gpu_tools/record_ncu.py), read through NVIDIA's ``ncu_report``:
every figure checked against what ``ncu_report`` itself reads from the same file, and against
the work the kernels are known to do (2*M*N*K for a GEMM, one add per element)."""
import gzip
import lzma
import os
import random
import sys

import numpy as np
import pandas as pd
import pytest

ncu_report = pytest.importorskip("ncu_report")

import kernelscope as ks
from kernelscope.analysis.ncu_kernels import measured_roofline, memory_access, speed_of_light
from kernelscope.analysis.stalls import REASONS, explain, normalize_reason
from kernelscope.trace.ncu.report import read_ncu_report
from kernelscope.trace.ncu.report_file import check_report_file

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "ncu_rep")
WORKLOADS = ["torch_ops", "triton_kernels", "attention", "resnet50_full"]


def xz(name):
    return os.path.join(DATA, f"{name}.ncu-rep.xz")


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The reports unpacked, as ncu writes them (they are stored xz-compressed)."""
    d = tmp_path_factory.mktemp("ncu_rep")
    out = {}
    for w in WORKLOADS:
        p = d / f"{w}.ncu-rep"
        with lzma.open(xz(w)) as src:
            p.write_bytes(src.read())
        out[w] = str(p)
    return out


@pytest.fixture(scope="module")
def reports():
    return {w: ks.load_ncu(xz(w)) for w in WORKLOADS}


def _actions(path):
    ctx = ncu_report.load_report(path)
    return [ctx.range_by_idx(r).action_by_idx(i) for r in range(ctx.num_ranges())
            for i in range(ctx.range_by_idx(r).num_actions())]


def _m(action, name):
    return action.metric_by_name(name).value()


@pytest.mark.parametrize("w", WORKLOADS)
def test_launch_figures_are_ncu_reports_own(w, plain, reports):
    rep = reports[w]
    acts = _actions(plain[w])
    t = rep.ncu
    assert len(t) == len(acts) == len(rep.kernels)
    for row, a in zip(t.to_dict("records"), acts):
        assert row["kernel_name"] == a.name(ncu_report.IAction.NameBase_DEMANGLED)
        assert row["duration_ns"] == _m(a, "gpu__time_duration.sum")
        assert row["achieved_occupancy_pct"] == _m(a, "sm__warps_active.avg.pct_of_peak_sustained_active")
        assert row["theoretical_occupancy_pct"] == _m(a, "sm__maximum_warps_per_active_cycle_pct")
        assert row["dram_throughput_pct"] == _m(a, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
        assert row["l2_hit_rate_pct"] == _m(a, "lts__t_sector_hit_rate.pct")
        assert (row["grid_x"], row["block_x"]) == (_m(a, "launch__grid_dim_x"), _m(a, "launch__block_dim_x"))
        assert row["dram_bytes"] == _m(a, "dram__bytes_read.sum") + _m(a, "dram__bytes_write.sum")
    k = rep.kernels
    assert np.allclose(k["achieved_occupancy"] * 100, t["achieved_occupancy_pct"])
    # Launch durations in the kernels table are ncu's, in microseconds.
    assert np.allclose(k["duration_us"] * 1000, t["duration_ns"].astype(float))
    # Our theoretical occupancy (computed from the launch parameters) is ncu's on every launch,
    # and so is every block limit but shared memory (ncu uses the carveout the driver picked).
    assert ((k["theoretical_occupancy"] * 100).round(2) == k["ncu_theoretical_occupancy_pct"].round(2)).all()
    assert (k["block_limit_registers"] == k["ncu_block_limit_registers_blocks"]).all()
    assert (k["block_limit_warps"] == k["ncu_block_limit_warps_blocks"]).all()
    assert (k["block_limit_blocks"] == k["ncu_block_limit_sm_blocks"]).all()
    assert rep.devices["name"].tolist() == ["NVIDIA H200"] and rep.devices["num_sms"].tolist() == [132]
    assert int(rep.devices["smem_per_block_optin"].iloc[0]) == 232448


def test_compressed_and_plain_read_the_same(plain, tmp_path):
    a = read_ncu_report(plain["triton_kernels"]).launches
    b = read_ncu_report(xz("triton_kernels")).launches
    gz = tmp_path / "t.ncu-rep.gz"
    with open(plain["triton_kernels"], "rb") as f:
        gz.write_bytes(gzip.compress(f.read(), compresslevel=1))
    c = read_ncu_report(gz).launches
    pd.testing.assert_frame_equal(a.drop(columns=[]), b)
    pd.testing.assert_frame_equal(a, c)
    assert check_report_file(plain["triton_kernels"]) == 21


def test_roofline_is_the_work_the_kernels_do(plain, reports):
    t = reports["torch_ops"].ncu.set_index("id")
    dur = t["duration_ns"].astype(float) * 1e-9
    # a @ a, bf16 4096^3 on tensor cores; f @ f, fp32 2048^3 on CUDA cores (cuBLAS' SIMT kernel)
    assert t.loc[0, "tensor_bf16_flops_per_s"] * dur[0] == pytest.approx(2 * 4096 ** 3, rel=1e-3)
    assert t.loc[1, "fp32_flops_per_s"] * dur[1] == pytest.approx(2 * 2048 ** 3, rel=1e-3)
    # x + 1.0: torch's add kernel computes self + alpha * other, one FFMA per element, which
    # Nsight Compute (like any roofline) counts as two operations
    assert t.loc[2, "fp32_flops_per_s"] * dur[2] == pytest.approx(2 << 24, rel=1e-3)
    tri = reports["triton_kernels"].ncu.set_index("kernel_name")
    mm = tri.loc["matmul_kernel"]
    assert mm["tensor_fp16_flops_per_s"] * mm["duration_ns"] * 1e-9 == pytest.approx(2 * 2048 ** 3, rel=1e-3)
    add = tri.loc["add_kernel"]
    assert add["fp32_flops_per_s"] * add["duration_ns"] * 1e-9 == pytest.approx(1 << 24, rel=1e-3)
    # The ceilings are ncu's: the dense bf16 wgmma path and DRAM, at the clocks it measured.
    a = _actions(plain["torch_ops"])[0]
    sm = _m(a, "sm__cycles_elapsed.avg.per_second")
    assert t.loc[0, "tensor_bf16_peak_flops_per_s"] == pytest.approx(
        _m(a, "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained") * sm)
    assert t.loc[0, "dram_peak_bytes_per_s"] == pytest.approx(
        _m(a, "dram__bytes.sum.peak_sustained") * _m(a, "dram__cycles_elapsed.avg.per_second"))
    assert 4.7e12 < t.loc[0, "dram_peak_bytes_per_s"] < 4.9e12           # the H200's 4.8 TB/s
    rl = measured_roofline(reports["torch_ops"].ncu)
    dot = rl[rl.dominant & (rl.level == "dram")].set_index("id")
    assert dot.loc[0, "precision"] == "tensor_bf16" and dot.loc[0, "bound"] == "compute"
    assert dot.loc[0, "roof_share"] == pytest.approx(t.loc[0, "tensor_bf16_flops_per_s"] / t.loc[0, "tensor_bf16_peak_flops_per_s"])
    assert dot.loc[2, "bound"] == "memory"
    # and report.roofline carries one measured row per launch
    roof = reports["torch_ops"].roofline
    assert (roof["flops_source"] == "Nsight Compute").sum() == 6
    assert roof.loc[roof.precision == "tensor_bf16", "achieved_tflops"].iloc[0] == pytest.approx(787.9, rel=1e-3)


def test_memory_verdicts_name_the_strided_kernels(reports):
    m = memory_access(reports["triton_kernels"].ncu).set_index("kernel_name")
    # STRIDE=33 over 4-byte floats: each 32-byte sector brings one useful float
    assert m.loc["strided_kernel", "load_efficiency"] == pytest.approx(4 / 32)
    assert m.loc["strided_kernel", "load_sectors_per_request"] == pytest.approx(32.0)
    assert m.loc["strided_kernel", "verdict"].startswith("poor: global loads use 12% of the bytes they fetch")
    assert m.loc["add_kernel", "load_efficiency"] == 1.0 and pd.isna(m.loc["add_kernel", "verdict"])
    t = memory_access(reports["torch_ops"].ncu).set_index("id")
    assert t.loc[4, "verdict"].startswith("poor")                    # m.t().contiguous()
    assert t.loc[2:3, "verdict"].isna().all()                        # x + 1, gelu: coalesced
    sol = [speed_of_light(r)["verdict"] for r in reports["triton_kernels"].ncu.to_dict("records")]
    assert sol[1].startswith("memory-bound")
    kinds = [f.kind for f in reports["triton_kernels"].findings]
    assert kinds[0] == "uncoalesced_access"
    f = reports["triton_kernels"].findings[0]
    assert "strided_kernel" in f.title and "Nsight Compute's sector counters" in f.detail


@pytest.mark.parametrize("w", WORKLOADS)
def test_stalls_are_ncus_pc_samples(w, plain, reports):
    rep = reports[w]
    s = rep.stalls
    assert len(s) == len(rep.ncu) and s["launch"].tolist() == rep.ncu["id"].tolist()
    assert set(s["source"]) == {"Nsight Compute"}
    for row, a in zip(s.to_dict("records"), _actions(plain[w])):
        reasons = {n[len("smsp__pcsamp_warps_issue_stalled_"):]: _m(a, n) for n in a.metric_names()
                   if n.startswith("smsp__pcsamp_warps_issue_stalled_") and not n.endswith("_not_issued")}
        stalled = {normalize_reason(r): v for r, v in reasons.items() if r != "selected"}
        assert row["samples"] == sum(stalled.values())
        for r, v in stalled.items():
            assert row[r] == pytest.approx(v / row["samples"])
        assert row["top_stall"] == max(stalled, key=stalled.get)
    shares = s[[c for c in s.columns if c in REASONS]].sum(axis=1)
    assert np.allclose(shares, 1.0)
    # every reason ncu sampled has a meaning and a fix in our vocabulary
    for r in [c for c in s.columns if c not in ("name", "launch", "launches", "source", "samples", "top_stall")]:
        assert r in REASONS, r
        assert explain(r).fix and "does not describe" not in explain(r).meaning
    assert rep.kernels["top_stall"].tolist() == s["top_stall"].tolist()


def test_top_stalls_of_known_kernels(reports):
    tri = reports["triton_kernels"].stalls.set_index("name")
    assert tri.loc["strided_kernel", "top_stall"] == "mio_throttle"     # ncu's own rule says "Mio Throttle Stalls"
    assert tri.loc["add_kernel", "top_stall"] == "long_scoreboard"
    att = reports["attention"].stalls.iloc[0]
    assert att["top_stall"] == "barrier"


@pytest.mark.parametrize("w", WORKLOADS)
def test_rules_are_ncus_and_labelled(w, plain, reports):
    rep = reports[w]
    rules = rep.ncu_detail["rules"]
    acts = _actions(plain[w])
    assert len(rules) == sum(len(a.rule_results_as_dicts()) for a in acts)
    first = acts[0].rule_results_as_dicts()[0]
    r0 = rules[rules["id"] == 0].iloc[0]
    assert r0["rule"] == first["rule_identifier"] and r0["section"] == first["section_identifier"]
    assert not rules["message"].str.contains("@section:|@url:").any()      # ncu's link markup made words
    ncu = [f for f in rep.findings if f.kind == "nsight_compute"]
    assert ncu and all(f.title.startswith("Nsight Compute on ") for f in ncu)
    assert all(f.evidence["source"] == "Nsight Compute rule result" for f in ncu)
    for f in ncu:
        got = rules[(rules["rule"] == f.evidence["rule"]) & (rules["kernel_name"] == f.evidence["kernel"])]
        assert f.detail in got["message"].tolist()
        if f.evidence["estimated_speedup_pct"]:
            assert f"estimated speedup: {f.evidence['estimated_speedup_pct']:.0f}%" in f.title


def test_source_hot_spots_of_triton_kernels(plain, reports):
    rep = reports["triton_kernels"]
    hs = rep.ncu_detail["hotspots"]
    strided = hs[hs["id"] == 1].sort_values("rank")
    top = strided.iloc[0]
    assert top["location"] == "record_ncu.py:55" and "STRIDE" in top["text"]
    # the line's samples: the sum over its instructions, as ncu_report correlates them
    a = _actions(plain["triton_kernels"])[1]
    m = a.metric_by_name("smsp__pcsamp_sample_count")
    pcs = m.correlation_ids()
    per_line = {}
    for j in range(m.num_instances()):
        info = a.source_info(pcs.as_uint64(j))
        per_line[info.line()] = per_line.get(info.line(), 0) + m.as_uint64(j)
    assert top["samples"] == per_line[55] == max(per_line.values())
    assert top["share"] == pytest.approx(per_line[55] / sum(per_line.values()))
    # SASS around the hot instruction: the strided load itself
    from kernelscope.analysis.ncu_kernels import hotspot_sass
    sass = hotspot_sass(rep.ncu_detail["sass"], top.to_dict())
    hot = [x for x in sass if x["hot"]]
    assert len(hot) == 1 and "LDG" in hot[0]["sass"] and hot[0]["samples"] > 0
    assert hot[0]["sass"] == a.sass_by_pc(int(top["pc"])).strip()


def test_hot_spots_without_line_info_are_instructions(reports):
    hs = reports["torch_ops"].ncu_detail["hotspots"]       # torch's kernels carry no -lineinfo
    assert len(hs) and hs["file"].isna().all()
    assert hs["location"].str.startswith("PC 0x").all()
    assert (hs.groupby("id")["share"].sum() <= 1.0 + 1e-9).all()


def test_merge_onto_kineto_of_the_same_launches():
    for w, n in (("torch_ops", 6), ("triton_kernels", 3), ("attention", 1)):
        kin = ks.load(os.path.join(DATA, f"ncu_{w}.pt.trace.json.gz"))
        rep = ks.load_ncu(xz(w), kernels_report=kin)
        k = rep.kernels
        assert len(k) == len(kin.kernels) == n
        assert k["ncu_id"].tolist() == list(range(n))             # by name and launch order
        assert k["top_stall"].notna().all()
        # Kineto's own timing stays; ncu's sits beside it, within a few percent (ncu replays)
        assert np.allclose(k["ncu_duration_ns"] / 1000, k["duration_us"], rtol=0.1)
        assert (k["backend"] == kin.kernels["backend"]).all()
    tri = ks.load_ncu(xz("triton_kernels"), kernels_report=ks.load(os.path.join(DATA, "ncu_triton_kernels.pt.trace.json.gz")))
    assert set(tri.kernels["backend"]) == {"Triton"}


def test_saved_report_keeps_the_deep_dive(reports, tmp_path):
    rep = reports["triton_kernels"]
    back = ks.load(rep.save(tmp_path / "t.ksreport.json.gz"))
    pd.testing.assert_frame_equal(back.stalls, rep.stalls, check_dtype=False)
    assert back.kernels["top_stall"].tolist() == rep.kernels["top_stall"].tolist()
    assert set(back.ncu_detail) == {"rules", "hotspots", "sass"}
    assert back.ncu_detail["hotspots"]["location"].tolist() == rep.ncu_detail["hotspots"]["location"].tolist()
    assert [f.title for f in back.findings] == [f.title for f in rep.findings]
    # the view's deep dive renders the same from the saved file (no ncu_report needed to show it)
    from kernelscope.view.report import view_model
    assert view_model(back)[0]["kernel_detail"] == view_model(rep)[0]["kernel_detail"]


def test_truncated_and_foreign_reports(plain, tmp_path):
    raw = _read(plain["triton_kernels"])
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ks.TraceError, match=r"cut.ncu-rep: truncated: a record runs to byte"):
        ks.load_ncu(cut)
    cut_xz = tmp_path / "cut.ncu-rep.xz"
    cut_xz.write_bytes(_read(xz("attention"))[:5000])
    with pytest.raises(ks.TraceError, match=r"cut.ncu-rep.xz: the xz stream is damaged or truncated"):
        ks.load_ncu(cut_xz)
    head = tmp_path / "head.ncu-rep"
    head.write_bytes(raw[:100])
    with pytest.raises(ks.TraceError, match="head.ncu-rep: truncated"):
        ks.load_ncu(head)
    trace = tmp_path / "trace.ncu-rep"
    with gzip.open(os.path.join(os.path.dirname(DATA), "mlp_train.pt.trace.json.gz")) as f:
        trace.write_bytes(f.read())
    with pytest.raises(ks.TraceError, match=r"trace.ncu-rep: is JSON, not an Nsight Compute report"):
        ks.load_ncu(trace)
    csv = tmp_path / "export.ncu-rep"
    csv.write_bytes(_read(os.path.join(os.path.dirname(DATA), "ncu_triton_kernels.csv")))
    with pytest.raises(ks.TraceError, match="export.ncu-rep: is text, not an Nsight Compute report"):
        ks.load_ncu(csv)
    # Binary noise, also when it starts with "{" (os.urandom did one time in 256: it was called JSON)
    noise = tmp_path / "noise.ncu-rep"
    for start in (b"", b"{", b"  ["):
        noise.write_bytes(start + random.Random(len(start)).randbytes(4096))
        with pytest.raises(ks.TraceError, match="noise.ncu-rep: not an Nsight Compute report"):
            ks.load_ncu(noise)
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    with pytest.raises(ks.TraceError, match="empty.ncu-rep: not an Nsight Compute report"):
        ks.load_ncu(empty)
    only_header = tmp_path / "hdr.ncu-rep"
    only_header.write_bytes(b"NVR\x00")
    with pytest.raises(ks.TraceError, match="hdr.ncu-rep: holds no profiling results"):
        ks.load_ncu(only_header)
    with pytest.raises(ks.TraceError, match="missing.ncu-rep: no such file"):
        ks.load_ncu(tmp_path / "missing.ncu-rep")
    # .ncu-repz: read by its header when it is one, else left to NVIDIA's reader to judge
    repz = tmp_path / "r.ncu-repz"
    repz.write_bytes(raw)
    assert len(ks.load_ncu(repz).kernels) == 3
    repz.write_bytes(b"\x00\x01not a report" * 50)
    with pytest.raises(ks.TraceError, match="r.ncu-repz: holds no profiled kernels"):
        ks.load_ncu(repz)
    # a report under another name is still recognised by its header
    other = tmp_path / "renamed.bin"
    other.write_bytes(raw)
    assert len(ks.load_ncu(other).kernels) == 3


def test_without_ncu_report_installed_says_how_to_get_it(tmp_path):
    import subprocess
    code = ("import sys; sys.modules['ncu_report'] = None\n"    # as if the package were absent
            "import kernelscope as ks\n"
            f"try:\n    ks.load_ncu({xz('attention')!r})\n"
            "except ks.TraceError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == (f"{xz('attention')}: reading .ncu-rep files needs NVIDIA's reader: "
                                  'pip install "kernelscope[ncu]"'), out.stderr
    # CSV exports need nothing extra
    code = ("import sys; sys.modules['ncu_report'] = None\nimport kernelscope as ks\n"
            f"print(len(ks.load_ncu({os.path.join(os.path.dirname(DATA), 'ncu_triton_kernels.csv')!r}).kernels))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "7", out.stderr


def test_static_html_and_text_deep_dive(reports):
    from kernelscope.render.kernel import kernel_detail_text
    rep = ks.load_ncu(xz("triton_kernels"))
    evil = "<img src=x onerror=alert(1)>"
    rep.ncu_detail["hotspots"]["text"] = evil
    html = rep._repr_html_()
    assert "Nsight Compute deep dive" in html and evil not in html and "&lt;img src=x" in html
    assert "memory-bound" in html and "poor: global loads use 12%" in html
    text = kernel_detail_text(reports["triton_kernels"])
    assert text.index("strided_kernel") < text.index("add_kernel")          # the longest launch first
    assert "hot spot record_ncu.py:55" in text and "Nsight Compute: L2 Global Load Access Pattern" in text


def test_source_correlation_for_the_longest_launches_only():
    t = ks.load_ncu(xz("torch_ops"), source=2)
    longest = set(t.ncu.nlargest(2, "duration_ns")["id"])
    assert set(t.ncu_detail["hotspots"]["id"]) == longest == {1, 4}
    assert any("for the 2 longest of the 6 launches" in n for n in t.notes)
    none = ks.load_ncu(xz("torch_ops"), source=False)
    assert len(none.ncu_detail["hotspots"]) == 0 and len(none.ncu_detail["sass"]) == 0
    # everything else is read the same
    pd.testing.assert_frame_equal(none.stalls, t.stalls)
    assert none.ncu["tensor_bf16_flops_per_s"].tolist() == t.ncu["tensor_bf16_flops_per_s"].tolist()


def test_a_report_without_the_full_set_still_shows():
    """ncu --set basic has no PC sampling, warp state, memory tables or roofline sections: the
    tables keep their columns with nothing in them, and the views show what there is."""
    from kernelscope.analysis.ncu_kernels import stalls_table
    from kernelscope.render.kernel import kernel_detail_text
    from kernelscope.view.report import view_model
    full = ks.load_ncu(xz("triton_kernels"), source=False)
    basic = full.ncu.copy()
    gone = [c for c in basic.columns if c.endswith(("_flops_per_s", "_bytes_per_s", "_bytes")) or c.startswith(
        ("global_", "l2_global", "dram_bytes", "pc_"))]
    basic[gone] = np.nan
    rep = ks.Report(full.trace, ncu=basic, stalls=stalls_table(basic[["id", "kernel_name"]]),
                    ncu_detail={"rules": full.ncu_detail["rules"].iloc[:0], "hotspots": full.ncu_detail["hotspots"],
                                "sass": full.ncu_detail["sass"]})
    header, _ = view_model(rep)
    assert not [n for n in header["notes"] if "unavailable" in n]
    e = header["kernel_detail"]["launches"]["1"]
    assert e["roofline"] is None and e["stalls"]["bars"] == [] and e["memory"]["verdict"] is None
    assert e["sol"]["verdict"].startswith("memory-bound")            # SpeedOfLight is in every set
    assert rep.kernels["top_stall"].isna().all()
    assert "speed of light: memory-bound" in kernel_detail_text(rep)
    assert [f.kind for f in rep.findings if f.kind in ("nsight_compute", "uncoalesced_access")] == []


def _records(raw):
    import struct
    off, out = 4, []
    while off < len(raw):
        (n,) = struct.unpack("<I", raw[off:off + 4])
        out.append(raw[off:off + 4 + n])
        off += 4 + n
    return out


def test_a_report_that_aborts_nvidias_reader_is_a_trace_error(plain, tmp_path):
    """Two whole records swapped: the framing is intact, and ncu_report aborts the process
    (protobuf "Check failed", SIGABRT). Read in a child process, it is a TraceError here."""
    import signal
    import subprocess
    raw = _read(plain["triton_kernels"])
    recs = _records(raw)
    recs[3], recs[4] = recs[4], recs[3]
    bad = tmp_path / "swapped.ncu-rep"
    bad.write_bytes(raw[:4] + b"".join(recs))
    assert check_report_file(str(bad)) == len(recs)            # our framing check accepts it
    inproc = subprocess.run([sys.executable, "-c", "import sys, kernelscope as ks\n"
                             "ks.load_ncu(sys.argv[1], isolated=False)", str(bad)],
                            capture_output=True, text=True, timeout=120)
    assert inproc.returncode == -signal.SIGABRT and "Check failed" in inproc.stderr
    with pytest.raises(ks.TraceError, match=r"swapped.ncu-rep: Nsight Compute's reader crashed on it "
                                            r"\(signal SIGABRT: .*Check failed.*\): the report is damaged"):
        ks.load_ncu(bad)
    with pytest.raises(ks.TraceError, match="swapped.ncu-rep: Nsight Compute's reader crashed"):
        ks.load(str(bad))
    # the same file compressed, and a sound report still reads in the child, as before
    packed = tmp_path / "swapped.ncu-rep.xz"
    packed.write_bytes(lzma.compress(bad.read_bytes()))
    with pytest.raises(ks.TraceError, match="swapped.ncu-rep.xz: Nsight Compute's reader crashed"):
        ks.load_ncu(packed)
    pd.testing.assert_frame_equal(ks.load_ncu(plain["triton_kernels"]).ncu,
                                  ks.load_ncu(plain["triton_kernels"], isolated=False).ncu)


def test_a_compressed_bomb_is_refused_at_its_header(tmp_path):
    """A small .ncu-rep.xz of zeros: refused by its first unpacked bytes, before the rest is
    written to the temp folder."""
    bomb = tmp_path / "bomb.ncu-rep.xz"
    with lzma.open(bomb, "wb", preset=9) as f:
        block = b"\0" * (1 << 20)
        for _ in range(256):
            f.write(block)
    import tempfile
    seen = []
    real = tempfile.TemporaryDirectory

    class Watch(real):
        def cleanup(self):
            seen.append(sum(os.path.getsize(os.path.join(self.name, n)) for n in os.listdir(self.name)))
            super().cleanup()
    tempfile.TemporaryDirectory = Watch
    try:
        with pytest.raises(ks.TraceError, match="bomb.ncu-rep.xz: not an Nsight Compute report"):
            read_ncu_report(str(bomb))
    finally:
        tempfile.TemporaryDirectory = real
    assert seen and seen[0] == 0          # nothing unpacked to disk


def _temp_folder(tmp_path, monkeypatch):
    """An empty temp folder that this process and its children use, to see what a read leaves."""
    import tempfile
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_a_child_that_dies_leaves_nothing_in_the_temp_folder(plain, tmp_path, monkeypatch):
    """The swapped-records report, xz-compressed: the child unpacks it, then NVIDIA's reader
    aborts it. The parent owns the unpack folder, so the unpacked copy goes with it."""
    raw = _read(plain["triton_kernels"])
    recs = _records(raw)
    recs[3], recs[4] = recs[4], recs[3]
    packed = tmp_path / "swapped.ncu-rep.xz"
    packed.write_bytes(lzma.compress(raw[:4] + b"".join(recs)))
    tmp = _temp_folder(tmp_path, monkeypatch)
    with pytest.raises(ks.TraceError, match="swapped.ncu-rep.xz: Nsight Compute's reader crashed"):
        ks.load_ncu(packed)
    assert list(tmp.iterdir()) == []


def test_a_read_past_its_time_budget_is_a_trace_error_and_leaves_nothing(tmp_path, monkeypatch):
    """A real full report given 0.5 s: the child is killed, the error says how to allow more,
    and the unpacked copy is removed; the budget is KERNELSCOPE_NCU_TIMEOUT_S."""
    from kernelscope.trace.ncu.isolated import ncu_timeout_s
    tmp = _temp_folder(tmp_path, monkeypatch)
    monkeypatch.setenv("KERNELSCOPE_NCU_TIMEOUT_S", "0.5")
    assert ncu_timeout_s() == 0.5
    with pytest.raises(ks.TraceError, match=r"resnet50_full.ncu-rep.xz: reading it took longer than 0.5 s "
                                            r"\(set KERNELSCOPE_NCU_TIMEOUT_S to allow more\)"):
        ks.load_ncu(xz("resnet50_full"))
    assert list(tmp.iterdir()) == []
    monkeypatch.setenv("KERNELSCOPE_NCU_TIMEOUT_S", "soon")
    with pytest.raises(ValueError, match="KERNELSCOPE_NCU_TIMEOUT_S must be a number of seconds"):
        ncu_timeout_s()
