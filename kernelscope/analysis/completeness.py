"""The completeness ledger: what a recording holds, against what its launches and its profiler
say it should hold, and what each gap means for the report's numbers.

Every figure is counted from the Trace's tables or read from what the profiler said:

- recorded: the kernels, copies, memsets, runtime/driver calls and CPU ops of the tables;
- launches whose GPU work never appeared: launch calls (``cudaLaunchKernel``, ``cuLaunchKernelEx``,
  ``hipLaunchKernel``, ...) whose correlation id matches no kernel, the way ``trace/tables.py``
  joins a kernel to its launch; calls made inside a stream capture built a graph's nodes and ran
  nothing (``analysis/graphs.py: in_capture``), so they are left out; a ``cudaGraphLaunch`` with no
  kernel is a replay whose kernels were not recorded; copy and memset calls are counted apart (a
  zero-byte copy or memset enqueues nothing, so CUPTI has nothing to record);
- GPU records with no launch: kernels and copies whose correlation matches no runtime call (launched
  before the recording started, or their runtime record lost);
- what Kineto and CUPTI said they dropped, a foreign CUPTI subscriber, tracing stopped at the
  buffer limit: parsed from the profiler's log at capture time (``meta["profiler_said"]``, written by
  ``capture/recorder.py`` with :func:`profiler_said`); a trace file does not tell;
- events the reader skipped or repaired (its notes).

A source that cannot tell a figure (an Nsight Compute replay has no runtime calls) gives ``None``
for it and says "not told by this source", never 0.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import by_distinct
from kernelscope.analysis.graphs import in_capture
from kernelscope.jsonable import jsonable, whole
from kernelscope.trace.model import GRAPH_LAUNCH_CALLS
from kernelscope.units import fmt_us

# Runtime/driver calls by what they put on the GPU: a kernel, a copy or a memset.
_KERNEL_CALL = re.compile(r"^(cuda|cu|hip)(Ext)?(Module|Hcc)*(Ext)?Launch(Cooperative)?Kernel|^cuLaunchGrid")
_COPY_CALL = re.compile(r"^(cuda|cu|hip)Memcpy")
_MEMSET_CALL = re.compile(r"^(cuda|cu|hip)Memset")
NOT_TOLD = "not told by this source"

# What Kineto and CUPTI write to stderr when they lose records (libkineto's CuptiActivityApi.cpp,
# GenericActivityProfiler.cpp, init.cpp): each pattern and the key it counts under.
_SAID = (
    # "Dropped N activity records": CUPTI's queue overflowed (logged only at verbose logging).
    ("dropped_records", re.compile(r"Dropped (\d+) activity records")),
    # The buffer limit reached: CUPTI stops recording for the rest of the region.
    ("stopped_early", re.compile(r"Exceeded max GPU buffer count|CollectTrace stopped by GPU profiler")),
    # Another CUPTI client (Nsight, Proton, DCGM, a JAX profiler) holds the activity stream.
    ("foreign_subscriber", re.compile(r"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED|already a CUPTI subscriber"
                                      r"|CUPTI initialization failed")),
    # Kineto's own record counts (at INFO logging): "Out-of-range = N, ...".
    ("out_of_range", re.compile(r"Out-of-range = (\d+)")),
)
# The reader's notes that say it skipped or repaired events (trace/kineto.py, trace/decode.py).
_REPAIRED = re.compile(r"(?:skipped|ignored malformed args of) (\d+) (?:malformed )?event")


def profiler_said(lines) -> dict:
    """What the profiler's log (lines Kineto and CUPTI wrote to stderr) says it lost: dropped
    records, whether tracing stopped at the buffer limit, a foreign CUPTI subscriber, Kineto's
    out-of-range count, and the lines that said so.

    >>> log = open("counters/record_log.txt").read().splitlines()   # Kineto beside Proton, H200
    >>> profiler_said(log)["foreign_subscriber"]
    2
    """
    out: dict = {key: 0 for key, _ in _SAID}
    said = []
    for ln in lines or ():
        ln = str(ln)
        for key, pat in _SAID:
            m = pat.search(ln)
            if m:
                out[key] += int(m.group(1)) if m.groups() else 1
                said.append(ln.strip()[:300])
    out["lines"] = said[:10]
    return out


@dataclass(frozen=True)
class Gap:
    """One line of the ledger: what is missing (``count``; None where the source cannot tell),
    whether it counts as missing work (``missing``), and what it means for the numbers."""
    key: str
    label: str
    count: int | None
    meaning: str
    missing: bool = True


@dataclass(frozen=True)
class Completeness:
    """A report's ledger: what was recorded, and each gap against what should be there.

    >>> c = rep.completeness
    >>> c.recorded
    {'kernels': 74, 'copies': 4, 'memsets': 2, 'runtime_calls': 88, 'cpu_ops': 454}
    >>> c.complete
    True
    >>> print(c.line)
    74 kernel launches, 4 copies, 2 memsets, 88 runtime calls, 454 CPU ops; every launch has its GPU record;
    profiler's drop counts: not told by this source
    """
    source: str                      # "live capture", "trace file", "Nsight Compute replay", ...
    recorded: dict                   # kernels, copies, memsets, runtime_calls, cpu_ops (None: not told)
    gaps: list = field(default_factory=list)   # Gap, one per kind of gap the source can tell of

    @property
    def missing(self) -> list:
        """The gaps that are missing work (a count above 0)."""
        return [g for g in self.gaps if g.missing and g.count]

    @property
    def complete(self) -> bool:
        """Nothing missing that the source can tell of."""
        return not self.missing

    @property
    def line(self) -> str:
        """The header's one line (the browser shows this text as it is)."""
        names = {"kernels": "kernel launch", "copies": "copy", "memsets": "memset", "runtime_calls": "runtime call",
                 "cpu_ops": "CPU op"}
        rec = ", ".join(_count(v, names[k]) for k, v in self.recorded.items() if v is not None)
        head = rec or "nothing recorded"
        if self.missing:
            return f"{head}; missing: " + "; ".join(f"{g.count:,} {g.label}" for g in self.missing)
        tail = "every launch has its GPU record" if self.told("launches_without_kernel") else \
            f"launches and their GPU records: {NOT_TOLD}"
        if not self.told("profiler_dropped"):
            tail += f"; profiler's drop counts: {NOT_TOLD}"
        return f"{head}; {tail}"

    def told(self, key: str) -> bool:
        """Whether the source tells the gap ``key`` (a count, 0 included)."""
        return any(g.key == key and g.count is not None for g in self.gaps)

    def gap(self, key: str) -> Gap | None:
        return next((g for g in self.gaps if g.key == key), None)

    def to_dict(self) -> dict:
        """Plain JSON-ready data: the source, the recorded counts, each gap, and the line.

        >>> rep.completeness.to_dict()["gaps"][0]["key"]
        'launches_without_kernel'
        """
        return jsonable({"source": self.source, "recorded": dict(self.recorded), "complete": self.complete,
                         "line": self.line, "gaps": [asdict(g) for g in self.gaps]})


