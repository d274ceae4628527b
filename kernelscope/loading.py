"""Opening recordings: Kineto traces, our own report files, live profilers, ncu exports, and the
traces of every rank of a distributed run (``load_ranks``).

``load_ranks``: Each trace is read and summarised where it is processed (a local worker process, or
of a Dask cluster when a client is given); only the summary (a few small tables) comes back, so
the notebook's memory holds summaries, not 64 ranks' launches. The same function
(:func:`summarise`) runs in both places.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import stat
from pathlib import Path

import msgspec

from kernelscope.errors import TraceError
from kernelscope.reports.report import Report
from kernelscope.reports.saved import REPORT_FORMAT
from kernelscope.trace.decode import ForeignFormat, NotJSON
from kernelscope.trace.files import own_trace, read_bytes
from kernelscope.trace.onnxruntime_web import FORMAT as ORTWEB_FORMAT

# What a saved report is named (Report.save does not insist, JupyterLab opens these as reports).
_REPORT_SUFFIXES = (".ksreport.json", ".ksreport.json.gz")


def load(source, *, progress: bool = True, tensorrt_layers=None, onnxruntime=None):
    """Open a recording as a :class:`~kernelscope.Report`.

    ``source`` is a torch.profiler Chrome trace (``.json`` or ``.json.gz``), JAX's perfetto
    trace, an ONNX Runtime profile (``SessionOptions.enable_profiling``: one kernel row per node
    run, :mod:`kernelscope.trace.onnxruntime`), an onnxruntime-web recording (WebGPU or WASM in
    headless Chromium: :mod:`kernelscope.trace.onnxruntime_web`), a report saved with
    ``Report.save``, a stopped ``torch.profiler.profile`` object, or an Nsight Compute report
    (``.ncu-rep``: :func:`load_ncu`). Which kind of JSON file it is comes from its parsed
    top level (a saved report's ``"format"`` key), not from its name. A trace that takes more
    than a couple of seconds to read shows a progress bar (in a notebook or on a terminal;
    ``progress=False`` or ``KERNELSCOPE_PROGRESS=off`` turn it off), removed when it is done.

    ``tensorrt_layers`` is a TensorRT engine's inspector JSON (``trtexec --exportLayerInfo``, or
    ``IEngineInspector`` with detailed profiling verbosity): each launch of a layer's tactic then
    names its layer (``trt_layer``, ``trt_layer_type``, ``trt_layers``, ``trt_layer_source``;
    :mod:`kernelscope.trace.tensorrt`), and a report saved from it keeps the layers.

    ``onnxruntime`` is ``(profile, start_ns)``: the profile an ONNX Runtime session wrote while
    ``source`` (a torch.profiler trace of the same process) recorded it, and the session's
    ``get_profiling_start_time_ns()``; each kernel ONNX Runtime launched then has its node
    (:mod:`kernelscope.trace.onnxruntime_join`; ``ks.profile(onnxruntime=session)`` does this live).

    >>> import kernelscope as ks
    >>> rep = ks.load("launch_bound.pt.trace.json.gz")
    >>> len(rep.kernels)
    2000
    >>> ks.load("onnxruntime/convnet_cpu.onnxruntime_profile.json.gz").backends[["device", "backend", "launches"]]
      device  backend  launches
    0    CPU  ORT CPU        70
    """
    if tensorrt_layers is not None:
        from kernelscope.trace.tensorrt import read_engine_layers
        layers = read_engine_layers(tensorrt_layers)    # first: a bad file fails before a long read
        rep = load(source, progress=progress)
        return Report(dataclasses.replace(rep.trace, tensorrt_layers=layers), ncu=rep.ncu,
                      ncu_detail=rep.ncu_detail)
    if onnxruntime is not None:
        from kernelscope.trace.onnxruntime_join import join_session, read_session_profile
        profile, start_ns = onnxruntime
        events = read_session_profile(profile)          # first: a bad file fails before a long read
        rep = load(source, progress=progress)
        return Report(join_session(rep.trace, events, start_ns, label=os.fspath(profile)))
    if hasattr(source, "export_chrome_trace") and hasattr(source, "profiler"):
        from kernelscope.capture.live import trace_from_profiler
        return Report(trace_from_profiler(source))
    if not isinstance(source, (str, os.PathLike)):
        raise TraceError(repr(source)[:80], "expected a file path or a stopped torch.profiler.profile")
    path = os.fspath(source)
    if _is_ncu_report(path):
        return load_ncu(path)   # an Nsight Compute report opened like any recording
    if path.endswith((".pickle", ".pkl")):
        raise TraceError(path, "a pickle is not a trace; an allocator history snapshot "
                               "(torch.cuda.memory._snapshot / _dump_snapshot) opens with ks.load_memory(path)")
    from kernelscope.render.progress import LoadProgress
    from kernelscope.trace.kineto import read_kineto
    with LoadProgress(Path(path).name, out="auto" if progress else None) as bar:
        try:
            trace = read_kineto(path, progress=bar.update)
        except ForeignFormat as e:
            if e.format == ORTWEB_FORMAT:     # onnxruntime-web in a browser (WebGPU, WASM)
                from kernelscope.trace.onnxruntime_web import read_ortweb
                return Report(read_ortweb(path))
            if e.format != REPORT_FORMAT:
                raise
            return _report(read_bytes(path), path)
        except NotJSON as e:
            # No top level to read the kind from: a file named as a report is a damaged report.
            if path.endswith(_REPORT_SUFFIXES):
                raise TraceError(path, f"the report file is damaged ({e.problem})") from None
            raise
        trace.meta["raw_trace"] = os.path.abspath(path)   # the file Perfetto can open (the view offers it)
        own_trace(path)
        bar.stage("analysing")
        return Report(trace)


def load_memory(path, *, device: str | None = None):
    """An allocator history snapshot (``torch.cuda.memory._snapshot()`` pickled, or the file
    ``torch.cuda.memory._dump_snapshot`` writes) as a
    :class:`~kernelscope.analysis.memory.MemoryAnalysis`: the peak, what held it with the
    snapshot's own stack frames (``op``: the innermost Python frame, ``source``: the innermost
    line of yours), the curve. The pickle is read with an unpickler that loads no object
    (:mod:`kernelscope.trace.memory_snapshot`): a file that asks for one is refused unread.

    >>> m = ks.load_memory("training/lm_memory.pickle")
    >>> m.peak_bytes, m.held.loc[1, "op"]
    (1069767680, 'functional.py(3504): cross_entropy')
    """
    from kernelscope.analysis.memory import memory_analysis
    from kernelscope.trace.memory_snapshot import read_snapshot, snapshot_table
    label = os.fspath(path)
    m = memory_analysis(snapshot_table(read_snapshot(label)), device=device, source="allocator history")
    if m is None:
        raise TraceError(label, "the snapshot's history holds no allocation" + (f" on {device}" if device else ""))
    return m


def _report(raw: bytes, path: str) -> Report:
    try:
        d = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as e:
        raise TraceError(path, f"the report file is damaged ({e})") from None
    rep = Report.from_dict(d, source=path)
    # A trace saved by its name only (Report.save keeps no local folders) lies beside the report.
    raw = rep.meta.get("raw_trace")
    if isinstance(raw, str) and raw and Path(raw).name == raw:
        rep.meta["raw_trace"] = str(Path(os.path.abspath(path)).parent / raw)
    # A title the recording set travels with the report; otherwise the file it was saved to
    # (the name the user chose) tells it from others.
    t = rep.meta.get("title")
    if not (isinstance(t, str) and t.strip()):
        rep.meta["title"] = Path(path).name
    return rep


def load_ncu(path, *, kernels_report=None, source=True, isolated=True):
    """Open an Nsight Compute report (``.ncu-rep``, also gzip/xz-compressed) or CSV export
    (``ncu --csv --page details`` or ``--page raw``).

    Without ``kernels_report``: a Report whose kernels are ncu's launches (name, grid, block,
    registers, shared memory, duration, device), ``report.ncu`` the tidy table, one row per
    launch, and the ncu metrics also on ``report.kernels`` as ``ncu_*`` columns. From a full
    report also ``rep.stalls`` (warp-stall shares per launch), ``rep.kernels["top_stall"]``,
    Nsight Compute's rule results as findings and ``rep.ncu_detail`` (its rules, the source hot
    spots and the SASS around them). With ``kernels_report`` (a Kineto Report of the same
    workload): that report with ncu's measurements merged onto its kernels instead (by kernel
    name and launch order). ``source`` (True, False or a count) says for how many of the longest
    launches source hot spots and SASS are read (the slow part of reading a report; True: the 50
    longest). Reading ``.ncu-rep`` needs ``pip install "kernelscope[ncu]"``. ``isolated`` (the
    default) reads a ``.ncu-rep`` in a child process: NVIDIA's reader aborts the process on some
    damaged reports, and this way that is a TraceError, not a dead kernel.

    >>> rep = load_ncu("ncu_triton_kernels.csv")
    >>> len(rep.kernels), float(rep.kernels["ncu_theoretical_occupancy_pct"].iloc[0])
    (7, 62.5)
    """
    from kernelscope.trace.ncu.export import read_ncu, trace_from_ncu
    if not isinstance(path, (str, os.PathLike)):
        raise TraceError(repr(path)[:80], "expected the path of an Nsight Compute report or CSV export")
    if not _is_ncu_report(path):
        table = read_ncu(path)
        if kernels_report is not None:
            return Report(kernels_report.trace, ncu=table)
        return Report(trace_from_ncu(table, source=os.fspath(path)), ncu=table)
    from kernelscope.analysis.ncu_kernels import source_hotspots, stalls_table
    from kernelscope.trace.ncu.isolated import read_isolated
    from kernelscope.trace.ncu.report import read_ncu_report
    data = (read_isolated if isolated else read_ncu_report)(path, source=source)
    detail = {"rules": data.rules, "hotspots": source_hotspots(data.samples, data.sources), "sass": data.sass}
    stalls = stalls_table(data.stall_counts)
    if kernels_report is not None:
        trace = kernels_report.trace
        trace.meta.setdefault("notes", []).extend(data.notes)
    else:
        trace = trace_from_ncu(data.launches, source=os.fspath(path))
        trace.meta["notes"].extend(data.notes)
    return Report(trace, ncu=data.launches, stalls=stalls, ncu_detail=detail)


def _is_ncu_report(path) -> bool:
    """By name (``.ncu-rep``, ``.ncu-repz``, compressed) or by ncu's header in the first bytes."""
    from kernelscope.trace.ncu.report import REPORT_MAGIC, is_report_path
    if not isinstance(path, (str, os.PathLike)):
        return False
    if is_report_path(path):
        return True
    try:
        if not stat.S_ISREG(Path(path).stat().st_mode):
            return False   # never open a pipe or a device to sniff it: the CSV reader refuses them
        with Path(path).open("rb") as f:
            return f.read(4) == REPORT_MAGIC
    except (OSError, ValueError):
        return False   # the CSV reader names the problem


