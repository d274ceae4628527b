"""What a recording can say, by how it was made: a timeline of a run, or a kernel replay.

Nsight Compute (``ks.load_ncu`` without a Kineto report) serializes the launches and replays
each one, flushing caches between passes: its durations are the kernels' own under replay, but
there is no wall time, no idle time, no CPU op and no copy. So a replay's findings are priced
in kernel time (the sum of the replayed durations), and the views leave out the tiles and tabs
that only a timeline fills. This module is the one place that decides it; the views read
:func:`capabilities` (the payload's ``header.capabilities``), the browser does not guess.
"""
from __future__ import annotations

# Who measured a report's kernel durations, in the words every view uses.
CUPTI = "CUPTI"
NSIGHT_COMPUTE = "Nsight Compute"
ORT_PROFILER = "ONNX Runtime's profiler"
# The views' tabs and headline tiles, in their order; a replay shows the ones it can fill.
TABS = ("Kernels", "Timeline", "Backends", "CPU ops", "Roofline", "Findings")
TILES = ("wall time", "GPU busy", "kernel launches", "kernels", "GPU kernel time", "copies + memsets", "CPU ops")
_REPLAY_TABS = ("Kernels", "Backends", "Roofline", "Findings")
_REPLAY_TILES = ("kernel launches", "kernels", "GPU kernel time")


def is_replay(meta) -> bool:
    """True when the report's kernels are an Nsight Compute replay (``ks.load_ncu`` alone), not
    a recorded run: no timeline, no wall time.

    >>> is_replay({"reader": "ncu"}), is_replay({"reader": "kineto"}), is_replay(None)
    (True, False, False)
    """
    return isinstance(meta, dict) and meta.get("reader") == "ncu"


def is_onnxruntime(meta) -> bool:
    """True when the report is an ONNX Runtime profile (``trace/onnxruntime.py``): node runs on
    execution providers, with no runtime calls, so the rules about launches, idle GPU time and
    syncs have nothing to read; its own placement rules do (``findings/placement.py``).

    >>> is_onnxruntime({"producer": "onnxruntime"}), is_onnxruntime({"producer": "jax"})
    (True, False)
    """
    return isinstance(meta, dict) and meta.get("producer") == "onnxruntime"


def duration_source(meta) -> str:
    """Who measured the kernels' durations: ``"Nsight Compute"`` for a replay, ONNX Runtime's
    profiler for its profiles, else ``"CUPTI"``.

    >>> duration_source({"reader": "ncu"}), duration_source({}), duration_source({"producer": "onnxruntime"})
    ('Nsight Compute', 'CUPTI', "ONNX Runtime's profiler")
    """
    if is_onnxruntime(meta):
        return ORT_PROFILER
    return NSIGHT_COMPUTE if is_replay(meta) else CUPTI


def time_base(meta, wall_us, kernel_us) -> tuple:
    """(microseconds, words) the time at stake is a share of: the wall time of a recorded run,
    the sum of kernel durations of a replay (which has no wall time).

    >>> time_base({"reader": "ncu"}, None, 878.6)
    (878.6, 'kernel time')
    >>> time_base({}, 5170.0, 34.0)
    (5170.0, 'wall time')
    """
    if is_replay(meta):
        return kernel_us, "kernel time"
    return wall_us, "wall time"


def capabilities(meta) -> dict:
    """What a report's views show: its ``kind`` (``"replay"`` or ``"run"``), the tabs and tiles
    it can fill, who measured its durations and what its time at stake is a share of.

    >>> c = capabilities({"reader": "ncu"})
    >>> c["kind"], c["timeline"], c["tabs"], c["duration_source"]
    ('replay', False, ['Kernels', 'Backends', 'Roofline', 'Findings'], 'Nsight Compute')
    """
    replay = is_replay(meta)
    return {
        "kind": "replay" if replay else "run",
        "timeline": not replay,
        "tabs": list(_REPLAY_TABS if replay else TABS),
        "tiles": list(_REPLAY_TILES if replay else TILES),
        "duration_source": duration_source(meta),
        "durations": ("kernel durations measured by Nsight Compute under replay: serialized, caches "
                      "flushed between passes, longer than in a live run" if replay
                      else "node times measured by ONNX Runtime's profiler (each node's run on its provider; "
                      "device kernels by the provider's own profiler where it recorded them)"
                      if is_onnxruntime(meta) else "kernel durations measured by CUPTI"),
        "share_of": "kernel time" if replay else "wall time",
        # What "time at stake" is, in the first screen's head: a replay's costs come from Nsight
        # Compute's estimates and its counters, not from a trace.
        "stake": ("kernel time the cause costs under replay (Nsight Compute's estimated speedups, and "
                  "kernelscope's estimates from its counters), and its share of the kernel time" if replay
                  else "GPU time the cause costs (computed by kernelscope from the trace), and its share "
                  "of the wall time"),
    }
