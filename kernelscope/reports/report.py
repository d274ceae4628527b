"""Report: one profiled run's tables plus what we computed from them.

A Report is built from a :class:`~kernelscope.trace.model.Trace`; analysis columns
(``short_name``, ``backend``, occupancy, ...) are added on construction, findings on first use.
Reports save to a versioned JSON file (no pickle) and load back with ``kernelscope.load``.
"""
from __future__ import annotations

import dataclasses
import gzip
import os
import threading
from concurrent.futures import Future
from functools import cached_property

import msgspec
import pandas as pd

from kernelscope.analysis import annotate
from kernelscope.analysis.summary import kernel_summary
from kernelscope.errors import TraceError
from kernelscope.jsonable import jsonable
from kernelscope.reports.outputs import ReportDisplay, ReportOutputs  # noqa: F401 - ReportDisplay's old home
from kernelscope.reports.saved import (
    REPORT_FORMAT,
    REPORT_VERSION,
    clean_meta,
    clean_text_columns,
    table_from_json,
    table_to_json,
)
from kernelscope.trace.model import TABLES, Trace, frame

# A report with at least this many CPU ops starts its call tree and CPU-ops table on a second
# thread when it is built (numpy's array work and pandas' group sums release the GIL, so it runs
# beside the analyses): the first display finds them ready. 2.7M ops take ~1.0 s that way, which
# would break the display's 1 s budget; below a million ops in line costs <= 0.4 s, and the
# thread's arrays, alive beside the analyses' own, would raise the memory peak (534k ops: +55 MB,
# 1.30x -> 1.49x the file), so smaller reports compute them when first asked.
AHEAD_OPS = 1_000_000


