"""The copies' rules: copies from or to pageable host memory (against the host link's rate), and
host copies serialized with compute on the kernels' own stream.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import by_distinct
from kernelscope.analysis.findings.base import (
    MAX_EVIDENCE_ROWS,
    Finding,
    range_link,
    safe_ratio,
    severity_for,
    span_link,
)
from kernelscope.analysis.intervals import Spans, covered_length, merge_intervals, union_length
from kernelscope.analysis.peaks import device_peaks
from kernelscope.units import fmt_bytes, fmt_us

# Host link rate assumed for a device not in the datasheet table (PCIe Gen4 x16, one direction).
FALLBACK_HOST_LINK_GBPS = 32.0
# Host<->device copy kinds (device-to-device copies never touch host memory).
_HOST_COPY_KINDS = ("HtoD", "DtoH")


def copy_findings(report, tl) -> list:
    """Pageable host memory, achieved bandwidth against the host link, copies serialized with
    compute on the same stream.

    >>> [f.kind for f in copy_findings(rep, rep.timeline)]
    ['pageable_copies']
    """
    c = report.copies
    if not len(c):
        return []
    c = c[c["kind"] == "memcpy"]
    host = c[c["copy_kind"].isin(_HOST_COPY_KINDS) & c["start_us"].notna() & c["duration_us"].notna()]
    if not len(host):
        return []
    out = []
    window = tl.window.get("active_us")
    pageable = host[(host["src_memory"] == "Pageable") | (host["dst_memory"] == "Pageable")]
    if len(pageable):
        pinned = host[(host["src_memory"] == "Pinned") | (host["dst_memory"] == "Pinned")]
        out.append(_pageable_finding(report, pageable, pinned, window))
    # A pageable copy is synchronous whatever its stream: pinning it comes first (its own item).
    pinned_or_device = host[(host["src_memory"] != "Pageable") & (host["dst_memory"] != "Pageable")]
    serialized = _serialized_finding(tl, pinned_or_device, window) if len(pinned_or_device) else None
    if serialized is not None:
        out.append(serialized)
    return out


def _pageable_finding(report, pageable, pinned, window) -> Finding:
    """``pageable_copies``: what the copies from or to pageable memory took, against what they
    would take at the host link's rate (and what pinned copies of this run reached)."""
    names = dict(zip(report.devices["index"].tolist(), report.devices["name"].tolist()))
    peaks = {i: device_peaks(n) for i, n in names.items()}

    def link(i):
        p = peaks.get(i)
        return p.host_link_gbps if p else FALLBACK_HOST_LINK_GBPS

    b = pageable["bytes"].astype(float).fillna(0).to_numpy()
    d = np.nan_to_num(pageable["duration_us"].to_numpy(float))
    lk = by_distinct(pageable["device_index"], link, float, FALLBACK_HOST_LINK_GBPS)  # once per device
    ideal = b / (lk * 1e3)  # us at the link's datasheet rate (GB/s = 1e3 bytes/us)
    cost = float(np.maximum(0.0, d - ideal).sum())
    gbps = safe_ratio(b.sum(), np.nansum(d) * 1e3)
    pin_gbps = (safe_ratio(pinned["bytes"].astype(float).sum(), pinned["duration_us"].sum() * 1e3)
                if len(pinned) else None)
    pin_gbps = pin_gbps if pin_gbps == pin_gbps else None
    host_blocked = float(pageable["launch_duration_us"].fillna(0).sum())
    dev_i = pageable["device_index"].iloc[0]
    p = peaks.get(dev_i)
    by_kind = [{"copy": k, "count": int(len(g)), "bytes": int(g["bytes"].fillna(0).sum()),
                "time_us": float(g["duration_us"].sum()),
                "gbps": safe_ratio(g["bytes"].fillna(0).sum(), g["duration_us"].sum() * 1e3)}
               for k, g in pageable.groupby("name")]
    title = (f"{len(pageable)} cop{'ies' if len(pageable) != 1 else 'y'} used pageable host memory: "
             f"{fmt_bytes(b.sum())} at {gbps:.1f} GB/s "
             f"({gbps / link(dev_i):.0%} of the {link(dev_i):.0f} GB/s host link)")
    kinds = ", ".join(f"{x['count']}x {x['copy']}" for x in by_kind)
    detail = (f"Pageable copies ({kinds}) "
              f"took {fmt_us(d.sum())} and held the host {fmt_us(host_blocked)}: the driver "
              "stages them through a pinned buffer and the call returns only when it is done. "
              + (f"Pinned copies in this run reached {pin_gbps:.1f} GB/s. " if pin_gbps else "")
              + f"At the link's rate ({link(dev_i):.0f} GB/s, "
              + (f"{p.source} value for {p.model}" if p else "assumed PCIe Gen4 x16") + ") they "
              f"would take {fmt_us(ideal.sum())}. Fix: allocate host tensors in pinned memory "
              "(tensor.pin_memory(), DataLoader(pin_memory=True)) and copy with "
              ".to(\"cuda\", non_blocking=True), on a side stream where it can overlap compute.")
    evidence = {"copies": by_kind, "bytes": int(b.sum()), "time_us": float(d.sum()),
                "gbps": float(gbps), "pinned_gbps": pin_gbps, "host_link_gbps": float(link(dev_i)),
                "host_link_source": p.source if p else "assumed", "host_blocked_us": host_blocked,
                "time_at_link_rate_us": float(ideal.sum())}
    cause = (f"Copies from or to pageable host memory ran at {gbps:.1f} GB/s, staged by the driver "
             "through a pinned buffer, and held the host until each was done.")
    fix = ("Allocate host tensors in pinned memory (pin_memory(), DataLoader(pin_memory=True)) and copy "
           "with .to(\"cuda\", non_blocking=True).")
    # Its time: each copy's part beyond what it takes at the link's rate (its tail).
    end = pageable["start_us"].to_numpy(float) + d
    spans = Spans.of(pageable["device"].to_numpy(object), end - np.maximum(0.0, d - ideal), end)
    return Finding("pageable_copies", severity_for(cost, window), title, detail, evidence, cost,
                   cause=cause, fix=fix, link=span_link(pageable, "pageable copy"), spans=spans)