# ks.load_ranks

# File names kernelscope reads as rank traces when given a directory.
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".ksreport.json", ".ksreport.json.gz")


def trace_paths(source) -> list:
    """The trace files ``source`` names: a directory (its ``*.pt.trace.json[.gz]`` and
    ``*.ksreport.json[.gz]`` files, else every ``*.json[.gz]``), a glob pattern, a path, or a
    list of those; sorted, each once.

    >>> trace_paths("ranks")
    ['ranks/rank0.pt.trace.json.gz', 'ranks/rank1.pt.trace.json.gz']
    """
    if isinstance(source, (str, os.PathLike)):
        items = [source]
    elif isinstance(source, (list, tuple, set, frozenset)) or hasattr(source, "__next__"):
        items = list(source)
    else:       # None, a number, a dict...: say what was given, not "object is not iterable"
        raise TraceError(repr(source)[:80], "not a path, a directory, a glob pattern or a list of paths")
    out = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TraceError(repr(item)[:80], "not a path, a directory or a glob pattern")
        p = os.fspath(item)
        if os.path.isdir(p):
            names = sorted(e.name for e in Path(p).iterdir())
            found = [n for n in names if n.endswith(TRACE_SUFFIXES)] or \
                [n for n in names if n.endswith((".json", ".json.gz"))]
            if not found:
                raise TraceError(p, "the directory holds no trace files (*.pt.trace.json[.gz], *.json[.gz])")
            out += [os.path.join(p, n) for n in found]  # noqa: PTH118 - the folder as given (Path drops a "./")
        elif any(ch in p for ch in "*?[") and not os.path.exists(p):
            hits = sorted(glob.glob(p))  # noqa: PTH207 - Path.glob takes no absolute pattern
            if not hits:
                raise TraceError(p, "no file matches this pattern")
            out += hits
        else:
            out.append(p)
    if not out:
        raise TraceError(repr(source)[:80], "no trace files given")
    return list(dict.fromkeys(out))


