"""JAX's own profiler traces (jax.profiler.trace(..., create_perfetto_trace=True)) read by ks.load:
tests/data/wild/jax_own.perfetto_trace.json.gz, recorded on an H200 by tests/gpu_tools/record_wild.py."""
import gzip
import json

import pytest

import kernelscope as ks
from kernelscope.trace.perfetto import looks_like_jax
from tests.conftest import DATA

JAX = DATA / "wild" / "jax_own.perfetto_trace.json.gz"


def _events():
    return json.load(gzip.open(JAX))["traceEvents"]


def test_a_jax_user_gets_the_same_report_occupancy_included():
    rep = ks.load(JAX)
    k = rep.kernels
    dev = [e for e in _events() if e.get("pid") == 1 and e.get("ph") == "X"]
    assert len(k) == len(dev) == 22
    gemm = k[k["name"].str.startswith("sm90_xmma_gemm")].iloc[0]
    # kernel_details "regs:168 static_shared:0 dynamic_shared:231424 grid:64,2,1 block:384,1,1 occ_pct:18.75"
    assert (gemm["grid_x"], gemm["grid_y"], gemm["grid_z"]) == (64, 2, 1)
    assert (gemm["block_x"], gemm["registers_per_thread"], gemm["shared_mem_bytes"]) == (384, 168, 231424)
    assert gemm["theoretical_occupancy"] == pytest.approx(0.1875)
    assert gemm["occupancy_source"].startswith("XLA profiler")
    assert gemm["op"] == "cublas-lt-matmul.1" and gemm["backend"] == "cuBLAS"
    assert k["theoretical_occupancy"].notna().all()
    assert set(k["backend"]) == {"XLA", "cuBLAS", "cuFFT"}
    assert (k.loc[k["backend"] == "XLA", "backend_rule"] == "xla-arg").all()
    assert k["device"].eq("cuda:0").all() and k["stream"].eq(14).all()
    # the launch side (host thread, same correlation_id) is joined
    assert k["launch_start_us"].notna().all() and (k["launch_start_us"] <= k["start_us"]).all()
    assert k["graph_launch"].sum() == 12                       # the command_buffer_3 kernels
    assert rep.devices["name"].tolist() == ["/device:GPU:0"]
    assert any("JAX profiler trace" in n for n in rep.notes)
    from kernelscope.view.report import view_model
    header, buf = view_model(rep)
    assert header["stats"]["launches"] == 22 and len(buf)
    b = rep.backends.set_index("backend")
    assert b.loc["XLA", "launches"] == 18 and b.loc["cuBLAS", "launches"] == 2


def test_jax_detection_and_bad_jax_files(tmp_path):
    raw = gzip.decompress(JAX.read_bytes())
    assert looks_like_jax(raw)
    assert not looks_like_jax((DATA / "mlp_train.pt.trace.json.gz").read_bytes())
    bad = tmp_path / "cut.perfetto_trace.json"
    bad.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ks.TraceError, match="cut.perfetto_trace.json"):
        ks.load(bad)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name",
                                                  "args": {"name": "/device:GPU:0"}}]}))
    with pytest.raises(ks.TraceError, match="no events"):
        ks.load(empty)
