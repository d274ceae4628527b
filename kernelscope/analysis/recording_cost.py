"""What the recording itself adds to the host's time, so that host-side advice is priced for the
run without the profiler.

torch.profiler records every CPU op (with shapes and FLOPs) and CUPTI a callback per runtime call:
a step that launches many small kernels runs about twice as slowly recorded as not (seven
host-paced steps on an H200, benchmarks/advice: profiled / unprofiled 2.1-2.6x). The time the
host-side rules put at stake (launch-bound, host-bound, GPU idle) is the idle the host caused,
less what the recording added to it: a kernel launch and a CPU op cost these many microseconds
more recorded than not. Fitted on those steps (profiled minus unprofiled step time against
launches and ops; benchmarks/advice/README.md), the same order as the capture benchmark's
13.5 us against 9.9 us bare per launch (benchmarks/README.md).
"""
from __future__ import annotations

import numpy as np

from kernelscope.analysis.distinct import by_distinct

# What recording adds per kernel launch call (CUPTI's callback and activity record) and per CPU op
# (torch.profiler's record with shapes and FLOPs), H200 host, torch 2.11.
PROFILER_US_PER_LAUNCH = 5.0
PROFILER_US_PER_OP = 3.0
# Runtime calls that launch GPU work (each paid the per-launch cost).
_LAUNCH_WORDS = ("Launch", "Memcpy", "Memset")


def recording_added_us(report, start_us=None, end_us=None) -> dict:
    """The host time the recording added between ``start_us`` and ``end_us`` (the whole trace
    when None): ``{"launches", "ops", "added_us"}``. A ``--lean`` recording has no CPU ops,
    so only its launches count.

    >>> r = ks.load("launch_bound.pt.trace.json.gz")
    >>> {k: round(v) for k, v in recording_added_us(r).items()}
    {'launches': 2000, 'ops': 2000, 'added_us': 16000}
    """
    rt, ops = report.runtime, report.ops
    # Once per distinct name (a 1M-event trace has ~400k calls of a few names: str.contains on each
    # cost 0.1 s of the first display).
    n_launch = _count(rt, start_us, end_us, by_distinct(rt["name"], lambda n: any(w in str(n) for w in _LAUNCH_WORDS),
                                                        bool, False) if len(rt) else None)
    n_ops = _count(ops, start_us, end_us, _not_annotation(ops))
    return {"launches": n_launch, "ops": n_ops,
            "added_us": n_launch * PROFILER_US_PER_LAUNCH + n_ops * PROFILER_US_PER_OP}


def _not_annotation(ops):
    if not len(ops) or "cat" not in ops.columns:
        return None
    return ~by_distinct(ops["cat"], lambda c: "annotation" in str(c), bool, False)


def _count(df, start_us, end_us, keep) -> int:
    if df is None or not len(df):
        return 0
    s = df["start_us"].to_numpy(float)
    m = np.ones(len(s), dtype=bool) if keep is None else np.array(keep, dtype=bool)
    if start_us is not None:
        m &= s >= start_us
    if end_us is not None:
        m &= s <= end_us
    return int(m.sum())