def _serialized_finding(tl, host, window) -> Finding | None:
    """``serialized_copies``: host copies that share a stream with kernels and overlap no kernel
    at all; they serialize with compute (the stream runs one thing at a time, and no other stream
    hid them). None where there are none."""
    acts = tl.activities
    kern = acts[acts["kind"] == "kernel"]
    if not len(kern):
        return None
    with_kernels = set(zip(kern["device_index"].tolist(), kern["stream"].tolist()))
    rows = []
    for dev_i, hc in host.groupby("device_index", sort=False):
        dk = kern[kern["device_index"] == dev_i]
        ms, me = merge_intervals(dk["start_us"], dk["end_us"])
        s = hc["start_us"].to_numpy(float)
        ov = covered_length(ms, me, s, s + hc["duration_us"].to_numpy(float))
        # Over the rows that overlap nothing, as plain values (itertuples cost ~4 us a row).
        at = np.flatnonzero(ov <= 0)
        for name, stream, dur, op, start, device in zip(*(hc[c].to_numpy(object)[at].tolist() for c in (
                "name", "stream", "duration_us", "op", "start_us", "device"))):
            if stream is not pd.NA and (dev_i, stream) in with_kernels:
                rows.append({"copy": name, "stream": int(stream), "time_us": float(dur),
                             "op": op, "_start": float(start), "_device": device})
    if not rows:
        return None
    longest = max(rows, key=lambda x: x["time_us"])
    copy_link = range_link(longest["_device"], longest["_start"], longest["_start"] + longest["time_us"],
                           "copy on the compute stream")
    spans = Spans.of([x["_device"] for x in rows], [x["_start"] for x in rows],
                     [x["_start"] + x["time_us"] for x in rows])
    rows = [{a: b for a, b in x.items() if not a.startswith("_")} for x in rows]
    copied = sum(x["time_us"] for x in rows)
    # Overlap hides the shorter of the two: copies beside little compute gain little (the
    # kernels of the copies' own devices: another GPU's compute hides nothing).
    mine = kern[kern["device_index"].isin(host["device_index"].unique())]
    compute = union_length(mine["start_us"], mine["end_us"])
    cost = min(copied, compute)
    streams = sorted({x["stream"] for x in rows})
    title = (f"{len(rows)} host copies ran on the compute stream{'s' * (len(streams) > 1)} "
             f"({', '.join(map(str, streams))}) with no kernel beside them: {fmt_us(copied)}"
             + (f", of which overlap could hide {fmt_us(cost)} (the kernels' time)" if cost < copied else
                " the GPU could have been computing"))
    detail = ("A stream runs its work in order, so a copy on the stream the kernels use waits "
              "for them and they wait for it. Fix: prefetch the next batch with "
              ".to(\"cuda\", non_blocking=True) from pinned memory on a side stream "
              "(torch.cuda.Stream) and make the compute stream wait on it only when needed.")
    evidence = {"copies": rows[:MAX_EVIDENCE_ROWS], "count": len(rows), "time_us": copied, "hideable_us": cost}
    cause = ("Host copies ran on the stream the kernels use, so they and the kernels waited "
             "for each other.")
    fix = ("Prefetch from pinned memory with non_blocking=True on a side stream "
           "(torch.cuda.Stream) and wait on it only where the data is needed.")
    return Finding("serialized_copies", severity_for(cost, window), title, detail,
                   evidence, cost, cause=cause, fix=fix, link=copy_link, spans=spans)