class Report(ReportOutputs):
    """One profiled run: kernels, copies, CPU ops, devices and findings.

    ``kernels`` (one row per launch, with the analysis columns), ``copies`` (one row per
    memcpy/memset, with ``device``/``device_type``) and ``shapes`` (one row per distinct launch
    shape with its occupancy and advice; ``kernels["shape"]`` is the row) are computed on
    construction; ``findings``, ``timeline``, ``backends`` and ``roofline`` on first use.

    >>> import kernelscope as ks
    >>> rep = ks.load("mlp_train.pt.trace.json.gz")
    >>> rep.summary()[["short_name", "backend", "launches", "total_us"]].head(3)
                           short_name backend  launches  total_us
    0      foreach mul (multi-tensor)    ATen         4    98.368
    1  foreach addcdiv (multi-tensor)    ATen         2    83.616
    2     foreach Lerp (multi-tensor)    ATen         2    68.960
    """

    def __init__(self, trace: Trace, *, ncu: pd.DataFrame | None = None, stalls: pd.DataFrame | None = None,
                 ncu_detail: dict | None = None):
        if stalls is not None:
            # A full .ncu-rep report's stalls take the place of any earlier ones from the same
            # source and join the others (Proton's live ones), in a copy of the trace so that a
            # report merged onto (``kernels_report``) keeps its own tables.
            stalls = frame({c: stalls[c].tolist() for c in stalls.columns}, TABLES["stalls"])
            old = trace.stalls
            if len(old) and len(stalls):
                old = old[~old["source"].isin(set(stalls["source"].dropna()))]
            elif len(old):
                from kernelscope.analysis.ncu_kernels import NCU_SOURCE
                old = old[old["source"] != NCU_SOURCE]
            trace = dataclasses.replace(trace, stalls=stalls if not len(old) else
                                        pd.concat([old, stalls], ignore_index=True))
        from kernelscope.analysis.graph_match import attach
        # Replayed CUDA graph kernels take the op that captured them, before any analysis.
        trace = attach(trace)
        self.trace = trace
        self.meta = trace.meta
        self.ncu = ncu
        # Nsight Compute's rules, source hot spots and SASS of a full .ncu-rep report
        # (``rules``, ``hotspots``, ``sass``).
        self.ncu_detail = dict(ncu_detail or {})
        self.kernels, self.copies, self.shapes = annotate(trace, ncu)
        self._op_parts: tuple | None = None      # (tables key, Future or (tree, table))
        if len(trace.ops) >= AHEAD_OPS:
            self._op_parts = (self._op_parts_key(), _in_background(_op_parts, *_op_inputs(trace.ops, self.kernels)))

    # -- tables (kernels, copies and shapes are set on construction; copies gain the counter
    # columns of metrics, time-weighted over each copy, when the run sampled them) ------------
    @property
    def metrics(self) -> pd.DataFrame:
        """Hardware-counter samples (CUPTI PM sampling), one row per sample: ``start_us``,
        ``duration_us``, ``sm_active_pct``, ``tensor_pct``, ``dram_pct``, ``dram_gbps`` and each
        raw metric by its CUPTI name. Empty unless the run sampled them
        (``ks.profile(metrics=True)``, ``%%kernelprofile --metrics``) or the trace holds torch's
        counter tracks; ``meta["counters"]`` says how they were taken.

        >>> live.metrics[["start_us", "tensor_pct"]].head(3)
            start_us  tensor_pct
        0  3532.9608         0.0
        1  3552.9608         0.0
        2  3572.9608         0.0
        """
        return self.trace.counters

    @property
    def stalls(self) -> pd.DataFrame:
        """Warp-stall samples per kernel: ``name``, ``source`` (who sampled), ``samples``,
        ``top_stall`` and one column per reason with its share of the stall samples
        (:mod:`kernelscope.analysis.stalls`): one row per launch from a full Nsight Compute report
        (``launch``: its ncu id), one per kernel name from Proton's live sampling. Empty unless a
        source sampled them (``%%kernelprofile --stalls`` or ``--ncu``, ``ks.load_ncu``).

        >>> live.stalls[["name", "top_stall", "long_scoreboard"]].head(3)
                                              name        top_stall  long_scoreboard
        0  at::cuda::(anonymous namespace)::spi...             wait           0.0000
        1  void at::native::vectorized_elementw...  long_scoreboard           0.8093
        2  nvjet_sm90_tst_320x128_64x3_1x2_h_bz...  long_scoreboard           0.2922
        """
        return self.trace.stalls

    @cached_property
    def graphs(self) -> pd.DataFrame:
        """The CUDA graphs the recording replayed, one row each: where each was captured, its
        replays, kernels and GPU time per replay, the capture's own cost, and the share of its
        kernels attributed to the op that captured them (``analysis/graph_table.py``).
        The kernels themselves carry ``graph``, ``graph_replay``, ``graph_node``,
        ``capture_basis``, ``capture_module`` and, where none is known, ``graph_unmatched``.

        >>> g = ks.load("graphs/manual_in_region.pt.trace.json.gz")
        >>> g.kernels.loc[g.kernels["graph_launch"], ["op", "graph", "graph_replay", "graph_node"]].head(3)
                                       op      graph  graph_replay  graph_node
        2                     aten::addmm  capture 1             1           0
        3  aten::_cudnn_attention_forward  capture 1             1           2
        4                     aten::addmm  capture 1             1           3
        """
        from kernelscope.analysis.graph_table import graph_table
        return graph_table(self.trace, self.kernels)

    @cached_property
    def autotune(self) -> pd.DataFrame:
        """Every autotuning candidate the region's process measured, one row each: ``kernel``,
        ``producer``, ``tuner`` (``triton.autotune``, ``inductor max-autotune``), ``tuning``
        (which tuning), ``shape_key``, ``config`` (as its producer writes it), ``num_warps``,
        ``num_stages``, ``p50_ms``/``p20_ms``/``p80_ms`` (the tuner's measured times),
        ``registers``, ``spills`` (local memory), ``shared_mem_bytes``,
        ``theoretical_occupancy`` and ``occupancy_limiter`` (our calculator), ``vs_best``,
        ``rank``, ``winner``, ``cached`` (measured before the region: a cache hit), ``launches``
        (how many launches of the region ran it), ``benchmark_launches`` (how many of those were
        the tuner's own), ``kernel_rows`` (their rows of ``rep.kernels``), ``compiled_kernel``
        (Inductor: the compiled template kernel that runs a winner), ``benchmark_range`` (Inductor:
        the profiler range its benchmark ran in) and ``note``;
        each tuning fastest first (:mod:`kernelscope.analysis.producers`). Empty for a trace file:
        only a live capture sees the tuners (``meta["tuning"]`` says what was watched).

        >>> rep.autotune[["config", "p50_ms", "theoretical_occupancy", "winner"]]   # doctest: +SKIP
        """
        from kernelscope.analysis.producers import autotune_table
        return autotune_table(self.trace, self.kernels)

    @property
    def runtime(self) -> pd.DataFrame:
        """CUDA runtime and driver API calls on the host."""
        return self.trace.runtime

    @property
    def ops(self) -> pd.DataFrame:
        """CPU ops and user annotations (with shapes and FLOPs when recorded)."""
        return self.trace.ops

    @property
    def syncs(self) -> pd.DataFrame:
        """Host-blocking synchronizations."""
        return self.trace.syncs

    @property
    def devices(self) -> pd.DataFrame:
        """Device properties from the trace header."""
        return self.trace.devices

    @property
    def partial(self) -> bool:
        """True when the run stopped early (the cell raised or was interrupted)."""
        return bool(self.meta.get("partial"))

    @property
    def notes(self) -> list:
        """What the reader skipped or could not tell, in words."""
        return list(self.meta.get("notes", []))

    @property
    def gpu_time_us(self) -> float:
        """Sum of kernel durations (not their union; see findings for busy time)."""
        return float(self.kernels["duration_us"].sum())

    @property
    def wall_time_us(self) -> float | None:
        """The region's wall time: CUDA events if recorded, else the profiler's span
        (:attr:`wall_time_clock` says which). None for an Nsight Compute replay, which ran its
        launches one at a time and has no wall time (:attr:`time_base` is its kernel time)."""
        from kernelscope.analysis.replay import is_replay
        if is_replay(self.meta):
            return None
        for key in ("cuda_event_us", "span_us"):
            v = self.meta.get(key)
            if v is not None:
                return float(v)
        t = pd.concat([self.kernels[["start_us", "duration_us"]], self.trace.ops[["start_us", "duration_us"]]])
        if not len(t):
            return None
        return float((t["start_us"] + t["duration_us"]).max() - t["start_us"].min())

    @property
    def time_base(self) -> tuple:
        """(microseconds, words) that the time at stake is a share of: the wall time of a run, the
        kernel time of an Nsight Compute replay (``analysis/replay.py``).

        >>> ks.load_ncu("tests/data/ncu_mlp_train.csv").time_base[1]   # doctest: +SKIP
        'kernel time'
        """
        from kernelscope.analysis.replay import time_base
        return time_base(self.meta, self.wall_time_us, self.gpu_time_us)

    @property
    def wall_time_clock(self) -> str | None:
        """Which clock :attr:`wall_time_us` read: ``"CUDA events"`` (recorded around the region on
        the GPU's streams), ``"profiler span"`` (the trace's own start to end, which also holds
        the profiler's start-up) or ``"first to last event"``; None without a wall time.

        >>> ks.load("mlp_train.pt.trace.json.gz").wall_time_clock
        'profiler span'
        """
        for key, clock in (("cuda_event_us", "CUDA events"), ("span_us", "profiler span")):
            if self.meta.get(key) is not None:
                return clock
        return "first to last event" if self.wall_time_us is not None else None

    @property
    def title(self) -> str:
        """What tells this report from another: the name the recording was given (``-o NAME``,
        ``ks.profile(name=...)``), the cell's number (``In [5]``), or the recorded file's name.

        >>> ks.load("ranks/rank0.pt.trace.json.gz").title
        'rank0.pt.trace.json.gz'
        """
        return report_title(self.meta)

    def summary(self, by: str = "name") -> pd.DataFrame:
        """One row per kernel (``by`` a kernels column): launches, total/mean/median/min/max
        duration and its standard deviation in us (``std_us``, as Nsight Systems' kernel summary)
        and share of kernel time, largest total first.

        >>> rep.summary().columns.tolist()[:4]
        ['name', 'short_name', 'backend', 'launches']
        """
        # Kept per column and kernels table (the display and the user's own call share it; a
        # million launches take ~0.2 s); a copy is handed out, so an edit of it stays the caller's.
        key = (by, id(self.kernels))
        cache = self.__dict__.setdefault("_summaries", {})
        if key not in cache:
            for old in [k for k in cache if k[1] != key[1]]:   # of a kernels table since replaced
                del cache[old]
            cache[key] = kernel_summary(self.kernels, by=by)
        return cache[key].copy()

    @cached_property
    def backends(self) -> pd.DataFrame:
        """Breakdown by device and backend: launches, GPU time and share."""
        from kernelscope.analysis.backends import backend_breakdown
        return backend_breakdown(self)

    def op_backends(self) -> pd.DataFrame:
        """Per CPU op: which backends its kernels and copies came from (launches, GPU time, share).

        >>> rep.op_backends().head()
                                op backend  launches  gpu_time_us   share
        0              aten::copy_  memcpy         4      289.568  0.7517
        1              aten::copy_    ATen        22       95.647  0.2483
        2      aten::_foreach_mul_    ATen         4       98.368  1.0000
        3  aten::_foreach_addcdiv_    ATen         2       83.616  1.0000
        4     aten::_foreach_lerp_    ATen         2       68.960  1.0000
        """
        from kernelscope.analysis.backends import op_backends
        return op_backends(self)

    @cached_property
    def findings(self) -> list:
        """What to fix first: a list of Finding, most costly first."""
        from kernelscope.analysis.findings import find_all
        return find_all(self)

    @cached_property
    def steps(self) -> pd.DataFrame:
        """One row per ``ProfilerStep#N``: time, GPU busy, TensorBoard's breakdown (``analysis/steps.py``).
        >>> ks.load("training/lm_steps.pt.trace.json.gz").steps["index"].tolist()[:3]
        [3, 4, 5]
        """
        from kernelscope.analysis.steps import step_table
        return step_table(self)

    @cached_property
    def completeness(self):
        """The completeness ledger (a ``Completeness``): kernels, copies, memsets, runtime calls and
        CPU ops recorded, and each gap (launches with no kernel, kernels with no launch, records
        the profiler dropped, events the reader repaired) with what it means for the numbers.

        >>> rep.completeness.complete, rep.completeness.recorded["kernels"]
        (True, 74)
        """
        from kernelscope.analysis.completeness import completeness
        return completeness(self.trace)

    def what_to_fix(self) -> pd.DataFrame:
        """What to fix first, as the first screen lists it (text, HTML and widget read the same
        list): one row per item with ``rank``, ``kind``, ``severity``, ``title``, ``cost_us``,
        ``share_of_wall``, ``cause``, ``fix``, ``link``, ``also``, ``within`` and ``note``. Each
        microsecond is counted once, so ``share_of_wall`` adds up to at most 1.

        >>> rep.what_to_fix()[["rank", "title", "share_of_wall"]]      # doctest: +SKIP
        """
        from kernelscope.analysis.priorities import fix_table, what_to_fix
        base_us, of = self.time_base      # a replay: its kernel time
        return fix_table(what_to_fix(self.findings, base_us, of=of))

    @cached_property
    def timeline(self):
        """Busy time, idle gaps with causes, stream overlap, launch stats (a Timeline).

        >>> rep.timeline.launch_stats[["device", "launches", "kernels", "window_us"]]
          device  launches  kernels  window_us
        0  cuda:0        80       74  8075.9936
        """
        from kernelscope.analysis.timeline import timeline
        return timeline(self)

    @property
    def busy(self) -> pd.DataFrame:
        """GPU busy time per device and stream over the active window (``timeline.busy``)."""
        return self.timeline.busy

    @property
    def gaps(self) -> pd.DataFrame:
        """GPU idle gaps with their cause: host, sync, streams, queued (``timeline.gaps``)."""
        return self.timeline.gaps

    @property
    def op_tree(self) -> pd.DataFrame:
        """Each CPU op's place in its thread's call tree, per row of ``ops`` (by position):
        ``parent`` (row position, -1 outermost), ``depth``, ``self_us`` (host time not in nested
        ops) and ``outermost_of_name`` (``analysis.op_tree.op_tree``).

        >>> rep.op_tree.head(3)
           parent  depth  self_us  outermost_of_name
        0      -1      0   48.595               True
        1       0      1   37.732               True
        2       1      2   17.600               True
        """
        return self._op_parts_now()[0]

    @property
    def op_summary(self) -> pd.DataFrame:
        """The CPU ops table, per op name, costliest host time first: ``calls``, host time
        (``total_us``, ``self_us``, ``mean_us``) and the GPU time of the kernels the op launched
        itself or through the ops nested in it (``analysis.op_tree.op_summary``).

        >>> rep.op_summary[["name", "calls", "total_us", "gpu_inclusive_us"]].head(3)
                     name  calls  total_us  gpu_inclusive_us
        0       aten::div      4  4703.878             5.248
        1        aten::to     32  3387.744            95.647
        2  aten::_to_copy     24  3328.254            95.647
        """
        return self._op_parts_now()[1]

    def __getstate__(self) -> dict:
        # A pickled report (a copy sent to another process) leaves the thread behind (a Future
        # does not pickle, and the tree is keyed by this process's tables): the copy computes
        # its tree when first asked.
        return {**self.__dict__, "_op_parts": None, "_summaries": {}}

    def _op_parts_key(self) -> tuple:
        return id(self.trace.ops), id(self.kernels)

    def _op_parts_now(self) -> tuple:
        # Kept while the tables it was computed from are the report's (a replaced table: again).
        key = self._op_parts_key()
        got = getattr(self, "_op_parts", None)
        if got is None or got[0] != key:
            got = self._op_parts = (key, _op_parts(*_op_inputs(self.trace.ops, self.kernels)))
        part = got[1]
        return part.result() if isinstance(part, Future) else part

    @cached_property
    def memory(self):
        """The allocator's peak, what held it, its curve and growth per step (``analysis/memory.py``):
        >>> ks.load("training/lm_steps.pt.trace.json.gz").memory.peak_bytes
        1071864832
        """
        from kernelscope.analysis.memory import report_memory
        return report_memory(self)

    @cached_property
    def roofline(self) -> pd.DataFrame:
        """Achieved FLOP/s and bytes/s of countable ops against datasheet peaks."""
        from kernelscope.analysis.roofline import roofline
        return roofline(self)

    # -- persistence -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The report as plain JSON-able data (what :meth:`save` writes)."""
        tables = {name: table_to_json(df) for name, df in self.trace.tables().items()}
        out = {"format": REPORT_FORMAT, "version": REPORT_VERSION, "meta": jsonable(self.meta),
               "tables": tables}
        if self.ncu is not None:
            out["ncu"] = table_to_json(self.ncu)
        if self.ncu_detail:
            out["ncu_detail"] = {k: table_to_json(v) for k, v in self.ncu_detail.items()}
        return out

    def save(self, path, *, local_paths: bool = False) -> str:
        """Write the report as versioned JSON (gzip when the name ends in ``.gz``), whole or not
        at all (a temporary file beside ``path``, then renamed: a full disk never leaves a cut
        report where a good one was). A report is meant to be shared: the files it came from
        are kept by name only, not with this machine's folders, unless ``local_paths=True``.

        >>> path = rep.save(tmp / "run.ksreport.json")
        >>> ks.load(path).kernels.shape
        (74, 51)
        """
        from kernelscope.trace.files import write_file
        path = os.fspath(path)
        d = self.to_dict()
        if not local_paths:
            meta = d["meta"]
            for k in _PATH_FIELDS:
                if isinstance(meta.get(k), str) and meta[k]:
                    meta[k] = os.path.basename(meta[k].replace("\\", "/")) or meta[k]  # noqa: PTH119 - meta text, split as text
        data = msgspec.json.encode(d)
        if path.endswith(".gz"):
            data = gzip.compress(data, compresslevel=6)
        return write_file(path, data)

    @classmethod
    def from_dict(cls, d: dict, source="<report>") -> Report:
        """Rebuild a report from :meth:`to_dict` output."""
        if d.get("format") != REPORT_FORMAT:
            raise TraceError(source, "not a kernelscope report")
        version = d.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            # No version (or one no kernelscope ever wrote) is damage, not a newer format.
            raise TraceError(source, "the report file is damaged: it has no valid format version "
                                     f"(found {str(version)[:40]!r})")
        if version > REPORT_VERSION:
            raise TraceError(source, f"report format version {version!r} is newer than this "
                                     f"kernelscope reads ({REPORT_VERSION}); upgrade kernelscope")
        try:
            tables = {name: frame(table_from_json(d["tables"].get(name, {})), schema)
                      for name, schema in TABLES.items()}
            ncu = pd.DataFrame(table_from_json(d["ncu"])) if d.get("ncu") else None
            detail = {str(k): pd.DataFrame(table_from_json(v)) for k, v in (d.get("ncu_detail") or {}).items()}
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise TraceError(source, f"the report's tables are damaged ({e})") from None
        meta = clean_meta(d.get("meta"))
        bad = clean_text_columns(tables, TABLES)
        if bad:
            meta["notes"].append(f"ignored damaged values (lists or objects where text belongs) in: {', '.join(bad)}")
        trace = Trace(**tables, meta=meta)
        from kernelscope.trace.timebase import cover_span
        cover_span(trace)   # a hand-edited span may not cover the recorded kernels
        return cls(trace, ncu=ncu, ncu_detail=detail)


