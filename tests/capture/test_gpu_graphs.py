"""CUDA graphs seen into, live on a CUDA device (run on the H200: ``pytest -m gpu tests/capture/test_gpu_graphs.py``).

The workloads are benchmarks/graphs/record.py's: a transformer layer captured with
``torch.cuda.graph`` before and inside the recorded region, a vLLM-style decode step captured
for four batch sizes and replayed out of order, and a ``reduce-overhead`` compiled CNN.
"""
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kernelscope as ks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "graphs"))
import record  # noqa: E402


def _graph_kernels(rep):
    k = rep.kernels
    return k[k["graph_launch"].fillna(False).astype(bool)]


@pytest.fixture(scope="module")
def layer():
    x = torch.randn(8, 64, 256, device="cuda", dtype=torch.bfloat16)
    lay = record._layer(torch)
    with torch.no_grad():
        record._warm(torch, lambda: lay(x))
    return lay, x


def _capture(lay, x):
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        lay(x)
    return g


def test_watch_patches_only_capture_and_undoes_it():
    begin = torch.cuda.CUDAGraph.capture_begin
    w = ks.watch_graphs()
    assert w.on and torch.cuda.CUDAGraph.capture_begin is not begin
    ks.watch_graphs(on=False)
    assert torch.cuda.CUDAGraph.capture_begin is begin
    ks.watch_graphs()


def test_graph_captured_before_the_region_has_its_op_shapes_module_and_line(layer):
    ks.watch_graphs()
    g = _capture(*layer)
    with ks.profile() as p:
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
    k = _graph_kernels(p.report)
    assert len(k) == 27
    assert k["graph_unmatched"].isna().all(), k["graph_unmatched"].dropna().unique()
    assert set(k["op"]) == {"aten::_transformer_encoder_layer_fwd"}
    ops = p.report.trace.ops
    row = ops.iloc[int(k["op_index"].iloc[0])]
    assert row["cat"] == "graph_capture" and row["input_dims"][0] == [8, 64, 256]
    assert row["input_types"][0] == "c10::BFloat16"
    assert set(k["capture_module"]) == {"TransformerEncoderLayer"}
    assert k["source"].str.contains("test_gpu_graphs.py").all()
    t = p.report.graphs
    assert len(t) == 1 and t["replays"].iloc[0] == 3 and t["kernels_per_replay"].iloc[0] == 9
    assert t["capture_us"].iloc[0] > 0 and t["attributed"].iloc[0] == 1.0
    print(t.to_string())


def test_capture_inside_the_region_uses_the_recorded_ops(layer):
    ks.watch_graphs()
    with ks.profile() as p:
        g = _capture(*layer)
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
    k = _graph_kernels(p.report)
    assert len(k) == 27 and k["graph_unmatched"].isna().all()
    cats = set(p.report.trace.ops["cat"].iloc[k["op_index"].astype(int)])
    assert "graph_capture" not in cats        # the capture's own op rows, with their CPU time
    assert {"aten::addmm", "aten::native_layer_norm"} <= set(k["op"])


def test_decode_graphs_per_batch_size_replayed_out_of_order():
    ks.watch_graphs()
    dec = record.Decoder(torch)
    graphs = record.decode_graphs(torch, dec, [1, 2, 4, 8])
    order = [8, 1, 4, 2, 8, 1]
    with ks.profile() as p:
        for b in order:
            graphs[b][0].replay()
        torch.cuda.synchronize()
    rep = p.report
    k = _graph_kernels(rep)
    assert len(k) == 6 * 28 and k["graph_unmatched"].isna().all()
    ops = rep.trace.ops
    # Each replay's first GEMM (the first block's QKV projection) carries that replay's batch size.
    first_mm = k[k["op"] == "aten::mm"].sort_values("start_us").groupby("correlation", sort=False).head(1)
    first_mm = first_mm.sort_values("launch_start_us")
    batch = [ops.iloc[int(i)]["input_dims"][0][0] for i in first_mm["op_index"]]
    assert batch == order
    assert len(rep.graphs) == 4 and sorted(rep.graphs["replays"]) == [1, 1, 2, 2]


def test_reduce_overhead_compiled_model_kernels_have_their_ops():
    ks.watch_graphs()
    model, _ = record.resnetish(torch)
    f = torch.compile(model, mode="reduce-overhead")
    inp = torch.randn(8, 3, 224, 224, device="cuda")
    with torch.no_grad():
        for _ in range(4):
            f(inp)
        with ks.profile() as p:
            for _ in range(3):
                f(inp)
            torch.cuda.synchronize()
    k = _graph_kernels(p.report)
    assert len(k) > 100
    un = k[k["graph"].isna()]
    # Every graph kernel has its capturing op, or a stated reason.
    assert un["graph_unmatched"].notna().all()
    assert len(un) <= 0.1 * len(k), un["graph_unmatched"].unique()
    conv = k[k["op"] == "aten::convolution"]
    assert len(conv) and all(p.report.trace.ops.iloc[int(i)]["input_dims"][0][0] == 8 for i in conv["op_index"])
    assert k["op"].str.startswith("triton_").sum() > 0
    print(p.report.graphs.to_string())
