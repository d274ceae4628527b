"""``ks.load_ranks``: open the traces of every rank of a distributed run as one report.

Each trace is read and summarised where it is processed (a worker of a local process pool, or
of a Dask cluster when a client is given); only the summary (a few small tables) comes back, so
the notebook's memory holds summaries, not 64 ranks' launches. The same function
(:func:`summarise`) runs in both places.
"""
from __future__ import annotations

import glob
import os

from .errors import TraceError

# File names kernelscope reads as rank traces when given a directory.
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".ksreport.json", ".ksreport.json.gz")


def trace_paths(source) -> list:
    """The trace files ``source`` names: a directory (its ``*.pt.trace.json[.gz]`` and
    ``*.ksreport.json[.gz]`` files, else every ``*.json[.gz]``), a glob pattern, a path, or a
    list of those; sorted, each once.

    >>> trace_paths("tests/data/ranks")                      # doctest: +SKIP
    ['tests/data/ranks/rank0.pt.trace.json.gz', 'tests/data/ranks/rank1.pt.trace.json.gz']
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    out = []
    for item in items:
        p = os.fspath(item)
        if os.path.isdir(p):
            names = sorted(os.listdir(p))
            found = [n for n in names if n.endswith(TRACE_SUFFIXES)] or \
                [n for n in names if n.endswith((".json", ".json.gz"))]
            if not found:
                raise TraceError(p, "the directory holds no trace files (*.pt.trace.json[.gz], *.json[.gz])")
            out += [os.path.join(p, n) for n in found]
        elif any(ch in p for ch in "*?[") and not os.path.exists(p):
            hits = sorted(glob.glob(p))
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

    >>> summarise("tests/data/ranks/rank1.pt.trace.json.gz").info["rank"]   # doctest: +SKIP
    1
    """
    from .analysis.ranks import rank_summary
    from .loading import load
    try:
        return rank_summary(load(path), source=path)
    except TraceError as e:
        return e


def load_ranks(source, client=None, *, workers=None):
    """Open the traces of a distributed run's ranks as one :class:`~kernelscope.rank_report.RankReport`.

    ``source`` is a directory of per-rank traces, a glob pattern or a list of paths (Kineto
    traces of ``torch.profiler`` or ``ks.profile``, or saved reports). Each rank is read and
    summarised apart: in a local process pool of ``workers`` processes (default: one per CPU,
    at most one per trace; ``workers=1`` reads in this process), or on a Dask cluster when
    ``client`` (a ``dask.distributed.Client``) is given; then every worker must be able to open
    the paths (a shared file system). A trace without rank information reads as rank 0 (or the
    rank its file name gives, ``rank3.json``). A file that cannot be read is left out and named
    in ``rep.notes``; if none can be read, TraceError.

    >>> rep = ks.load_ranks("traces/")                                   # doctest: +SKIP
    >>> from dask.distributed import Client, LocalCluster                # doctest: +SKIP
    >>> rep = ks.load_ranks("traces/", client=Client(LocalCluster()))   # doctest: +SKIP
    """
    from .analysis.ranks import assign_ranks
    from .loading import load
    from .rank_report import RankReport
    paths = trace_paths(source)
    results = _run(paths, client, workers)
    good, notes = [], []
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


def _run(paths, client, workers) -> list:
    if client is not None:
        # Each worker reads and summarises its share; only the summaries are gathered.
        futures = client.map(summarise, paths, pure=False)
        return client.gather(futures)
    n = min(len(paths), workers or os.cpu_count() or 1)
    if n <= 1:
        return [summarise(p) for p in paths]
    import concurrent.futures
    import multiprocessing
    # forkserver: workers fork from a clean server process (not from a notebook kernel's
    # threads), with kernelscope already imported there, so each starts in milliseconds.
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["kernelscope.ranks", "kernelscope.analysis.ranks"])
    with concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=share_cpus,
                                                initargs=(n,)) as pool:
        return list(pool.map(summarise, paths, chunksize=1))


def share_cpus(processes: int) -> None:
    """In each of ``processes`` pool workers: read a large trace with this worker's share of the
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
        from .loading import load
        return self.client.submit(load, path, pure=False).result()