# Meta fields that hold a path on the machine that made the report (Report.save keeps their names).
_PATH_FIELDS = ("source", "raw_trace")


def _op_inputs(ops: pd.DataFrame, kernels: pd.DataFrame) -> tuple:
    """The columns the call tree and the CPU-ops table read, as frames of their own (a thread
    reading them shares no pandas object with the caller)."""
    o = ops[[c for c in ("name", "tid", "start_us", "duration_us") if c in ops.columns]]
    k = kernels[[c for c in ("op_index", "duration_us") if c in kernels.columns]]
    return o.reset_index(drop=True), k.reset_index(drop=True)


def _op_parts(ops: pd.DataFrame, kernels: pd.DataFrame) -> tuple:
    """(the call tree of ``ops``, the CPU-ops table)."""
    from kernelscope.analysis.op_tree import op_summary, op_tree
    tree = op_tree(ops)
    return tree, op_summary(ops, kernels, tree)


def _in_background(fn, *args) -> Future:
    """``fn(*args)`` run on a daemon thread; the Future's ``result()`` waits for it (and raises
    what it raised)."""
    done: Future = Future()

    def run():
        done.set_running_or_notify_cancel()
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to whoever asks for the result
            done.set_exception(e)
    threading.Thread(target=run, name="kernelscope-op-tree", daemon=True).start()
    return done


def report_title(meta: dict, fallback: str = "report") -> str:
    """A report's title from its meta: ``title`` when the recording set one, else the cell's
    number, else the recorded file's name (a name in angle brackets is a placeholder, not a file),
    else ``fallback``.

    >>> report_title({"source": "/runs/a.pt.trace.json"}), report_title({"cell": {"execution_count": 5}})
    ('a.pt.trace.json', 'In [5]')
    """
    t = meta.get("title")
    if isinstance(t, str) and t.strip():
        return t.strip()
    cell = meta.get("cell")
    n = cell.get("execution_count") if isinstance(cell, dict) else None
    if isinstance(n, int) and not isinstance(n, bool):
        return f"In [{n}]"
    src = meta.get("source") or meta.get("trace_name")
    if isinstance(src, str) and src and not src.startswith("<"):
        # Meta text, split as text: Path would name "x/" "x" and drop a last "/.".
        return os.path.basename(src.replace("\\", "/")) or src  # noqa: PTH119 - meta text
    return fallback


