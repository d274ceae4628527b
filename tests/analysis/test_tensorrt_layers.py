"""TensorRT kernels mapped to the engine's layers by the engine inspector JSON's tactic names.

What is real and what is constructed: the inspector JSON files are real TensorRT output
(NVIDIA/TensorRT's trt-engine-explorer examples: ResNet-18 fp16 built on an A100 with detailed
profiling verbosity, and a layer-names-only export; see tests/data/RECORDINGS.md). TensorRT is not
on the H200 image, so no trace of a TensorRT engine running exists here: the traces below are a
real H200 recording (conv_net: cuDNN convolutions under torch.profiler) whose kernel names are
replaced, launch by launch, with the engine's tactic names in layer order. Their timing and launch
shapes are the H200's; their names are constructed.
"""
import gzip
import json
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.analysis.producers import BY_ORDER, BY_TACTIC, tactic_layers
from kernelscope.trace.tensorrt import read_engine_layers

DATA = Path(__file__).resolve().parents[1] / "data"
ENGINE = DATA / "tensorrt" / "resnet18_fp16_a100.engine.graph.json"
NAMES_ONLY = DATA / "tensorrt" / "layer_names_only.layer_info.json"
SHARED = ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize256x64x32_stage3_"
          "warpsize4x1x1_g1_tensor16x8x16_t1r3s3_aACCESS")     # the tactic of four layers
FIRST = "trt_turing_cutlass_image_network_first_layer_hmma_fprop_f16f16f32_nhwc_nhwc_k64r7s7c4_stride2x2"


def _tactics():
    return [layer["TacticName"] for layer in json.loads(ENGINE.read_text())["Layers"] if layer.get("TacticName")]


def engine_trace_file(folder, names=None) -> Path:
    """conv_net's H200 trace with each kernel renamed to the engine's next tactic (or the next of
    ``names``), cycling."""
    with gzip.open(DATA / "conv_net.pt.trace.json.gz", "rt") as f:
        doc = json.load(f)
    tactics, i = names or _tactics(), 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = tactics[i % len(tactics)]
            i += 1
    path = Path(folder) / "engine_run.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


@pytest.fixture(scope="module")
def engine_trace(tmp_path_factory):
    return engine_trace_file(tmp_path_factory.mktemp("trt"))


def test_reads_the_inspector_json():
    layers = read_engine_layers(ENGINE)
    assert len(layers) == 36 and layers["index"].tolist() == list(range(36))
    conv = layers[layers["name"] == "Conv_0 + Relu_1"].iloc[0]
    assert conv["layer_type"] == "CaskConvolution" and conv["tactic"] == FIRST
    assert conv["tactic_value"] == "0xe2222883a6602489" and conv["source"] == ENGINE.name
    # 21 convolutions and a pooling name their tactic; reformats, no-ops and the max pool do not
    assert layers[layers["tactic"].notna()]["layer_type"].value_counts().to_dict() == {
        "CaskConvolution": 21, "CaskPooling": 1}
    assert layers[layers["tactic"].isna()]["layer_type"].value_counts().to_dict() == {
        "NoOp": 11, "Reformat": 2, "CudaPooling": 1}
    names = read_engine_layers(NAMES_ONLY)                           # LAYER_NAMES_ONLY: names alone
    assert len(names) == 86 and names["tactic"].isna().all() and names["name"].iloc[1].endswith("QuantizeLinear")


def test_each_launch_names_its_layer(engine_trace):
    rep = ks.load(engine_trace, tensorrt_layers=ENGINE)
    k = rep.kernels
    assert len(k) == 44 and (k["producer"] == "TensorRT").all() and (k["trt_layers"] > 0).all()
    first = k[k["name"] == FIRST]
    assert set(first["trt_layer"]) == {"Conv_0 + Relu_1"} and set(first["trt_layer_type"]) == {"CaskConvolution"}
    pool = k[k["name"].str.contains("pooling_fw_4d")]
    assert set(pool["trt_layer"]) == {"GlobalAveragePool_46"} and set(pool["trt_layer_type"]) == {"CaskPooling"}
    assert set(first["trt_layer_source"]) == {BY_TACTIC}
    # Four layers run SHARED: its name does not say which; the trace holds two whole passes of the
    # engine (every tactic layer's kernel in layer order), so each launch's position does.
    shared = k[k["name"] == SHARED]
    assert (shared["trt_layers"] == 4).all() and set(shared["trt_layer_source"]) == {BY_ORDER}
    assert shared["trt_layer"].tolist() == ["Conv_3 + Relu_4", "Conv_5 + Add_6 + Relu_7", "Conv_8 + Relu_9",
                                            "Conv_10 + Add_11 + Relu_12"] * 2
    assert k["trt_layer"].notna().all()
    # The backend stays the library the name says (cuDNN's and xmma kernels), the producer is TensorRT.
    assert {"TensorRT"} < set(k["backend"])


