"""Hardware counters sampled over time (CUPTI PM sampling): the vocabulary and the samples table.

A PM sample is one interval of GPU time (20 us by default) with one value per configured metric,
GPU-wide: ``sm__cycles_active.avg`` is the mean over all SMs, a ``pct_of_peak`` metric a percent
of the chip's sustained peak. Every source of samples (kernelscope's live sampling through
``cupti-python``, torch's own counter tracks in a Chrome trace, a saved report) lands in one
table, ``Trace.counters`` / ``report.metrics``: one row per sample with ``device_index``,
``start_us``/``duration_us`` on the trace's clock, our derived columns (:data:`DERIVED`) and each
raw metric under its CUPTI name.

>>> derived_columns({"sm__cycles_active.avg": [50.0], "sm__cycles_elapsed.avg": [100.0]}, [1.0])["sm_active_pct"]
[50.0]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SOURCE_LIVE = "CUPTI PM sampling (kernelscope)"
SOURCE_TORCH = "CUPTI PM sampling (torch.profiler counter tracks)"

# Metrics kernelscope samples by default: single-pass together on GH100 (checked on an H200,
# tests/data/counters/pm_probe.json), and enough for every derived column below.
DEFAULT_METRICS = (
    "sm__cycles_active.avg", "sm__cycles_elapsed.avg",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum",
)


@dataclass(frozen=True)
class Derived:
    """One column we derive from raw metrics: its label, unit and what it means."""

    column: str
    label: str
    unit: str
    meaning: str
    color: str
    short: str      # a table column's heading


# Columns of the samples table (and, time-weighted, of each kernel) in display order.
DERIVED = (
    Derived("sm_active_pct", "SM active", "%",
            "share of SM cycles with at least one warp resident, mean over all SMs "
            "(sm__cycles_active / sm__cycles_elapsed)", "#4e79a7", "SM active"),
    Derived("tensor_pct", "tensor pipe", "%",
            "tensor-core pipe busy, % of its sustained peak "
            "(sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed)", "#e15759", "tensor"),
    Derived("dram_pct", "DRAM throughput", "%",
            "DRAM throughput, % of its sustained peak (dram__throughput.avg.pct_of_peak_sustained_elapsed)",
            "#59a14f", "DRAM"),
    Derived("dram_gbps", "DRAM bandwidth", "GB/s",
            "bytes read and written at DRAM per second (dram__bytes.sum over the sample)", "#76b7b2", "DRAM GB/s"),
)
DERIVED_COLUMNS = tuple(d.column for d in DERIVED)

# torch's Chrome-trace counter tracks name a PM metric by a friendly label (torch 2.14,
# torch/profiler/_cupti/monitor_trace.py ``_PM_METRIC_LABELS``): label base -> metric base. A
# "(%)" suffix marks a pct_of_peak rollup; the label drops the rest of the rollup, which torch's
# metrics spell ".avg.pct_of_peak_sustained_elapsed". Unmapped metrics keep their raw name.
TORCH_LABELS = {
    "SM Active": "sm__cycles_active", "DRAM BW": "gpu__dram_throughput", "HBM BW": "dram__throughput",
    "HBM Read": "dram__read_throughput", "HBM Write": "dram__write_throughput",
    "NVLink RX": "nvlrx__bytes", "NVLink TX": "nvltx__bytes", "PCIe": "pcie__throughput",
}
# torch's process row for one device's GPU counters: "GPU N Counters".
TORCH_COUNTER_PID = "GPU {} Counters"


def torch_label_metric(label: str) -> str | None:
    """The CUPTI metric behind one of torch's counter-track names, or None for a track that is not
    a PM metric (power, clocks, temperature, torch's per-kernel "Cycles").

    >>> torch_label_metric("HBM BW (%)"), torch_label_metric("SM Active")
    ('dram__throughput.avg.pct_of_peak_sustained_elapsed', 'sm__cycles_active.avg')
    >>> torch_label_metric("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed")
    'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed'
    >>> torch_label_metric("Power (W)") is None
    True
    """
    label = str(label).strip()
    pct = label.endswith(" (%)")
    base = TORCH_LABELS.get(label[:-4] if pct else label)
    if base is not None:
        return f"{base}.avg.pct_of_peak_sustained_elapsed" if pct else f"{base}.avg"
    # A raw CUPTI metric name: unit__counter[.rollup...]
    return label if "__" in label and " " not in label else None


def _col(raw: dict, name: str):
    v = raw.get(name)
    return None if v is None else np.asarray(v, dtype=np.float64)


def derived_columns(raw: dict, duration_us) -> dict:
    """Our columns from raw metric columns (each an array, one value per sample); a column whose
    metrics were not sampled is all NaN. ``duration_us`` is each sample's length.

    >>> d = derived_columns({"dram__bytes.sum": [4.8e6]}, [1.0])
    >>> round(d["dram_gbps"][0]), bool(np.isnan(d["tensor_pct"][0]))
    (4800, True)
    """
    dur = np.asarray(duration_us, dtype=np.float64)
    n = len(dur)
    nan = np.full(n, np.nan)
    out = {}
    pct = _col(raw, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed")
    act, ela = _col(raw, "sm__cycles_active.avg"), _col(raw, "sm__cycles_elapsed.avg")
    if pct is None and act is not None and ela is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = np.where(ela > 0, 100.0 * act / ela, np.nan)
    out["sm_active_pct"] = (pct if pct is not None else nan).tolist()
    t = _col(raw, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed")
    if t is None:
        t = _col(raw, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed")
    out["tensor_pct"] = (t if t is not None else nan).tolist()
    d = _col(raw, "dram__throughput.avg.pct_of_peak_sustained_elapsed")
    if d is None:
        d = _col(raw, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
    out["dram_pct"] = (d if d is not None else nan).tolist()
    b = _col(raw, "dram__bytes.sum")
    if b is None:
        r, w = _col(raw, "dram__bytes_read.sum"), _col(raw, "dram__bytes_write.sum")
        b = r + w if r is not None and w is not None else None
    with np.errstate(divide="ignore", invalid="ignore"):
        # bytes per us / 1e3 = GB/s
        out["dram_gbps"] = (np.where(dur > 0, b / (dur * 1e3), np.nan) if b is not None else nan).tolist()
    return out


def samples_table(start_us, end_us, values, metrics, device_index=0) -> dict:
    """Column lists of the counters table from aligned samples (``values``: samples x metrics).

    Samples that cannot be placed (non-finite or non-increasing times, as CUPTI's first sample
    with start timestamp 0 becomes after alignment) must be dropped by the caller; this keeps
    every row it is given, sorted by start.

    >>> t = samples_table([0.0, 20.0], [20.0, 40.0], [[10.0, 50.0], [0.0, 0.0]], ["x", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"])
    >>> t["sm_active_pct"], t["x"]
    ([50.0, 0.0], [10.0, 0.0])
    """
    s = np.asarray(start_us, dtype=np.float64)
    e = np.asarray(end_us, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64).reshape(len(s), len(metrics))
    order = np.argsort(s, kind="stable")
    s, e, v = s[order], e[order], v[order]
    dur = e - s
    raw = {m: v[:, j] for j, m in enumerate(metrics)}
    out = {"device_index": [int(device_index)] * len(s), "start_us": s.tolist(), "duration_us": dur.tolist()}
    out.update(derived_columns(raw, dur))
    for m in metrics:
        if m not in out:
            out[m] = raw[m].tolist()
    return out


def clock_map(calibration):
    """``(slope, t0_ns, c0)`` mapping CUPTI timestamps to unix ns: ``t0_ns + (c - c0) * slope``.

    ``calibration`` is two or more ``(time.time_ns(), cuptiGetTimestamp())`` pairs read back to
    back (at the start and at the stop of sampling). While torch.profiler runs, Kineto installs its
    own timestamp callback and CUPTI's clock counts TSC ticks (about 2.1 per ns on the H200
    measured), not ns; so the slope is fitted, never assumed. None when the pairs do not define
    an increasing clock.

    >>> clock_map([(1_000, 5_000), (3_000, 9_000)])
    (0.5, 1000, 5000)
    """
    pairs = [(int(t), int(c)) for t, c, *_ in calibration or []]
    if len(pairs) < 2:
        return None
    (t0, c0), (t1, c1) = pairs[0], pairs[-1]
    if c1 <= c0 or t1 <= t0:
        return None
    slope = (t1 - t0) / (c1 - c0)
    if not math.isfinite(slope) or not 1e-3 < slope < 1e3:
        return None
    return slope, t0, c0


def align(timestamps, clock, time_origin_ns) -> np.ndarray:
    """CUPTI timestamps as us on the trace's clock (``time_origin_ns`` is its 0; unix ns).

    >>> align([5_000, 7_000], (0.5, 1_000, 5_000), 0).tolist()
    [1.0, 2.0]
    """
    slope, t0, c0 = clock
    c = np.asarray(timestamps, dtype=np.float64)
    # Offsets first: the raw values are ~1e11..1e18 and would lose ns in float64 otherwise.
    return ((float(t0 - int(time_origin_ns)) + (c - float(c0)) * slope) / 1000.0)


def placeable(start_ts, end_ts) -> np.ndarray:
    """Which raw samples can be placed: start > 0 (CUPTI's first sample starts at 0), end > start,
    and within uint64 -> int64 range (torch drops garbage timestamps the same way).

    >>> placeable(np.array([0, 10, 30], np.uint64), np.array([10, 30, 20], np.uint64)).tolist()
    [False, True, False]
    """
    s = np.asarray(start_ts, dtype=np.uint64)
    e = np.asarray(end_ts, dtype=np.uint64)
    top = np.uint64(np.iinfo(np.int64).max)
    return (s > 0) & (e > s) & (e <= top)


def read_counter_tracks(trace, events, origin_us: float) -> None:
    """Fill ``trace.counters`` from torch's GPU counter tracks (Chrome ``"ph": "C"`` events in the
    ``"GPU N Counters"`` process rows that torch 2.14's CUPTI-monitor profiler writes).

    torch writes one event per sample and metric at the sample's start, so samples of one device
    share timestamps; a sample lasts until the next one starts (the last one as long as the
    median). Tracks that are not PM metrics (power, clocks, temperature, torch's per-kernel
    "Cycles") are left out and named in the notes. ``origin_us`` is the trace's time 0 in the
    file's microseconds.
    """
    import pandas as pd

    from kernelscope.trace.model import COUNTER_COLUMNS, frame

    rows, skipped = [], set()
    for e in events:
        pid = e.pid if isinstance(e.pid, str) else ""
        if not (pid.startswith("GPU ") and pid.endswith(" Counters")):
            continue
        try:
            dev = int(pid[4:-9])
        except ValueError:
            continue
        v = e.args.counter if e.args is not None else None
        if v is None or e.ts is None or not math.isfinite(e.ts) or not math.isfinite(v):
            continue
        metric = torch_label_metric(e.name)
        if metric is None:
            skipped.add(e.name)
            continue
        rows.append((dev, float(e.ts) - origin_us, metric, float(v)))
    notes = trace.meta.setdefault("notes", [])
    if skipped:
        notes.append("GPU counter tracks that are not PM metrics were not read: " + ", ".join(sorted(skipped)[:8]))
    if not rows:
        return
    long = pd.DataFrame(rows, columns=["device", "start_us", "metric", "value"])
    parts = []
    for dev, g in long.groupby("device", sort=True):
        wide = g.pivot_table(index="start_us", columns="metric", values="value", aggfunc="mean").sort_index()
        s = wide.index.to_numpy(dtype=np.float64)
        step = np.diff(s)
        last = float(np.median(step)) if len(step) else float("nan")
        e = np.append(s[1:], s[-1] + last)
        keep = np.isfinite(e) & (e > s)
        metrics = [str(m) for m in wide.columns]
        parts.append(samples_table(s[keep], e[keep], wide.to_numpy(dtype=np.float64)[keep], metrics, dev))
    cols = {c: [] for p in parts for c in p}
    for p in parts:
        n = len(p["start_us"])
        for c in cols:
            cols[c].extend(p.get(c, [float("nan")] * n))
    trace.counters = frame(cols, COUNTER_COLUMNS)
    steps = np.diff(np.asarray(parts[0]["start_us"]))
    trace.meta["counters"] = {
        "source": SOURCE_TORCH, "metrics": sorted({r[2] for r in rows}), "samples": int(len(trace.counters)),
        "interval_us": float(np.median(steps)) if len(steps) else None,
        "note": "torch names a PM metric by a label without its rollup; '(%)' tracks are read as "
                ".avg.pct_of_peak_sustained_elapsed.",
    }


def attach_samples(trace, start_ts, end_ts, values, metrics, calibration, *, device_index=0,
                   info=None) -> list:
    """Put raw PM samples (CUPTI timestamps, ``values`` samples x metrics) into ``trace.counters``
    on the trace's clock, through the calibration pairs (see :func:`clock_map`). Returns notes on
    what could not be placed; ``trace.meta["counters"]`` gets ``info`` plus what was kept.

    >>> attach_samples(trace, d["start_ns"], d["end_ns"], d["values"], info["metrics"],  # doctest: +SKIP
    ...                info["calibration"])
    []
    """
    from kernelscope.trace.model import COUNTER_COLUMNS, frame

    notes = []
    meta = dict(info or {})
    meta.setdefault("source", SOURCE_LIVE)
    meta["metrics"] = list(metrics)
    meta["calibration"] = [list(map(int, p[:2])) for p in calibration or []]
    clock = clock_map(calibration)
    s = np.asarray(start_ts, dtype=np.uint64)
    e = np.asarray(end_ts, dtype=np.uint64)
    v = np.asarray(values, dtype=np.float64).reshape(len(s), len(metrics))
    if clock is None:
        notes.append("PM samples were dropped: the clock calibration pairs do not define an increasing "
                     "clock, so the samples cannot be placed on the trace's time line")
        meta["samples"] = 0
        trace.meta["counters"] = meta
        return notes
    ok = placeable(s, e)
    # CUPTI's first sample always starts at 0: dropping it is routine, anything more is news.
    bad = int((~ok).sum()) - int(len(s) > 0 and int(s[0]) == 0)
    if bad > 0:
        notes.append(f"dropped {bad} PM sample(s) with an unset or invalid timestamp")
    origin = int(trace.meta.get("time_origin_ns") or 0)
    su, eu = align(s[ok], clock, origin), align(e[ok], clock, origin)
    span = trace.meta.get("span_us")
    if span and len(su):
        # Samples far outside the recorded region mean the clocks did not line up.
        slack = max(1000.0, 0.05 * float(span))
        inside = (eu > -slack) & (su < float(span) + slack)
        if not inside.any():
            notes.append("PM samples were dropped: none falls inside the recorded region after aligning "
                         "the clocks (calibration failed)")
            meta["samples"] = 0
            trace.meta["counters"] = meta
            return notes
    trace.counters = frame(samples_table(su, eu, v[ok], list(metrics), device_index), COUNTER_COLUMNS)
    meta["samples"] = int(len(trace.counters))
    meta["clock_ticks_per_ns"] = 1.0 / clock[0]
    if len(su) > 1:
        meta.setdefault("interval_us", float(np.median(eu - su)))
    trace.meta["counters"] = meta
    return notes