def summarise(path):
    """Read one rank's trace and summarise it (what runs on a worker): a ``RankSummary``, or
    the TraceError that says why the file cannot be read, returned rather than raised so that
    one bad rank does not lose the others.

    >>> summarise("ranks/rank1.pt.trace.json.gz").info["rank"]
    1
    """
    from kernelscope.analysis.ranks import rank_summary
    from kernelscope.loading import load
    try:
        return rank_summary(load(path), source=path)
    except TraceError as e:
        return e
    except Exception as e:  # noqa: BLE001 - a reader bug or MemoryError costs this rank, not the run
        return TraceError(os.fspath(path), f"could not be read ({type(e).__name__}: {str(e)[:200]})")


def load_ranks(source, client=None, *, workers=None):
    """Open the traces of a distributed run's ranks as one :class:`~kernelscope.reports.ranks.RankReport`.

    ``source`` is a directory of per-rank traces, a glob pattern or a list of paths (Kineto
    traces of ``torch.profiler`` or ``ks.profile``, or saved reports). Each rank is read and
    summarised apart: in ``workers`` processes of its own (default: one per CPU, at most one per
    trace; ``workers=1`` reads in this process; safe in a script without a ``__main__`` guard), or on a Dask cluster when
    ``client`` (a ``dask.distributed.Client``) is given; then every worker must be able to open
    the paths (a shared file system). A trace without rank information reads as rank 0 (or the
    rank its file name gives, ``rank3.json``). A file that cannot be read is left out and named
    in ``rep.notes``; if none can be read, TraceError.

    >>> rep = ks.load_ranks("ranks")
    >>> from dask.distributed import Client, LocalCluster
    >>> rep = ks.load_ranks("traces/", client=Client(LocalCluster()))   # doctest: +SKIP
    """
    from kernelscope.analysis.ranks import assign_ranks
    from kernelscope.loading import load
    from kernelscope.reports.ranks import RankReport
    paths = trace_paths(source)
    results, notes = _run(paths, client, workers)
    good = []
    for path, res in zip(paths, results):
        if isinstance(res, TraceError):
            notes.append(f"left out {res}")
        else:
            good.append((path, res))
    if not good:
        first = next(r for r in results if isinstance(r, TraceError))
        raise TraceError(first.source, first.problem if len(paths) == 1 else
                         f"{first.problem} (and none of the other {len(paths) - 1} traces could be read either)")
    ranks, rank_notes = assign_ranks([s.info for _, s in good], [p for p, _ in good])
    for (_, s), r in zip(good, ranks):
        s.info["rank"] = r
    opener = load if client is None else _ClusterOpener(client)
    return RankReport([s for _, s in good], notes=notes + rank_notes, opener=opener)