def test_outside_a_whole_pass_a_shared_tactic_names_no_layer(tmp_path):
    """Constructed order: one whole pass, then the same tactics starting one layer late (not a
    pass of the engine in its order): there a shared tactic's launch is not given a layer."""
    tactics = _tactics()
    k = ks.load(engine_trace_file(tmp_path, tactics + tactics[1:] + tactics[:1]), tensorrt_layers=ENGINE).kernels
    assert k.iloc[:22]["trt_layer"].notna().all()
    late = k.iloc[22:]
    shared = late[late["name"] == SHARED]
    assert len(shared) == 4 and shared["trt_layer"].isna().all() and shared["trt_layer_source"].isna().all()
    assert set(shared["trt_layer_type"]) == {"CaskConvolution"}        # all four layers are convolutions
    unique = late[late["trt_layers"] == 1]
    assert unique["trt_layer"].notna().all() and set(unique["trt_layer_source"]) == {BY_TACTIC}


def test_saved_report_keeps_the_layers(engine_trace, tmp_path):
    rep = ks.load(engine_trace, tensorrt_layers=ENGINE)
    again = ks.load(rep.save(tmp_path / "engine.ksreport.json.gz"))
    assert len(again.trace.tensorrt_layers) == 36
    assert again.kernels["trt_layer"].tolist() == rep.kernels["trt_layer"].tolist()
    assert again.kernels["producer"].tolist() == rep.kernels["producer"].tolist()


def test_without_the_json_the_name_says_tensorrt(engine_trace):
    k = ks.load(engine_trace).kernels
    assert "trt_layer" not in k.columns
    # TensorRT's own kernels (trt_*) say TensorRT built them; the library tactics it picked
    # (cuDNN's, xmma's) cannot be told from a framework's launch of the same kernel by name.
    assert set(k[k["name"] == FIRST]["producer"]) == {"TensorRT"}


def test_tensorrt_naming_says_tensorrt_without_the_json(tmp_path):
    """Constructed names in TensorRT's own forms (a Myelin-fused kernel, a tactic kernel ending in
    _kernel_trt): no inspector JSON, and the producer is still TensorRT."""
    names = ["__myl_ResMulSumAddCas_myl0_3", FIRST.replace("trt_", "sm80_") + "_kernel_trt"]
    k = ks.load(engine_trace_file(tmp_path, names)).kernels
    assert set(k["producer"]) == {"TensorRT"} and set(k["name"]) == set(names)


def test_names_only_json_matches_nothing(engine_trace):
    k = ks.load(engine_trace, tensorrt_layers=NAMES_ONLY).kernels
    assert (k["trt_layers"] == 0).all() and k["trt_layer"].isna().all()


def test_tactic_inside_a_longer_name():
    """Constructed names: a tactic followed by a suffix, inside a demangled name, and a tactic
    that is another's prefix (the longer one wins); a name that only contains a tactic inside a
    longer identifier does not match."""
    layers = read_engine_layers(ENGINE)
    t = "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_tensor16x8x16_t1r1s1"
    got = tactic_layers([t + "_kernel_trt", f"void xmma::kernel<{t}>(Params)", "x" + t, SHARED], layers)
    assert [r["name"] for r in got[t + "_kernel_trt"]] == ["Conv_38 + Add_39 + Relu_40"]
    assert [r["name"] for r in got[f"void xmma::kernel<{t}>(Params)"]] == ["Conv_38 + Add_39 + Relu_40"]
    assert "x" + t not in got
    assert len(got[SHARED]) == 4


@pytest.mark.parametrize("content, problem", [
    (b"", "not valid JSON"),
    (b"{\"Layers\": [", "not valid JSON"),
    (b"[1, 2]", 'no "Layers" list'),
    (b"{\"Layers\": {\"Name\": \"x\"}}", 'no "Layers" list'),
    (b"{\"Layers\": [{\"Name\": \"a\"}, 7]}", "layer 1 of the engine inspector JSON is a int"),
])
def test_malformed_json_names_the_file(tmp_path, engine_trace, content, problem):
    bad = tmp_path / "engine.json"
    bad.write_bytes(content)
    with pytest.raises(ks.TraceError) as e:
        ks.load(engine_trace, tensorrt_layers=bad)
    assert str(bad) in str(e.value) and problem in str(e.value)


def test_odd_fields_are_left_empty(tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"Layers": [{"Name": 3, "LayerType": ["x"], "TacticName": "<script>k</script>"}]}))
    layers = read_engine_layers(p)
    assert layers["name"].tolist() == [None] and layers["layer_type"].tolist() == [None]
    assert layers["tactic"].tolist() == ["<script>k</script>"]      # kept as text; renderers escape it
    with pytest.raises(ks.TraceError, match="no such file"):
        read_engine_layers(tmp_path / "missing.json")