def _count(n: int, what: str) -> str:
    """``n`` things, in the plural where it is not one ("copy": "copies")."""
    plural = what[:-1] + "ies" if what.endswith("y") else what + ("es" if what.endswith("ch") else "s")
    return f"{n:,} {what if n == 1 else plural}"


def source_kind(meta: dict) -> str:
    """Which kind of source a Trace came from, as far as its meta says.

    >>> source_kind(rep.meta), source_kind({"reader": "ncu"}), source_kind({"capture_route": "tmpfs"})
    ('trace file', 'Nsight Compute replay', 'live capture')
    """
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("reader") == "ncu":
        return "Nsight Compute replay"
    if meta.get("producer") == "jax":
        return "JAX profiler trace"
    if meta.get("producer") == "onnxruntime":
        return "ONNX Runtime profile"
    if meta.get("producer") == "onnxruntime-web":   # no launch calls: its nodes enqueue the kernels
        return "onnxruntime-web recording"
    if meta.get("capture_route") or isinstance(meta.get("profiler_said"), dict):
        return "live capture"
    return "trace file"


def completeness(trace) -> Completeness:
    """The ledger of a Trace (``rep.completeness`` keeps it).

    >>> completeness(ks.load("graphs.pt.trace.json.gz").trace).line[:48]
    '2,000 kernel launches, 0 copies, 0 memsets, 6 ru'
    """
    kind = source_kind(trace.meta)
    k, c, rt = trace.kernels, trace.copies, trace.runtime
    memsets = int((c["kind"] == "memset").sum()) if len(c) else 0
    has_host = kind not in ("Nsight Compute replay", "JAX profiler trace", "ONNX Runtime profile",
                            "onnxruntime-web recording")
    recorded = {"kernels": int(len(k)), "copies": int(len(c)) - memsets, "memsets": memsets,
                "runtime_calls": int(len(rt)) if has_host else None,
                "cpu_ops": int(len(trace.ops)) if kind != "Nsight Compute replay" else None}
    gaps = _launch_gaps(k, c, rt) if has_host else _untold_launch_gaps()
    gaps.append(_profiler_gap(trace.meta, kind))
    gaps.append(_repaired_gap(trace.meta))
    return Completeness(source=kind, recorded=recorded, gaps=[g for g in gaps if g is not None])


