"""A Trace straight from a stopped torch.profiler, without going through a trace file.

Two routes, picked by what the installed torch exposes:

- ``in-memory`` (torch >= 2.13): ``kineto_results.trace_activities()`` hands out Kineto's
  activities with their ``metadata_json`` (grid, block, registers, shared memory, stream,
  correlation). We decode each metadata fragment with msgspec into the reader's own ``Args``
  struct and feed :func:`kernelscope.trace.kineto.build_trace`, so both routes share one table
  builder. It leaves the recording intact: ``export_chrome_trace`` still works afterwards.
- ``tmpfs`` (older torch, e.g. 2.11): ``_KinetoEvent`` does not carry grid, block or registers,
  so we let Kineto's C++ writer save the Chrome trace into ``/dev/shm`` (RAM, no disk) and read
  that file as any trace file is read: a large one on several cores (:mod:`kernelscope.trace.split`;
  100k launches, 154 MB: 0.78 s on the H200's 16 cores against 1.49 s from the bytes in one
  process). Kineto allows one save per recording, so afterwards the profiler's own
  ``export_chrome_trace`` refuses; save the Report instead.

Both routes are measured in ``benchmarks/capture_overhead.py``.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import msgspec

from kernelscope.errors import TraceError
from kernelscope.trace.decode import Args, Event, TraceFile, no_gc
from kernelscope.trace.kineto import build_trace, read_kineto
from kernelscope.trace.model import Trace

# Activity types whose correlation id is not an "External id" (the CPU op link); same rule as
# torch's own Chrome exporter (torch/profiler/_chrome_trace_export.py).
_NO_EXTERNAL_ID = {"gpu_memcpy", "gpu_memset", "kernel", "cuda_runtime", "cuda_driver",
                   "privateuse1_runtime", "privateuse1_driver"}
# Below this much free space in /dev/shm Kineto's file goes to the temporary directory instead.
SHM_MIN_FREE = 4 << 30
# Only these categories become tables; skipping the rest early saves decoding their metadata.
_WANTED = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "runtime",
           "driver", "cpu_op", "user_annotation", "operator", "python_function", "cuda_sync",
           "cpu_instant_event"}
# The allocator's "[memory]" events (profile_memory): instants, as Kineto's own export writes them
# ("ph": "i"); the duration these activities report is not theirs.
_INSTANT = "cpu_instant_event"


def kineto_results(prof, name="<live profiler>"):
    """The ``_ProfilerResult`` of a stopped ``torch.profiler.profile`` (or autograd profile).

    >>> kineto_results(prof).trace_start_ns()             # doctest: +SKIP
    """
    inner = getattr(prof, "profiler", prof)  # torch.profiler.profile wraps an autograd profile
    kr = getattr(inner, "kineto_results", None) if inner is not None else None
    if kr is None:
        raise TraceError(name, "the profiler holds no results yet: stop it first "
                               "(leave its `with` block or call prof.stop())")
    return kr


def route(kr) -> str:
    """Which route :func:`trace_from_profiler` takes for these results: ``in-memory`` or ``tmpfs``."""
    return "in-memory" if hasattr(kr, "trace_activities") else "tmpfs"


def trace_from_profiler(prof, *, name="<live profiler>", force_route=None, trace_path=None) -> Trace:
    """Build a :class:`~kernelscope.trace.model.Trace` from a stopped torch.profiler.

    ``trace_path`` also writes Kineto's Chrome trace there (gzip if it ends in ``.gz``), for
    Perfetto or a later ``ks.load``.

    >>> with torch.profiler.profile() as p:                 # doctest: +SKIP
    ...     torch.ones(4) * 2
    >>> trace_from_profiler(p).ops["name"].tolist()[:1]     # doctest: +SKIP
    ['aten::ones']
    """
    kr = kineto_results(prof, name)
    how = force_route or route(kr)
    if how == "in-memory":
        trace = _from_activities(kr, name)
        written = _write(lambda: _saved_json(kr, name), trace_path)
    else:
        with _saved_file(kr, name) as path:
            trace = read_kineto(path, name=name)
            written = _write(lambda: Path(path).read_bytes(), trace_path)
    trace.meta["capture_route"] = how
    if isinstance(written, str):
        # The recording is kept either way; a trace file that could not be written is a note.
        trace.meta.setdefault("notes", []).append(written)
    elif written:
        trace.meta["raw_trace"] = os.path.abspath(os.fspath(trace_path))
    return trace


def _write(make_raw, path):
    """Write the Chrome trace to ``path`` (None: nothing to do): True, or why it failed."""
    import gzip

    from kernelscope.trace.files import own_trace, write_file
    if path is None:
        return False
    path = os.fspath(path)
    raw = make_raw()
    if path.endswith(".gz"):
        raw = gzip.compress(raw, compresslevel=6)
    try:
        write_file(path, raw)
    except OSError as e:
        return f"the Chrome trace could not be written to {path} ({e.strerror or e})"
    own_trace(path)
    return True


def _saved_json(kr, name) -> bytes:
    """Kineto's own Chrome-trace JSON for these results (:func:`_saved_file`'s text)."""
    with _saved_file(kr, name) as path:
        return Path(path).read_bytes()


@contextlib.contextmanager
def _saved_file(kr, name):
    """The path of Kineto's own Chrome-trace JSON for these results, written to RAM
    (``/dev/shm``) and removed when the block ends."""
    fd, path = tempfile.mkstemp(prefix="kernelscope-", suffix=".json", dir=_save_dir())
    os.close(fd)
    try:
        try:
            kr.save(path)
        except RuntimeError as e:
            if "already saved" in str(e):
                raise TraceError(name, "this recording was already exported once (Kineto allows "
                                       "one export per recording); open the exported file with "
                                       "ks.load(path) instead") from None
            raise
        yield path
    finally:
        try:
            Path(path).unlink()
        except OSError:
            pass


def _save_dir():
    """``/dev/shm`` (RAM) where it has room, else the temporary directory: a container's
    ``/dev/shm`` is often 64 MB, and Kineto, which allows one save per recording, would cut the
    file there (100k launches write 154 MB)."""
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
    except OSError:
        return None
    if not os.access(shm, os.W_OK) or st.f_bavail * st.f_frsize < SHM_MIN_FREE:
        return None
    return shm


def _from_activities(kr, name) -> Trace:
    decode = msgspec.json.Decoder(Args).decode
    empty = Args()
    notes = []
    bad_meta = 0
    with no_gc():
        acts = kr.trace_activities()
        wanted = [a for a in acts if a.type() in _WANTED]
        # The region starts when the profiler started (what Kineto's own export uses).
        base = min([kr.trace_start_ns()] + [a.timestamp() for a in wanted])
        events = []
        t_end = base
        for a in wanted:
            cat = a.type()
            ts, dur = a.timestamp(), (0 if cat == _INSTANT else a.duration())
            if (dur > 0 or cat == _INSTANT) and ts + dur > t_end:
                t_end = ts + dur
            md = a.metadata_json()
            args = None
            if md:
                args = _args(decode, md)
                if args is None:
                    bad_meta += 1
            ext = a.linked_correlation_id() or (a.correlation_id() if cat not in _NO_EXTERNAL_ID else 0)
            if ext:
                if args is None:
                    args = Args(external_id=ext)
                elif args.external_id is None:
                    args.external_id = ext
            events.append(Event(ph="i" if cat == _INSTANT else "X", name=a.name(), cat=cat, pid=a.device_id(),
                                tid=a.resource_id(),
                                ts=(ts - base) / 1000.0, dur=max(dur, 0) / 1000.0, args=args or empty))
        if events:
            # The span event torch's exporters write: the recorded region's extent.
            events.append(Event(ph="X", name="PyTorch Profiler (0)", cat="Trace", pid="Spans",
                                tid="PyTorch Profiler", ts=0.0, dur=(t_end - base) / 1000.0))
        if bad_meta:
            notes.append(f"ignored unreadable metadata of {bad_meta} activity(ies)")
        doc = TraceFile(traceEvents=events, deviceProperties=_device_properties(),
                        baseTimeNanoseconds=base, schemaVersion=1,
                        cuda_runtime_version=_cuda_version(), **_flags(kr))
        if not events:
            raise TraceError(name, "the profiler recorded nothing (was the region empty?)")
        return build_trace(doc, name, notes)


def _flags(kr):
    """``record_shapes``/``with_flops`` header flags, when torch tells the config (else unknown)."""
    return {}


def _args(decode, md: str):
    """The reader's ``Args`` from one activity's metadata fragment, or None if unreadable."""
    raw = b"{" + md.encode("utf-8", "surrogatepass") + b"}"
    try:
        return decode(raw)
    except msgspec.ValidationError:
        pass  # a field of an unexpected type: convert leniently, as the file reader does
    except msgspec.DecodeError:
        return None
    try:
        return msgspec.convert(msgspec.json.decode(raw), Args, strict=False)
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError):
        return None


def _torch():
    import sys
    return sys.modules.get("torch")


def _device_properties():
    """Kineto's ``deviceProperties`` header, from torch.cuda (only if CUDA is already in use)."""
    torch = _torch()
    if torch is None or not torch.cuda.is_initialized():
        return None
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        g = lambda k, d=None, p=p: getattr(p, k, d)  # noqa: E731 - field names vary across torch versions
        out.append({
            "id": i, "name": p.name, "totalGlobalMem": p.total_memory,
            "computeMajor": p.major, "computeMinor": p.minor,
            "maxThreadsPerBlock": g("max_threads_per_block"),
            "maxThreadsPerMultiprocessor": g("max_threads_per_multi_processor"),
            "regsPerBlock": g("regs_per_block", g("regs_per_multiprocessor")),
            "regsPerMultiprocessor": g("regs_per_multiprocessor"), "warpSize": g("warp_size"),
            "sharedMemPerBlock": g("shared_memory_per_block"), "numSms": p.multi_processor_count,
            "sharedMemPerBlockOptin": g("shared_memory_per_block_optin"),
            "sharedMemPerMultiprocessor": g("shared_memory_per_multiprocessor"),
        })
    return out


def _cuda_version():
    torch = _torch()
    v = getattr(getattr(torch, "version", None), "cuda", None) if torch is not None else None
    if not v:
        return None
    major, _, minor = v.partition(".")
    try:
        return int(major) * 1000 + int(minor or 0) * 10
    except ValueError:
        return None
