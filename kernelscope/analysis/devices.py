"""One device labeller: ``cuda:0``, ``rocm:1``, ``cuda:?``, for kernels and copies alike.

Every view names a device by this label (timeline lanes, the backends table, the findings), so a
device's kernels and its copies must get the same one: on ROCm they once came out as ``rocm:0``
and ``cuda:0`` and the timeline drew one stream as two lanes.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# Device type (the devices table's ``device_type``) -> label prefix.
# WebGPU: an adapter of a browser's WebGPU (onnxruntime-web; kernelscope.trace.onnxruntime_web).
PREFIXES = {"CUDA": "cuda", "ROCm": "rocm", "CPU": "cpu", "WebGPU": "webgpu", "Apple": "apple",
            "DirectML": "dml", "OpenVINO": "openvino", "NPU": "npu", "unknown": "device"}
# A device the header does not list is taken to be CUDA (the common case; ROCm traces list theirs).
DEFAULT_TYPE = "CUDA"


def device_label(index, device_type=None) -> str:
    """The label of device ``index`` of type ``device_type`` (None: unknown, taken as CUDA).

    >>> device_label(0, "ROCm"), device_label(1), device_label(None), device_label(pd.NA, "ROCm")
    ('rocm:0', 'cuda:1', 'cuda:?', 'rocm:?')
    """
    prefix = PREFIXES.get(device_type, "cuda")
    known = index is not None and index is not pd.NA and not (isinstance(index, float) and index != index)
    return f"{prefix}:{int(index) if known else '?'}"


def device_types(devices: pd.DataFrame) -> dict:
    """``{index: device_type}`` from a devices table.

    >>> device_types(pd.DataFrame({"index": [0], "device_type": ["ROCm"]}))
    {0: 'ROCm'}
    """
    if devices is None or not len(devices):
        return {}
    return {i: t for i, t in zip(devices["index"].tolist(), devices["device_type"].tolist()) if i is not pd.NA}


def annotate_devices(table: pd.DataFrame, devices: pd.DataFrame) -> pd.DataFrame:
    """Add ``device`` (the label) and ``device_type`` to a table with ``device_index`` (in place;
    returns it). Labels are made once per distinct device.

    >>> k = annotate_devices(rep.trace.copies.copy(), rep.devices)
    >>> k[["device_index", "device", "device_type"]].drop_duplicates()
       device_index  device device_type
    0             0  cuda:0        CUDA
    """
    types = device_types(devices)
    idx = table["device_index"] if "device_index" in table.columns else pd.Series(pd.NA, index=table.index)
    own = table["device_type"] if "device_type" in table.columns else None
    if own is not None and own.notna().any():
        # A reader that knows each row's device type (ONNX Runtime: the provider's) keeps it.
        pairs = pd.Series(list(zip(idx.tolist(), own.tolist())), index=table.index, dtype=object)
        codes, uniq = pd.factorize(pairs, use_na_sentinel=False)
        kinds = [t if isinstance(t, str) else types.get(i, DEFAULT_TYPE) for i, t in uniq]
        uniq = [i for i, _ in uniq]
    else:
        codes, uniq = pd.factorize(idx, use_na_sentinel=False)
        kinds = [types.get(i, DEFAULT_TYPE) if i is not pd.NA else DEFAULT_TYPE for i in uniq]
    labels = np.array([device_label(i, t) for i, t in zip(uniq, kinds)], dtype=object)
    kinds = np.array(kinds, dtype=object)
    table["device"] = pd.Series(labels[codes] if len(table) else [], index=table.index, dtype=object)
    table["device_type"] = pd.Series(kinds[codes] if len(table) else [], index=table.index, dtype=object)
    return table
