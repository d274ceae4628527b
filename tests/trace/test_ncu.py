"""Reading Nsight Compute CSV exports (real H200 recordings) and merging them onto Kineto kernels."""
from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.trace.ncu.export import kernel_key, merge_ncu, read_ncu

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
MLP_NCU = os.path.join(DATA, "ncu_mlp_train.csv")
TRITON_NCU = os.path.join(DATA, "ncu_triton_kernels.csv")


def test_details_page_is_one_typed_row_per_launch():
    t = read_ncu(MLP_NCU)
    assert len(t) == 86 and t["id"].tolist() == list(range(86))
    first = t.iloc[0]
    # '"3,150,000,000"' and '"1,947,314,453.12"' in the file: thousands separators
    assert first.dram_frequency_hz == 3_150_000_000 and first.sm_frequency_hz == pytest.approx(1_947_314_453.12)
    assert (first.block_x, first.block_y, first.grid_x, first.device, first.cc) == (128, 1, 4, 0, "9.0")
    assert first.duration_ns == 2560 and first.theoretical_occupancy_pct == 100
    assert first.achieved_occupancy_pct == pytest.approx(5.74)
    assert first.function_cache_configuration == "CachePreferNone"
    assert t.dtypes["registers_per_thread"] == "Int64" and t.dtypes["achieved_occupancy_pct"] == "float64"
    assert t.attrs["units"]["duration_ns"] == "ns" and t.attrs["metrics"]["duration_ns"] == "Duration"
    nvjet = t[t.kernel_name.str.startswith("nvjet")]
    assert set(nvjet.dynamic_shared_memory_per_block_bytes) == {213220, 213188, 229772}
    # the "Block Size"/"Grid Size" metrics (totals) next to the per-axis launch dimensions
    row = t.loc[20]
    assert (row.block_x, row.grid_x, row.grid_y, row.block_size, row.grid_size) == (384, 2, 64, 384, 128)


def test_other_sections_and_the_raw_page():
    s = read_ncu(os.path.join(DATA, "occupancy_ncu_sections.csv"))      # memory + compute workload sections
    assert len(s) == 4 and "l2_hit_rate_pct" in s and "memory_throughput_bytes_per_s" in s
    assert s["issue_slots_busy_pct"].dtype == "float64"
    raw = read_ncu(os.path.join(DATA, "occupancy_ncu_raw.csv"))         # --page raw: metric ids, a units row
    assert len(raw) == 6 and raw.shape[1] > 500
    assert raw.attrs["metrics"]["launch_registers_per_thread"] == "launch__registers_per_thread"
    details = read_ncu(os.path.join(DATA, "occupancy_h200_ncu.csv")).iloc[:6]
    # the same six launches as the details export of the sweep: same configuration, same limits
    assert raw.block_x.tolist() == details.block_x.tolist() == [32, 33, 64, 96, 100, 128]
    assert raw.launch_registers_per_thread.tolist() == details.registers_per_thread.tolist()
    assert raw.launch_occupancy_limit_warps_blocks.tolist() == details.block_limit_warps_blocks.tolist()
    assert raw.launch_occupancy_limit_registers_blocks.tolist() == details.block_limit_registers_blocks.tolist()
    assert (raw.sm_warps_active_avg_pct_of_peak_sustained_active_pct.between(0, 100)).all()
    # the device's own block cap, as ncu reads it, is our table's 9.0 row
    from kernelscope.analysis.archs import arch
    assert set(raw.device_attribute_limits_max_cta_per_sm) == {arch((9, 0)).max_blocks_per_sm}
    dur = [c for c in raw.columns if c.startswith("gpu_time_duration_sum")]
    assert dur == ["gpu_time_duration_sum_ns"] and (raw[dur[0]] > 0).all()


def test_load_ncu_builds_a_report_whose_occupancy_is_ncus():
    rep = ks.load_ncu(MLP_NCU)
    k = rep.kernels
    assert len(k) == 86 and rep.ncu is not None and len(rep.ncu) == 86
    assert (k.duration_us * 1000).round(3).tolist() == rep.ncu.duration_ns.astype(float).tolist()
    assert (k.start_us.diff().dropna().round(6) == k.duration_us.iloc[:-1].round(6).to_numpy()).all()
    assert rep.devices.loc[0, "num_sms"] == 132 and rep.devices.loc[0, "compute_major"] == 9
    # our theoretical occupancy from the launch parameters equals ncu's on every launch
    assert ((k.theoretical_occupancy * 100).round(2) == k.ncu_theoretical_occupancy_pct).all()
    assert (k.block_limit_registers == k.ncu_block_limit_registers_blocks).all()
    assert any("serializes" in n for n in rep.notes)
    t = ks.load_ncu(TRITON_NCU)
    assert sorted(set(t.kernels.name))[:2] == ["add_kernel", "softmax_kernel"]


