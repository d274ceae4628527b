"""The header panel: the report's title, devices, notes, headline figures and what it can show."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import first_rows
from kernelscope.analysis.replay import capabilities, is_replay
from kernelscope.analysis.timeline import gpu_busy_note, gpu_busy_share
from kernelscope.jsonable import num
from kernelscope.panels.base import records, safe
from kernelscope.panels.base import text as _str


@dataclass(frozen=True)
class Header:
    """What the top of every output says of a report."""
    title: str
    source: str | None        # the file it was read from, or None for a live capture
    partial: bool             # the run stopped early
    devices: list             # one record per device (name, compute_major, compute_minor, num_sms, ...)
    stats: dict               # the headline figures: wall and GPU time, busy share, launches, ...
    capabilities: dict        # a run's timeline or an Nsight Compute replay: tabs, tiles, who measured
    # The completeness ledger (analysis/completeness.py: ``rep.completeness.to_dict()``); its
    # ``line`` is what every output shows under the tiles.
    completeness: dict | None = None

    def device_texts(self) -> list:
        """Each device as one phrase ("?" for what the trace's header did not record).

        >>> header_panel(rep, rep.kernels, rep.copies, None).device_texts()
        ['NVIDIA H200 (sm_90, 132 SMs)']
        """
        def v(d, key):
            return "?" if d.get(key) is None else d[key]
        # A device with no GPU properties at all (an ONNX Runtime provider's CPU) is its name alone.
        return [f"{v(d, 'name')} (sm_{v(d, 'compute_major')}{v(d, 'compute_minor')}, {v(d, 'num_sms')} SMs)"
                if d.get("device_type") in (None, "CUDA", "ROCm") or d.get("num_sms") is not None else str(d.get("name"))
                for d in self.devices]


def header_panel(rep, k: pd.DataFrame, copies: pd.DataFrame, tl, names: np.ndarray | None = None) -> Header:
    """The header of ``rep`` (``k``, ``copies``: its kernels and copies; ``tl``: its timeline
    analysis or None; ``names``: a row of each kernel name, when at hand).

    >>> h = header_panel(rep, rep.kernels, rep.copies, rep.timeline)
    >>> h.title, h.stats["launches"], h.stats["kernels"], round(h.stats["gpu_busy"], 3)
    ('mlp_train.pt.trace.json.gz', 74, 25, 0.095)
    """
    src = rep.meta.get("source")
    title = getattr(rep, "title", None)
    return Header(title=title if isinstance(title, str) and title else "report",
                  source=str(src) if src and not str(src).startswith("<") else None,
                  partial=bool(rep.partial), devices=records(rep.devices),
                  stats=stats(rep, k, copies, tl, names), capabilities=capabilities(rep.meta),
                  completeness=ledger(rep))


def ledger(rep) -> dict | None:
    """The report's completeness ledger as data (None where it could not be computed).

    >>> ledger(rep)["line"][:40]
    '74 kernel launches, 4 copies, 2 memsets,'
    """
    return safe(lambda: rep.completeness.to_dict(), None)


def stats(rep, k: pd.DataFrame, copies: pd.DataFrame, tl, names: np.ndarray | None = None) -> dict:
    """The headline figures: wall time and its clock, GPU kernel time, busy share, launches,
    distinct kernels, copies, memsets, CPU ops (``names``: a row of each kernel name, when at hand).

    >>> s = stats(rep, rep.kernels, rep.copies, rep.timeline)
    >>> s["wall_clock"], s["copies"], s["ops"]
    ('profiler span', 6, 454)
    """
    names = first_rows(k["name"]) if names is None and len(k) else names
    # A replay's launches ran back to back by construction: its "busy" share would read 100%.
    busy = safe(lambda: tl.device(), {}) if tl is not None and not is_replay(rep.meta) else {}
    return {
        "wall_us": num(rep.wall_time_us),
        # Which clock the wall time read (CUDA events, the profiler's span, first to last event).
        "wall_clock": _str(getattr(rep, "wall_time_clock", None)),
        "gpu_time_us": num(rep.gpu_time_us),
        # Busy share of the wall time, as the findings take it; of the active window beside it.
        "gpu_busy": num(gpu_busy_share(busy)),
        "gpu_busy_of_wall": num(busy.get("wall_busy_share")),
        "gpu_busy_of_window": num(busy.get("busy_share")),
        "gpu_busy_note": gpu_busy_note(busy),
        "busy_device": _str(busy.get("device")),
        # Kernel launches only, as everywhere in kernelscope; copies and memsets are counted apart.
        "launches": int(len(k)),
        # Distinct names: ``names`` holds a row of each (of a missing one too).
        "kernels": int(k["name"].iloc[names].notna().sum()) if len(k) else 0,
        "copies": int(len(copies)),
        "memsets": int((copies["kind"] == "memset").sum()) if len(copies) and "kind" in copies.columns else 0,
        "copy_time_us": num(float(copies["duration_us"].sum())) if len(copies) else 0.0,
        "ops": int(len(rep.ops)),
        "no_gpu": bool(rep.meta.get("no_gpu")),
    }


def raw_trace(rep) -> dict | None:
    """Where the report's Chrome trace is (asked at each display: the file may have gone since) (``meta["raw_trace"]``: the file ``ks.load`` read, or
    the one ``--trace`` / ``trace_path`` wrote), and whether it is still there.

    >>> raw_trace(rep)["name"], raw_trace(rep)["exists"]
    ('mlp_train.pt.trace.json.gz', True)
    """
    path = rep.meta.get("raw_trace")
    if not isinstance(path, str) or not path:
        return None
    # Meta text, split as text: Path would name "x/" "x" and drop a last "/.".
    return {"name": os.path.basename(path), "path": path, "exists": os.path.isfile(path)}  # noqa: PTH119 - meta text
