"""Warp stalls sampled live: run code under Triton's Proton PC sampling (``%%kernelprofile --stalls``).

Proton is a second CUPTI client and cannot sample while torch.profiler records (with CUDA before
13.3 CUPTI allows one activity subscriber; the profiler started second records nothing), nor start
at all in a process where torch.profiler has run (``cuptiSubscribe`` fails with error 39, seen on
the H200). So ``%%kernelprofile --stalls`` replays the cell in a new process under Proton
(:func:`kernelscope.capture.ncu_run.replay_stalls`); :func:`sample_stalls` runs code under Proton
in this process, for scripts where no profiler ran before. The stall counts are matched to the
profiled run's kernels by name and land in ``report.stalls`` under the one stall
vocabulary of :mod:`kernelscope.analysis.stalls` (the same table Nsight Compute's import fills),
with ``source`` "Proton PC sampling (sampled live)".

>>> counts, notes, info, error = sample_stalls(step)         # doctest: +SKIP
>>> notes += attach_stalls(rep.trace, counts)                 # doctest: +SKIP
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

SOURCE = "Proton PC sampling (sampled live)"
INSTALL_HINT = "pip install triton (Proton ships with Triton 3.x)"


def unavailable() -> str | None:
    """Why warp stalls cannot be sampled here (no CUDA device, no Proton), or None.

    >>> unavailable()                    # doctest: +SKIP
    'warp stalls need a CUDA device; none was found, so none were sampled'
    """
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return "warp stalls need PyTorch and a CUDA device"
    if not torch.cuda.is_available():
        return "warp stalls need a CUDA device; none was found, so none were sampled"
    try:
        import triton.profiler  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, or triton failing to import on this machine
        return (f"warp stalls were not sampled: Triton's Proton is not available ({type(e).__name__}: "
                f"{str(e)[:200]}); {INSTALL_HINT}")
    return None


def sample_stalls(run, *, keep_path=None):
    """Run ``run()`` once under Proton PC sampling; ``(counts, notes, info, error)``.

    ``counts`` is :func:`kernelscope.trace.proton.read_hatchet`'s table (None when nothing could
    be sampled; ``notes`` say why); ``error`` is the exception ``run()`` raised (Proton is
    finalized and the samples up to it kept first), for the caller to re-raise. ``keep_path``
    also keeps Proton's ``.hatchet`` file there.
    """
    info = {"source": SOURCE}
    why = unavailable()
    if why:
        return None, [why], info, None
    import torch
    import triton.profiler as proton
    notes = []
    from kernelscope.capture.recorder import active
    if active() is not None:
        notes.append("warp stalls were not sampled: a kernelscope recording is running and holds CUPTI")
        return None, notes, info, None
    d = tempfile.mkdtemp(prefix="kernelscope-stalls-")
    base = str(Path(d, "stalls"))
    t0 = time.perf_counter()
    error = None
    try:
        try:
            proton.start(base, backend="cupti", mode="pcsampling")
        except Exception as e:  # noqa: BLE001 - Proton and CUPTI raise several types; each is a note
            notes.append(f"warp stalls were not sampled: Proton PC sampling could not start "
                         f"({type(e).__name__}: {str(e)[:200]}); another tool may hold CUPTI")
            return None, notes, info, None
        try:
            run()
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 - finalize first, then re-raise
            error = e
        finally:
            try:
                proton.finalize()
            except Exception as e:  # noqa: BLE001 - Proton and CUPTI raise several types; the run's error matters more
                notes.append(f"Proton did not finalize cleanly ({type(e).__name__}: {str(e)[:200]})")
        info["run_s"] = time.perf_counter() - t0
        path = base + ".hatchet"
        if not os.path.exists(path):
            notes.append("warp stalls were not sampled: Proton wrote no profile (did the code launch "
                         "any GPU kernel?)")
            counts = None
        else:
            from kernelscope.trace.proton import read_hatchet
            counts = read_hatchet(path)
            if keep_path:
                shutil.copyfile(path, keep_path)
        if error is not None:
            notes.append(f"the stall-sampling run raised {type(error).__name__}: {str(error)[:200]}; its "
                         "samples up to there are kept")
        return counts, notes, info, error
    finally:
        shutil.rmtree(d, ignore_errors=True)


def attach_stalls(trace, counts: pd.DataFrame, info=None) -> list:
    """Match Proton's per-kernel stall counts to ``trace``'s kernels (by demangled name, loosely
    by whitespace) and fill ``trace.stalls``; returns notes on what did not match.

    >>> from kernelscope.trace.proton import read_hatchet
    >>> t = ks.load("counters/proton_workload.pt.trace.json.gz").trace
    >>> attach_stalls(t, read_hatchet("counters/proton_workload.hatchet"))
    []
    """
    from kernelscope.analysis.stalls import stall_shares
    from kernelscope.trace.demangle import name_key
    from kernelscope.trace.model import STALL_COLUMNS, frame

    notes = []
    if counts is None or not len(counts):
        return ["warp stalls: Proton sampled no kernel"]
    names = pd.unique(trace.kernels["name"].astype(str)) if len(trace.kernels) else []
    exact = {n: n for n in names}
    loose = {name_key(n): n for n in names}
    matched = [exact.get(n) or loose.get(name_key(n)) or loose.get(name_key(s))
               for n, s in zip(counts["name"], counts["symbol"])]
    c = counts.assign(name=[m if m is not None else n for m, n in zip(matched, counts["name"])],
                      matched=[m is not None for m in matched])
    stall_cols = [x for x in c.columns if x.startswith("stalled_")]
    if not stall_cols:
        return ["warp stalls: Proton's profile holds no stall counts (was it PC sampling?)"]
    agg = c.groupby("name", sort=False).agg(
        {**{x: "sum" for x in stall_cols}, "launches": "sum", "time_us": "sum", "matched": "any"}).reset_index()
    shares = stall_shares(agg[["name", *stall_cols]], keys=["name"], source=SOURCE)
    shares.insert(4, "launches", agg["launches"].astype("Int64").to_numpy())
    shares["sampled_time_us"] = agg["time_us"].to_numpy()
    shares["in_profiled_run"] = agg["matched"].to_numpy()
    trace.stalls = frame({col: shares[col].tolist() for col in shares.columns}, STALL_COLUMNS)
    only_second = agg.loc[~agg["matched"], "name"].tolist()
    if only_second:
        notes.append(f"{len(only_second)} kernel(s) ran in the stall-sampling run but not in the profiled "
                     f"run: {', '.join(n[:60] for n in only_second[:3])}"
                     + (" ..." if len(only_second) > 3 else "") + " (the second run differed)")
    got = set(agg.loc[agg["matched"], "name"])
    missing = [n for n in names if n not in got]
    if missing:
        notes.append(f"{len(missing)} kernel(s) of the profiled run got no stall samples (too short to be "
                     f"sampled, or absent from the second run): {', '.join(n[:60] for n in missing[:3])}"
                     + (" ..." if len(missing) > 3 else ""))
    meta = dict(info or {})
    meta.update({"source": SOURCE, "kernels_sampled": int(len(agg)), "kernels_matched": int(len(got)),
                 "samples": float(shares["samples"].sum())})
    trace.meta["stalls"] = meta
    return notes
