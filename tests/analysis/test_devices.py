"""One device labeller: a device's kernels and copies carry the same label in every view."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import kernelscope as ks
from kernelscope.analysis.devices import device_label
from kernelscope.view.codec import decode_buffer
from kernelscope.view.report import view_model

DATA = Path(__file__).parent.parent / "data"


def _as_rocm(tmp_path) -> Path:
    """The real MLP training step with its device described as an AMD GPU (as a ROCm
    build of torch writes it: the gfx architecture name in deviceProperties)."""
    doc = json.loads(gzip.decompress((DATA / "mlp_train.pt.trace.json.gz").read_bytes()))
    for d in doc["deviceProperties"]:
        d.update(name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-")
    path = tmp_path / "rocm.json"
    path.write_text(json.dumps(doc))
    return path


def test_rocm_kernels_and_copies_share_one_label_and_one_lane(tmp_path):
    rep = ks.load(_as_rocm(tmp_path))
    assert len(rep.kernels) and len(rep.copies)
    assert set(rep.kernels["device"]) == set(rep.copies["device"]) == {"rocm:0"}
    assert set(rep.copies["device_type"]) == {"ROCm"}
    # The view: the browser draws one lane per (device, stream); a stream holding both kernels
    # and copies must give one lane, not a "rocm:0" and a "cuda:0" one.
    header, buf = view_model(rep)
    cols = decode_buffer(header, buf)
    lanes_k = set(zip(cols["kernels"]["device"], cols["kernels"]["stream"].tolist()))
    lanes_c = set(zip(cols["copies"]["device"], cols["copies"]["stream"].tolist()))
    assert {d for d, _ in lanes_k | lanes_c} == {"rocm:0"}
    assert lanes_k & lanes_c               # the recording copies on its compute stream
    # The analysis names the device the same way (busy time, gaps, backends).
    assert set(rep.timeline.busy["device"]) == {"rocm:0"}
    assert set(rep.backends.loc[rep.backends["device"] != "CPU", "device"]) == {"ROCm"}


def test_cuda_labels_are_unchanged():
    rep = ks.load(DATA / "copies_streams.pt.trace.json.gz")
    assert set(rep.kernels["device"]) == set(rep.copies["device"]) == {"cuda:0"}


def test_labels():
    assert device_label(3, "ROCm") == "rocm:3"
    assert device_label(3, "CUDA") == device_label(3) == "cuda:3"
    assert device_label(None) == "cuda:?"