def test_merge_onto_the_kineto_report_of_the_same_workload():
    kin = ks.load(os.path.join(DATA, "mlp_train.pt.trace.json.gz"))
    rep = ks.load_ncu(MLP_NCU, kernels_report=kin)
    k = rep.kernels
    assert len(k) == len(kin.kernels) == 74
    hit = k[k.ncu_id.notna()]
    # ncu also recorded the workload's setup and the optimizer's first-step launches (ids
    # 29-40); every Kineto launch finds its ncu launch: 74 of 74
    assert len(hit) == 74
    assert sorted(set(range(86)) - set(hit.ncu_id.astype(int))) == list(range(29, 41))
    assert (hit.registers_per_thread == hit.ncu_registers_per_thread).all()
    assert (hit.shared_mem_bytes == hit.ncu_static_shared_memory_per_block_bytes
            + hit.ncu_dynamic_shared_memory_per_block_bytes).all()
    assert ((hit.theoretical_occupancy * 100).round(2) == hit.ncu_theoretical_occupancy_pct).all()
    # measured figures come through: achieved occupancy of the cuBLAS GEMMs 12-15 %
    gemm = hit[hit.name.str.startswith("nvjet")]
    assert gemm.ncu_achieved_occupancy_pct.between(12, 16).all() and len(gemm) == 10
    # the ncu table survives save / load
    path = rep.save(os.path.join(os.environ.get("TMPDIR", "/tmp"), "ks_ncu_merge.ksreport.json.gz"))
    back = ks.load(path)
    assert back.kernels.ncu_id.notna().sum() == 74
    tri = ks.load_ncu(TRITON_NCU, kernels_report=ks.load(os.path.join(DATA, "triton_kernels.pt.trace.json.gz")))
    assert tri.kernels.ncu_id.tolist() == [3.0, 4.0, 5.0, 6.0]     # after ncu's 3 setup (randn) launches


def test_merge_is_unchanged_without_ncu_and_keys_fold_spellings():
    kin = ks.load(os.path.join(DATA, "triton_kernels.pt.trace.json.gz")).kernels
    assert merge_ncu(kin, pd.DataFrame()).columns.tolist() == kin.columns.tolist()
    k = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::T<1>, float>(int)"
    n = "void at::<unnamed>::multi_tensor_apply_kernel<at::<unnamed>::TensorListMetadata<1>>(T1, T2, T3)"
    assert kernel_key(k) == kernel_key(n) == "multi_tensor_apply_kernel"
    assert kernel_key("nvjet_sm90_tst_64x64_64x13_2x1_v_bz_bias_TNT") == "nvjet_sm90_tst_64x64_64x13_2x1_v_bz_bias_TNT"


def test_gzip_export(tmp_path):
    p = tmp_path / "k.csv.gz"
    with open(TRITON_NCU, "rb") as f:
        p.write_bytes(gzip.compress(f.read()))
    assert len(read_ncu(p)) == 7


def test_bad_input_names_the_file(tmp_path):
    with pytest.raises(ks.TraceError, match="nope.csv: no such file"):
        ks.load_ncu(tmp_path / "nope.csv")
    trace = os.path.join(DATA, "mlp_train.pt.trace.json.gz")
    with pytest.raises(ks.TraceError, match=r"mlp_train.pt.trace.json.gz: is JSON, not an Nsight Compute CSV export \(a Kineto trace\? open it with ks.load\)"):
        ks.load_ncu(trace)
    rep_file = tmp_path / "x.csv"
    rep_file.write_bytes(b"NVPERF\x00\x01\x02" * 20)
    with pytest.raises(ks.TraceError, match=r"x.csv: binary file, neither an Nsight Compute CSV export nor an .ncu-rep"):
        ks.load_ncu(rep_file)
    other = tmp_path / "other.csv"
    other.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ks.TraceError, match="other.csv: no Nsight Compute header"):
        ks.load_ncu(other)
    # ncu ran but profiled nothing: only its ==PROF== lines and a header
    empty = tmp_path / "empty.csv"
    with open(TRITON_NCU) as f:
        head = [next(f) for _ in range(4)]
    empty.write_text("".join(head))
    with pytest.raises(ks.TraceError, match="empty.csv: the export holds no metric rows"):
        ks.load_ncu(empty)
    assert issubclass(ks.TraceError, ValueError)
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_prof_lines_anywhere_are_skipped(tmp_path):
    # ncu writes ==PROF== / ==WARNING== lines before the CSV and, when the application
    # prints, in between; a localized file keeps its quoted "1,234.5" numbers
    with open(MLP_NCU) as f:
        lines = f.read().splitlines()
    lines.insert(200, "==PROF== Disconnected from process 644")
    p = tmp_path / "mixed.csv"
    p.write_text("\n".join(lines))
    t = read_ncu(p)
    assert len(t) == 86 and np.isclose(t.sm_frequency_hz.iloc[0], 1_947_314_453.12)


def test_integer_metric_beyond_int64_stays_a_float():
    """A counter too large for int64 (a damaged export the fuzz test met) reads as a float."""
    from kernelscope.trace.ncu.export import _typed
    assert _typed(["99999999999999999999999", "5"]).tolist() == [1e23, 5.0]
    assert str(_typed(["5", "6"]).dtype) == "Int64"