def _run(paths, client, workers) -> tuple[list, list]:
    """Each path's summary (or TraceError), in order, and notes on how they were read."""
    if client is not None:
        # Each worker reads and summarises its share; only the summaries are gathered.
        futures = client.map(summarise, paths, pure=False)
        return client.gather(futures), []
    n = min(len(paths), workers or os.cpu_count() or 1)
    if n <= 1:
        return [summarise(p) for p in paths], []
    return _in_processes(paths, n)


def _in_processes(paths, n: int) -> tuple[list, list]:
    """:func:`summarise` each path in ``n`` worker processes started as ``python -c`` (as the split
    trace reader starts its own): they import kernelscope, not the caller's ``__main__``, which
    multiprocessing's forkserver and spawn run again, so that a script with ``load_ranks`` at its
    top level and no ``if __name__ == "__main__":`` guard would start it again in every worker.
    Each worker pickles its summaries into a folder of ours; the path a worker died on (out of
    memory, killed) is left out with a note, never read again here (it would kill this process
    too); the paths it had not started are read here, with a note."""
    import shutil
    import subprocess
    import sys
    import tempfile
    folder = tempfile.mkdtemp(prefix="kernelscope-ranks-")
    root = str(Path(os.path.abspath(__file__)).parents[1])
    code = f"import sys; sys.path.insert(0, {root!r}); from kernelscope.loading import rank_worker; rank_worker()"
    # The workers do no linear algebra: one BLAS/OpenMP thread each, not one per CPU.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = []
    try:
        for k, share in enumerate(_shares(paths, n)):
            job = msgspec.json.encode({"paths": {str(i): os.fspath(paths[i]) for i in share}, "folder": folder,
                                       "processes": n}).decode()
            with Path(folder, f"worker{k}.err").open("wb") as err:
                procs.append((share, subprocess.Popen([sys.executable, "-c", code, job], stdin=subprocess.DEVNULL,
                                                      stdout=subprocess.DEVNULL, stderr=err, env=env)))
        for _, p in procs:
            p.wait()
        results: list = [None] * len(paths)
        notes: list = []
        for k, (share, p) in enumerate(procs):
            lost = [i for i in share if not _take(results, i, folder)]
            if not lost:
                continue
            why = _last_line(Path(folder, f"worker{k}.err")) or f"exit status {p.returncode}"
            died = [i for i in lost if Path(folder, f"{i}.started").exists()]
            for i in died:
                results[i] = TraceError(os.fspath(paths[i]), f"its reader process died ({why})")
            rest = [i for i in lost if i not in died]
            if rest:
                notes.append(f"a reader process failed ({why}); {len(rest)} trace(s) read in this process instead")
            for i in rest:
                results[i] = summarise(paths[i])
        return results, notes
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _take(results: list, i: int, folder: str) -> bool:
    """Put path ``i``'s pickled summary from ``folder`` into ``results``; False if none came back."""
    import pickle
    try:
        with Path(folder, f"{i}.pickle").open("rb") as f:
            results[i] = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return False
    return True


