"""Backend attribution (issue 4 fills this in)."""
from __future__ import annotations

import pandas as pd


def annotate_backends(kernels: pd.DataFrame, trace) -> pd.DataFrame:
    k = kernels
    k["short_name"] = k["name"]
    k["backend"] = "other"
    k["tensor_cores"] = pd.Series([pd.NA] * len(k), dtype="boolean")
    return k


def backend_breakdown(report) -> pd.DataFrame:
    k = report.kernels
    g = k.groupby(["device_type", "backend"], dropna=False)["duration_us"]
    out = pd.DataFrame({"launches": g.size(), "gpu_time_us": g.sum()}).reset_index()
    total = out["gpu_time_us"].sum()
    out["share"] = out["gpu_time_us"] / total if total else 0.0
    return out.rename(columns={"device_type": "device"}).sort_values("gpu_time_us", ascending=False)
