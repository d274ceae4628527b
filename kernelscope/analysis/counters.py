"""Hardware counters per kernel: PM samples time-weighted over each kernel's interval.

A PM sample is GPU-wide and covers a fixed interval, so a kernel's value is the mean of the
samples overlapping it, each weighted by how much of the kernel it covers. Kernels that run
beside others (several streams) share the samples; kernels shorter than a sample are mixed with
whatever ran next to them in that sample: ``counter_samples`` says how many samples a value
rests on.

>>> s = pd.DataFrame({"device_index": [0, 0], "start_us": [0.0, 10.0], "duration_us": [10.0, 10.0],
...                   "tensor_pct": [90.0, 10.0]})
>>> interval_means(s, [0], [5.0], [15.0], ["tensor_pct"])["tensor_pct"].tolist()
[50.0]
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.trace.counters import DERIVED_COLUMNS

# Columns added to kernels and copies when the report holds samples.
PER_KERNEL = DERIVED_COLUMNS + ("counter_samples",)


def interval_means(samples: pd.DataFrame, device_index, start_us, end_us, columns) -> pd.DataFrame:
    """Time-weighted mean of each sample column over each interval ``[start, end]`` of a device,
    plus ``counter_samples`` (samples overlapping it) and ``counter_coverage`` (share of the
    interval that samples cover). Intervals no sample covers get NaN.

    Samples of a device must not overlap (CUPTI's do not: each starts where the last ended).
    Cumulative integrals make it one ``searchsorted`` per interval end, for 100k kernels too.

    >>> s = pd.DataFrame({"device_index": [0], "start_us": [0.0], "duration_us": [20.0], "dram_pct": [40.0]})
    >>> interval_means(s, [0, 0], [5.0, 30.0], [10.0, 40.0], ["dram_pct"]).round(2).to_dict("list")
    {'dram_pct': [40.0, nan], 'counter_samples': [1, 0], 'counter_coverage': [1.0, 0.0]}
    """
    dev = np.asarray(pd.array(device_index, dtype="Int64").to_numpy(dtype="float64", na_value=np.nan))
    s = np.asarray(start_us, dtype=np.float64)
    e = np.asarray(end_us, dtype=np.float64)
    n = len(s)
    out = {c: np.full(n, np.nan) for c in columns}
    count = np.zeros(n, dtype=np.int64)
    cover = np.zeros(n)
    if not len(samples) or not n:
        return pd.DataFrame({**out, "counter_samples": count, "counter_coverage": cover})
    sdev = samples["device_index"].astype("float64").to_numpy(na_value=np.nan)
    for d in np.unique(sdev[np.isfinite(sdev)]):
        g = samples[sdev == d].sort_values("start_us", kind="stable")
        a = g["start_us"].to_numpy(dtype=np.float64)
        b = a + g["duration_us"].to_numpy(dtype=np.float64)
        rows = np.flatnonzero((dev == d) & np.isfinite(s) & np.isfinite(e))
        if not len(rows):
            continue
        qs, qe = s[rows], np.maximum(e[rows], s[rows])
        width = b - a

        def covered(t, w, a=a, b=b, width=width):
            # integral of w over samples up to time t (w is per-sample weight per us)
            j = np.searchsorted(a, t, side="right") - 1
            full = np.concatenate([[0.0], np.cumsum(w * width)])
            jj = np.clip(j, 0, len(a) - 1)
            part = np.where(j >= 0, np.clip(np.minimum(t, b[jj]) - a[jj], 0.0, None) * w[jj], 0.0)
            return full[np.clip(j, 0, None)] * (j >= 0) + part

        ones = np.ones(len(a))
        span = covered(qe, ones) - covered(qs, ones)
        with np.errstate(invalid="ignore", divide="ignore"):
            cover[rows] = np.where(qe > qs, span / (qe - qs), (span > 0).astype(float))
        # samples overlapping [qs, qe]: those starting before qe and ending after qs
        first = np.searchsorted(b, qs, side="right")
        last = np.searchsorted(a, qe, side="left")
        count[rows] = np.maximum(last - first, 0)
        # a zero-length interval takes the value of the sample it lies in
        point = qe <= qs
        jp = np.clip(np.searchsorted(a, qs, side="right") - 1, 0, len(a) - 1)
        inside = point & (qs >= a[jp]) & (qs < b[jp])
        count[rows[inside]] = np.maximum(count[rows[inside]], 1)
        for c in columns:
            if c not in g.columns:
                continue
            v = g[c].to_numpy(dtype=np.float64)
            ok = np.isfinite(v)
            w_num = covered(qe, np.where(ok, v, 0.0)) - covered(qs, np.where(ok, v, 0.0))
            w_den = covered(qe, ok.astype(float)) - covered(qs, ok.astype(float))
            with np.errstate(invalid="ignore", divide="ignore"):
                m = np.where(w_den > 0, w_num / w_den, np.nan)
            m = np.where(inside & ok[jp], v[jp], m)
            out[c][rows] = m
    return pd.DataFrame({**out, "counter_samples": count, "counter_coverage": cover})


def annotate_counters(table: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """Kernels (or copies) with the per-kernel counter columns added: :data:`PER_KERNEL`, each a
    time-weighted mean of the samples over the row's interval. Unchanged without samples.

    >>> annotate_counters(live.kernels, live.metrics)[["short_name", "tensor_pct"]].head(3)
                       short_name  tensor_pct
    0  cuBLAS GEMM 320x128 (sm90)     93.3777
    1                 spin_kernel      0.2807
    2   cuBLAS GEMM 64x256 (sm90)     28.5616
    """
    if counters is None or not len(counters) or not len(table):
        return table
    cols = [c for c in DERIVED_COLUMNS if c in counters.columns]
    s = table["start_us"].to_numpy(dtype=np.float64)
    m = interval_means(counters, table["device_index"], s, s + table["duration_us"].to_numpy(dtype=np.float64), cols)
    out = table.copy()
    for c in cols:
        out[c] = m[c].to_numpy()
    out["counter_samples"] = m["counter_samples"].to_numpy()
    return out


def kernel_counters(kernels: pd.DataFrame, by: str = "name") -> pd.DataFrame:
    """Per kernel name: launches, total time and each counter column time-weighted over all its
    launches (launch time as weight), plus the median ``counter_samples`` per launch.

    >>> kernel_counters(live.kernels)[["short_name", "launches", "tensor_pct"]].head(3)
                       short_name  launches  tensor_pct
    0  cuBLAS GEMM 320x128 (sm90)         1     93.3777
    1                 spin_kernel         4      0.1853
    2   cuBLAS GEMM 64x256 (sm90)         4     28.0107
    """
    cols = [c for c in DERIVED_COLUMNS if c in kernels.columns]
    if not cols or not len(kernels):
        return pd.DataFrame(columns=[by, "launches", "total_us", *cols, "counter_samples"])
    k = kernels.assign(_w=kernels["duration_us"].astype(float).clip(lower=0))
    rows = []
    for name, g in k.groupby(by, sort=False, dropna=False):
        r = {by: name, "launches": len(g), "total_us": float(g["duration_us"].sum())}
        for c in cols:
            v = g[c].to_numpy(dtype=float)
            w = g["_w"].to_numpy(dtype=float) * np.isfinite(v)
            r[c] = float(np.nansum(v * w) / w.sum()) if w.sum() > 0 else float("nan")
        r["counter_samples"] = float(g["counter_samples"].median()) if "counter_samples" in g else float("nan")
        rows.append(r)
    out = pd.DataFrame(rows).sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)
    for c in ("short_name", "backend", "tensor_cores"):
        if c in kernels.columns and c != by:
            out.insert(1, c, out[by].map(kernels.drop_duplicates(by).set_index(by)[c]))
    return out


def region_means(counters: pd.DataFrame) -> dict:
    """GPU-wide time-weighted means of each counter column over all samples, per device.

    >>> round(region_means(live.metrics)[0]["sm_active_pct"], 1)
    11.5
    """
    out = {}
    if counters is None or not len(counters):
        return out
    for d, g in counters.groupby("device_index", sort=True):
        w = g["duration_us"].to_numpy(dtype=float)
        r: dict[str, float | None] = {"samples": int(len(g)), "covered_us": float(w.sum())}
        for c in DERIVED_COLUMNS:
            if c in g.columns:
                v = g[c].to_numpy(dtype=float)
                ok = np.isfinite(v)
                r[c] = float((v[ok] * w[ok]).sum() / w[ok].sum()) if w[ok].sum() > 0 else None
        if "sm__cycles_elapsed.avg" in g.columns:
            cyc = g["sm__cycles_elapsed.avg"].to_numpy(dtype=float)
            ok = np.isfinite(cyc) & (w > 0)
            # cycles per us = MHz: what the SM clock ran at while sampling (sampling may lock it)
            r["sm_clock_mhz"] = float(np.median(cyc[ok] / w[ok])) if ok.any() else None
        out[int(d)] = r
    return out
