"""Peak throughput of common GPUs, from the vendors' datasheets (not measured by us).

FLOP/s are dense (no 2:4 sparsity) in TFLOP/s per precision; tensor-core rates for tf32, bf16,
fp16, fp8, int8 (TOPS) and ``fp64_tc``; ``fp32``/``fp64`` are the vector (CUDA core) rates.
GeForce cards are listed with FP32 accumulation, which is what PyTorch uses. ``memory_gbps`` is
the HBM/GDDR bandwidth, ``host_link_gbps`` one direction of the host link (PCIe x16: Gen3 16,
Gen4 32, Gen5 64 GB/s, half the bidirectional figure datasheets print).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

SOURCE = "datasheet"

# Host link per direction, GB/s (PCIe x16 raw rate).
_PCIE = {3: 16.0, 4: 32.0, 5: 64.0}


@dataclass(frozen=True)
class DevicePeaks:
    """Datasheet peaks of one GPU model (see the module docstring for units)."""

    model: str
    pattern: str
    memory_gbps: float
    host_link_gbps: float
    tflops: dict = field(default_factory=dict)
    source: str = SOURCE

    def peak_tflops(self, precision: str):
        """The peak for a precision, or None when the datasheet gives none.

        >>> device_peaks("NVIDIA H200").peak_tflops("bf16")
        989.4
        """
        return self.tflops.get(precision)


def _p(model, pattern, mem, pcie, **tflops):
    return DevicePeaks(model=model, pattern=pattern, memory_gbps=float(mem),
                       host_link_gbps=_PCIE[pcie], tflops=tflops)


_H100_SXM = dict(fp64=34, fp64_tc=67, fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9,
                 int8=1978.9)
_NVL = dict(fp64=30, fp64_tc=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5, int8=1670.5)
_A100 = dict(fp64=9.7, fp64_tc=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624)
_MI300 = dict(fp64=81.7, fp64_tc=163.4, fp32=163.4, tf32=653.7, bf16=1307.4, fp16=1307.4,
              fp8=2614.9, int8=2614.9)

# Most specific pattern first: the first match wins. Patterns are matched against the device
# name the trace records (e.g. "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X").
PEAKS: tuple[DevicePeaks, ...] = (
    _p("V100 PCIe", r"v100.*pcie", 900, 3, fp64=7, fp32=14, fp16=112),
    _p("V100 SXM2", r"\bv100", 900, 3, fp64=7.8, fp32=15.7, fp16=125),
    _p("T4", r"\bt4\b", 320, 3, fp32=8.1, fp16=65, int8=130),
    _p("A100 80GB SXM", r"a100.*sxm.*80|a100.*80.*sxm", 2039, 4, **_A100),
    _p("A100 80GB PCIe", r"a100.*80", 1935, 4, **_A100),
    _p("A100 40GB", r"\ba100", 1555, 4, **_A100),
    _p("A10", r"\ba10\b", 600, 4, fp32=31.2, tf32=62.5, bf16=125, fp16=125, int8=250),
    _p("L4", r"\bl4\b", 300, 4, fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5, int8=242.5),
    _p("L40S", r"\bl40s\b", 864, 4, fp32=91.6, tf32=183, bf16=362.05, fp16=362.05, fp8=733, int8=733),
    _p("L40", r"\bl40\b", 864, 4, fp32=90.5, tf32=90.5, bf16=181, fp16=181, fp8=362, int8=362),
    _p("H100 NVL", r"\bh100\b.*nvl", 3900, 5, **_NVL),
    _p("H100 PCIe", r"\bh100\b.*pcie", 2000, 5, fp64=26, fp64_tc=51, fp32=51, tf32=378, bf16=756,
       fp16=756, fp8=1513, int8=1513),
    _p("H100 SXM", r"\bh100\b", 3350, 5, **_H100_SXM),
    _p("H200 NVL", r"\bh200\b.*nvl", 4800, 5, **_NVL),
    _p("H200 SXM", r"\bh200\b", 4800, 5, **_H100_SXM),
    _p("GB200", r"\bgb200\b", 8000, 5, fp64=45, fp64_tc=45, fp32=80, tf32=1250, bf16=2500,
       fp16=2500, fp8=5000, int8=5000, fp4=10000),
    _p("B200", r"\bb200\b", 8000, 5, fp64=37, fp64_tc=37, fp32=75, tf32=1125, bf16=2250, fp16=2250,
       fp8=4500, int8=4500, fp4=9000),
    _p("RTX 3090", r"rtx 3090", 936, 4, fp32=35.6, tf32=35.6, bf16=71, fp16=71),
    _p("RTX 4090", r"rtx 4090", 1008, 4, fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3),
    _p("RTX 5090", r"rtx 5090", 1792, 5, fp32=104.8, tf32=104.8, bf16=209.5, fp16=209.5),
    _p("MI250X", r"mi250x?", 3276.8, 4, fp64=47.9, fp64_tc=95.7, fp32=47.9, bf16=383, fp16=383, int8=383),
    _p("MI325X", r"mi325x", 6000, 5, **_MI300),
    _p("MI300X", r"mi300x", 5300, 5, **_MI300),
)


def device_peaks(name) -> DevicePeaks | None:
    """The datasheet peaks of a device, by the name the trace records; None if unknown.

    >>> device_peaks("NVIDIA H200").memory_gbps
    4800.0
    >>> device_peaks("NVIDIA A100-SXM4-80GB").model
    'A100 80GB SXM'
    """
    if not isinstance(name, str) or not name:
        return None
    n = name.lower()
    for p in PEAKS:
        if re.search(p.pattern, n):
            return p
    return None


def peaks_table():
    """All known devices as a DataFrame, one row per model, marked as datasheet values.

    >>> float(peaks_table().set_index("model").loc["H200 SXM", "memory_gbps"])
    4800.0
    """
    import pandas as pd

    precisions = ["fp64", "fp64_tc", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
    return pd.DataFrame([{"model": p.model, "memory_gbps": p.memory_gbps,
                          "host_link_gbps": p.host_link_gbps,
                          **{f"{k}_tflops": p.tflops.get(k) for k in precisions}, "source": p.source}
                         for p in PEAKS])


# GPU-to-GPU link within one board, GB/s in one direction (half the bidirectional NVLink figure
# of the datasheet): what NCCL's bus bandwidth between ranks of one host is measured against.
# Models whose boards come with or without NVLink (PCIe cards, A100 40GB) are left out.
PEER_LINK_GBPS = {
    "V100 SXM2": 150.0, "A100 80GB SXM": 300.0, "H100 NVL": 300.0, "H100 SXM": 450.0,
    "H200 NVL": 450.0, "H200 SXM": 450.0, "B200": 900.0, "GB200": 900.0,
}


def peer_link_gbps(name) -> float | None:
    """The datasheet NVLink rate (GB/s, one direction) between GPUs of one board, or None.

    >>> peer_link_gbps("NVIDIA H200"), peer_link_gbps("NVIDIA L4")
    (450.0, None)
    """
    p = device_peaks(name)
    return PEER_LINK_GBPS.get(p.model) if p is not None else None


def attainable(intensity, peak_flops, peak_bandwidth, per: float = 1.0, words: bool = True):
    """The roofline model, the one place it is computed (op shapes in :mod:`kernelscope.analysis.roofline`, Nsight Compute's counters
    in :mod:`kernelscope.analysis.ncu_kernels`, both through here): (attainable FLOP/s, bound) at each arithmetic
    intensity, ``min(peak, intensity x bandwidth / per)`` and which roof that is. Units are the
    caller's: ``per`` is how many of the bandwidth's units make one of the peak's (1 for FLOP/s
    and bytes/s; 1e3 for TFLOP/s against GB/s). An unknown intensity (no bytes counted) is held
    to the compute roof. ``words=False``: the bound as a boolean array, True where it is the
    memory roof (no text per point: a large trace's roofline has a million).

    >>> attainable(np.array([10.0, 1000.0, np.nan]), 989.0, 4800.0, per=1e3)
    (array([ 48., 989., 989.]), array(['memory', 'compute', 'compute'], dtype='<U7'))
    >>> attainable(np.array([10.0, 1000.0, np.nan]), 989.0, 4800.0, per=1e3, words=False)[1]
    array([ True, False, False])
    """
    intensity = np.asarray(intensity, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        memory = intensity * peak_bandwidth / per
        on_memory = memory < peak_flops
    return np.fmin(peak_flops, memory), (np.where(on_memory, "memory", "compute") if words else on_memory)
