"""Per-kernel statistics over launches: the table behind ``Report.summary()``."""
from __future__ import annotations

import pandas as pd

from kernelscope.analysis.distinct import factorize


def kernel_summary(kernels: pd.DataFrame, by: str = "name") -> pd.DataFrame:
    """Per-kernel statistics over launches (see :meth:`Report.summary`): launches, total, mean,
    median, min, max and standard deviation of the durations (us), and ``share`` of all kernel time.

    >>> int(kernel_summary(rep.kernels).iloc[0]["launches"])
    4
    """
    cols = ["launches", "total_us", "mean_us", "median_us", "min_us", "max_us", "std_us", "share"]
    keep = [c for c in ("short_name", "backend") if c in kernels.columns and c != by]
    if not len(kernels):
        return pd.DataFrame(columns=[by, *keep, *cols])
    # Grouped by the codes of ``by`` (kernel names are long: coded by identity first, not hashed
    # row by row as groupby would), in order of first appearance as groupby(sort=False) orders.
    codes, uniq = factorize(kernels[by]) if kernels[by].dtype == object else (None, None)
    coded = codes is not None and not (codes < 0).any()    # else (a missing value): as groupby makes it
    g = kernels.groupby(codes, sort=False) if coded else kernels.groupby(by, sort=False, dropna=False)
    d = g["duration_us"]
    out = pd.DataFrame({
        "launches": d.size(), "total_us": d.sum(), "mean_us": d.mean(), "median_us": d.median(),
        "min_us": d.min(), "max_us": d.max(),
        # Sample standard deviation, as Nsight Systems' kernel summary (0 for one launch).
        "std_us": d.std(ddof=1).fillna(0.0),
    })
    for c in keep:
        out[c] = g[c].first()
    if coded:
        out.index = pd.Index(uniq, name=by, dtype=object)
    total = kernels["duration_us"].sum()
    out["share"] = out["total_us"] / total if total > 0 else 0.0
    out = out.reset_index().sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)
    return out[[by, *keep, *cols]]
