"""kernelscope: a GPU profiler that lives in the notebook.

    import kernelscope as ks
    rep = ks.load("run.pt.trace.json.gz")
    rep.summary()

In a notebook: ``%load_ext kernelscope`` then ``%%kernelprofile`` on a cell.
"""
from kernelscope.errors import TraceError

__version__ = "0.1.0"

__all__ = ["Report", "TraceError", "compare", "load", "load_memory", "load_ncu", "load_ranks", "occupancy",
           "profile", "watch_graphs"]


# Imported on first use (PEP 562): ``import kernelscope`` stays light, and a process that only
# needs the trace readers (the split reader's workers, trace/split.py) never imports the report.
_LAZY = {"load": ".loading", "load_ncu": ".loading", "load_memory": ".loading", "Report": ".reports.report",
         "watch_graphs": ".capture.graph_watch"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def occupancy(*args, **kwargs):
    """Theoretical occupancy of a launch, as the CUDA occupancy calculator computes it.

    >>> ks.occupancy(compute_capability=(9, 0), threads_per_block=256,
    ...              registers_per_thread=254, shared_mem_per_block=67584).occupancy
    0.125
    """
    from kernelscope.analysis.occupancy import occupancy as _occupancy
    return _occupancy(*args, **kwargs)


def profile(*args, **kwargs):
    """Record a region of Python code (context manager or decorator); ``prof.report`` after.

    >>> with ks.profile() as prof:          # doctest: +SKIP
    ...     step()
    >>> prof.report                         # doctest: +SKIP
    """
    from kernelscope.capture import profile as _profile
    return _profile(*args, **kwargs)


def load_ranks(source, client=None, **kwargs):
    """Open the per-rank traces of a distributed run as one report across ranks.

    >>> rep = ks.load_ranks("ranks")
    >>> rep.stragglers[["step", "slowest_rank", "lag_us"]]
                 step  slowest_rank      lag_us
    0  ProfilerStep#1             1  52885.9142
    1  ProfilerStep#2             1  52945.0616
    2  ProfilerStep#3             1  53545.9175
    """
    from kernelscope.loading import load_ranks as _load_ranks
    return _load_ranks(source, client=client, **kwargs)


def compare(before, after, **kwargs):
    """Compare two reports (Reports, or paths ``ks.load`` opens): per-kernel time change, new
    and gone kernels, per-backend and overall totals, all per run; each change's 95% interval and
    verdict (real / noise / inconclusive: record both with ``--repeat N`` to measure the noise);
    and the first report's "what to fix first" items re-measured (``.advice``: fixed / partly /
    not, predicted against realized).

    >>> ks.compare(ks.load("launch_bound.pt.trace.json.gz"), "graphs.pt.trace.json.gz")
    kernelscope comparison: launch_bound.pt.trace.json.gz -> graphs.pt.trace.json.gz
      GPU kernel time       1.84 ms ->    2.20 ms     +362.8 us   x1.20
      copy/memset time       0.0 us ->     0.0 us       ±0.0 us       –
      GPU busy (union)      1.84 ms ->    2.20 ms     +362.8 us   x1.20
      GPU active window    25.77 ms ->    2.37 ms     -23.40 ms   x0.09
      wall time            28.49 ms ->    5.50 ms     -22.99 ms   x0.19
    ...
    """
    import os

    from kernelscope.loading import load
    from kernelscope.reports.comparison import compare as _compare
    before, after = (load(x) if isinstance(x, (str, os.PathLike)) else x for x in (before, after))
    return _compare(before, after, **kwargs)


def load_ipython_extension(ipython):
    """``%load_ext kernelscope``: registers ``%%kernelprofile``."""
    from kernelscope.jupyter import load_ipython_extension as _load
    _load(ipython)


def unload_ipython_extension(ipython):
    from kernelscope.jupyter import unload_ipython_extension as _unload
    _unload(ipython)
