"""A TensorRT engine's layers, from its engine inspector JSON.

``IEngineInspector::getEngineInformation(LayerInformationFormat::kJSON)`` (Python:
``inspector.get_engine_information(trt.LayerInformationFormat.JSON)``) and
``trtexec --exportLayerInfo=FILE`` write ``{"Layers": [...], "Bindings": [...]}``. With the
builder's profiling verbosity at ``DETAILED`` each layer is an object (``Name``, ``LayerType``,
``TacticName``, ``TacticValue``, inputs, outputs, parameters); at the default
``LAYER_NAMES_ONLY`` each is its name alone, and there is no tactic to match a kernel to.
``TacticName`` names the kernel the layer's tactic runs, which is how
:mod:`kernelscope.analysis.producers` joins launches to layers.

The file is untrusted: anything that is not such a document is a :class:`~kernelscope.TraceError`
naming the file; odd fields inside a layer (a number where a name belongs) are left empty.
"""
from __future__ import annotations

import os
from pathlib import Path

import msgspec

from kernelscope.errors import TraceError
from kernelscope.trace.decode import to_utf8
from kernelscope.trace.files import read_bytes
from kernelscope.trace.model import TENSORRT_LAYER_COLUMNS, frame

MAX_TEXT = 4000     # characters kept of one name (a fused layer's name lists every op it holds)


def _text(v) -> str | None:
    return v[:MAX_TEXT] if isinstance(v, str) and v else None


def read_engine_layers(path):
    """The layers of a TensorRT engine's inspector JSON, one row each in the engine's order:
    ``index``, ``name``, ``layer_type``, ``tactic`` (``TacticName``), ``tactic_value`` and
    ``source`` (the file's name).

    >>> layers = read_engine_layers("tensorrt/resnet18_fp16_a100.engine.graph.json")
    >>> layers[["name", "layer_type"]].iloc[1].tolist()
    ['Conv_0 + Relu_1', 'CaskConvolution']
    """
    path = os.fspath(path)
    notes = []
    raw = to_utf8(read_bytes(path, notes), path, notes)
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError as e:
        raise TraceError(path, f"not a TensorRT engine inspector JSON: not valid JSON ({e})") from None
    except RecursionError:
        raise TraceError(path, "not a TensorRT engine inspector JSON: nested too deeply") from None
    layers = doc.get("Layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list):
        raise TraceError(path, 'not a TensorRT engine inspector JSON: no "Layers" list at its top level '
                               "(write it with IEngineInspector.get_engine_information(JSON) or "
                               "trtexec --exportLayerInfo)")
    cols = {c: [] for c in TENSORRT_LAYER_COLUMNS}
    source = Path(path).name
    for i, layer in enumerate(layers):
        if isinstance(layer, str):          # LAYER_NAMES_ONLY: the name, nothing else
            layer = {"Name": layer}
        elif not isinstance(layer, dict):
            raise TraceError(path, f"layer {i} of the engine inspector JSON is a {type(layer).__name__}, "
                                   "not a layer object or name")
        cols["index"].append(i)
        cols["name"].append(_text(layer.get("Name")))
        cols["layer_type"].append(_text(layer.get("LayerType")))
        cols["tactic"].append(_text(layer.get("TacticName")))
        cols["tactic_value"].append(_text(layer.get("TacticValue")))
        cols["source"].append(source)
    return frame(cols, TENSORRT_LAYER_COLUMNS)