def _shares(paths, n: int) -> list:
    """``paths``' indices in ``n`` shares of about equal bytes (the largest file first to the
    lightest share), as reading time goes with size.

    >>> _shares(["a", "b", "c"], 2)   # no such files: equal sizes
    [[0, 2], [1]]
    """
    def size(p):
        try:
            return Path(p).stat().st_size
        except OSError:
            return 0
    order = sorted(range(len(paths)), key=lambda i: -size(paths[i]))
    shares, loads = [[] for _ in range(n)], [0] * n
    for i in order:
        k = loads.index(min(loads))
        shares[k].append(i)
        loads[k] += size(paths[i]) or 1
    return [sorted(s) for s in shares if s]


def _last_line(path: Path) -> str:
    try:
        with path.open(errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def rank_worker() -> None:
    """A ``load_ranks`` worker process: summarise the job's paths (``sys.argv[1]``, JSON), each
    pickled into the job's folder as ``INDEX.pickle`` once done."""
    import pickle
    import signal
    import sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the parent stops us (Ctrl-C reaches us too)
    job = msgspec.json.decode(sys.argv[1])
    share_cpus(int(job["processes"]))
    for index, path in job["paths"].items():
        Path(job["folder"], f"{index}.started").touch()     # so that a death is pinned on this path
        result = summarise(path)
        target = Path(job["folder"], f"{index}.pickle")
        part = target.with_name(target.name + ".part")
        with part.open("wb") as out:
            pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        part.replace(target)        # whole before the parent reads it


def share_cpus(processes: int) -> None:
    """In each of ``processes`` workers: read a large trace with this worker's share of the
    CPUs (trace/split.py starts reader processes of its own), not with every CPU each; a
    ``KERNELSCOPE_READ_WORKERS`` the user set stands.

    >>> share_cpus(os.cpu_count() or 1); os.environ["KERNELSCOPE_READ_WORKERS"]   # doctest: +SKIP
    '0'
    """
    if "KERNELSCOPE_READ_WORKERS" not in os.environ:
        os.environ["KERNELSCOPE_READ_WORKERS"] = str(max(0, (os.cpu_count() or 1) // processes - 1))


class _ClusterOpener:
    """Opens one rank's full report on the cluster (where its trace lies) for ``rep.rank(r)``."""

    def __init__(self, client):
        self.client = client

    def __call__(self, path):
        from kernelscope.loading import load
        return self.client.submit(load, path, pure=False).result()