def _untold_launch_gaps() -> list:
    return [Gap("launches_without_kernel", "launches with no kernel", None, NOT_TOLD),
            Gap("gpu_records_without_launch", "kernels or copies with no launch", None, NOT_TOLD)]


def _call_kinds(rt: pd.DataFrame) -> np.ndarray:
    """Each runtime call's kind of GPU work: "kernel", "graph", "copy", "memset" or ""."""
    def kind(name) -> str:
        name = str(name)
        if name in GRAPH_LAUNCH_CALLS:
            return "graph"
        for k, pat in (("kernel", _KERNEL_CALL), ("copy", _COPY_CALL), ("memset", _MEMSET_CALL)):
            if pat.match(name):
                return k
        return ""
    return by_distinct(rt["name"], kind, object, "")


def _correlations(t: pd.DataFrame) -> np.ndarray:
    return t["correlation"].to_numpy(dtype="float64", na_value=np.nan) if len(t) else np.zeros(0)


def _launch_gaps(k: pd.DataFrame, c: pd.DataFrame, rt: pd.DataFrame) -> list:
    """Launch calls with no GPU record (outside stream captures) and GPU records with no launch."""
    gpu = np.concatenate([_correlations(k), _correlations(c)])
    calls = _correlations(rt)
    kinds = _call_kinds(rt) if len(rt) else np.zeros(0, dtype=object)
    captured = in_capture(rt) if len(rt) else np.zeros(0, dtype=bool)
    unmatched = ~np.isin(calls, gpu[~np.isnan(gpu)]) & ~captured
    n = {kd: int(((kinds == kd) & unmatched).sum()) for kd in ("kernel", "graph", "copy", "memset")}
    launches = int(((kinds == "kernel") & ~captured).sum())
    mean = float(k["duration_us"].mean()) if len(k) else None
    est = f"; at the recorded mean of {fmt_us(mean)} a kernel, about {fmt_us(mean * n['kernel'])}" if mean else ""
    gaps = [Gap("launches_without_kernel", "launches with no kernel", n["kernel"],
                f"{n['kernel']:,} of {launches:,} kernel launches ({n['kernel'] / max(launches, 1):.1%}) have no kernel "
                f"in the recording: GPU busy time, kernel time and the kernel table undercount by those kernels{est}"
                " (their own durations are unknown)"),
            Gap("graph_replays_without_kernels", "graph replays with no kernel", n["graph"],
                "CUDA graph replays whose kernels were not recorded: GPU busy time and the kernel table leave "
                "out every kernel of those replays")]
    in_graphs = int(((kinds == "kernel") & captured).sum())
    if in_graphs:
        gaps.append(Gap("launches_in_capture", "launches inside a stream capture", in_graphs,
                        "launches made while their stream was capturing built a CUDA graph's nodes and ran "
                        "nothing: no kernel is expected of them", missing=False))
    copies = n["copy"] + n["memset"]
    gaps.append(Gap("copy_calls_without_record", "copy or memset calls with no GPU record", copies,
                    f"{n['copy']:,} copy and {n['memset']:,} memset call(s) have no GPU record: a zero-byte copy "
                    "or memset enqueues nothing (CUPTI has nothing to record), so these are not counted as "
                    "missing; if they did move data, copy time and bytes undercount", missing=False))
    gaps.append(_orphans(k, c, calls))
    return gaps


def _orphans(k: pd.DataFrame, c: pd.DataFrame, calls: np.ndarray) -> Gap:
    """Kernels and copies whose correlation matches no recorded runtime call."""
    known = calls[~np.isnan(calls)]
    lone_k = ~np.isin(_correlations(k), known)
    lone_c = ~np.isin(_correlations(c), known)
    n = int(lone_k.sum() + lone_c.sum())
    us = float(k["duration_us"].to_numpy(dtype=float)[lone_k].sum() + c["duration_us"].to_numpy(dtype=float)[lone_c].sum()) if n else 0.0
    first = min([float(t["start_us"].min()) for t in (k, c) if len(t)], default=0.0)
    early = int((k["start_us"].to_numpy(dtype=float)[lone_k] <= first + 1.0).sum()) if len(k) else 0
    when = (" (at the start of the recording: launched before it began, their launch call not recorded)"
            if n and early else " (launched before the recording started, through a driver call Kineto does "
                                "not record, or their launch record lost)")
    return Gap("gpu_records_without_launch", "kernels or copies with no launch", n,
               f"{n:,} kernel(s) and copies have no launch call in the recording{when}: their "
               f"{fmt_us(us)} of GPU time is measured, but has no CPU op, source line or launch overhead, "
               "so the CPU-op table and launch statistics leave it out")


def _profiler_gap(meta: dict, kind: str) -> Gap | None:
    """What Kineto and CUPTI said they lost, where the source kept their log."""
    said = meta.get("profiler_said") if isinstance(meta, dict) else None
    if not isinstance(said, dict):
        if kind == "live capture" and isinstance(meta.get("profiler_log"), list):
            said = profiler_said(meta["profiler_log"])
        elif isinstance(meta.get("profiler_file_log"), list):
            said = profiler_said(meta["profiler_file_log"])     # Kineto's own log in the file
        else:
            return Gap("profiler_dropped", "records the profiler dropped", None,
                       f"Kineto's and CUPTI's own drop counts: {NOT_TOLD} (only a live capture keeps their log)")
    dropped = _n(said.get("dropped_records")) + _n(said.get("out_of_range"))
    stopped, foreign = _n(said.get("stopped_early")), _n(said.get("foreign_subscriber"))
    n = dropped + stopped + foreign
    parts = []
    if dropped:
        parts.append(f"Kineto/CUPTI dropped {dropped:,} activity record(s): kernels, copies or runtime calls are "
                     "missing, and every count and time may undercount")
    if stopped:
        parts.append("CUPTI stopped recording when its buffers filled: the work after that point is missing")
    if foreign:
        parts.append("another CUPTI subscriber (Nsight, Proton, DCGM, a JAX profiler) held the activity stream: "
                     "GPU records may be missing entirely")
    meaning = "; ".join(parts) if parts else (
        "the profiler's log names no dropped records, buffer limit or foreign CUPTI subscriber "
        "(Kineto counts dropped records only at verbose logging)")
    return Gap("profiler_dropped", "records the profiler dropped or lost", n, meaning)


def _n(x) -> int:
    """A count from meta (a saved report's may be damaged): a whole number, else 0."""
    return int(x) if isinstance(x, bool) else max(whole(x) or 0, 0)


def _repaired_gap(meta: dict) -> Gap:
    """Events the reader skipped or repaired, from its notes."""
    notes = meta.get("notes") if isinstance(meta, dict) else None
    n = sum(int(m.group(1)) for note in (notes or []) for m in [_REPAIRED.search(str(note))] if m)
    return Gap("events_repaired", "events the reader skipped or repaired", n,
               f"the reader skipped or repaired {n:,} malformed event(s): what they held (kernels, copies, "
               "calls or ops, or some of their fields) may be missing from the tables" if n
               else "the reader skipped or repaired no event")
