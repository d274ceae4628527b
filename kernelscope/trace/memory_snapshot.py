"""torch's allocator history snapshots (``torch.cuda.memory._snapshot()`` pickled, or the file
``torch.cuda.memory._dump_snapshot`` writes) as a memory table like the trace's.

A snapshot is a pickle, and unpickling runs whatever a file asks for. This reader never loads an
object: its unpickler refuses every class and function (:class:`PlainUnpickler`), so only the
plain values pickle writes with its own opcodes come back (dicts, lists, tuples, strings, bytes,
numbers, booleans, None), which is all torch writes into a snapshot.

``device_traces`` hold, per device, the allocator's actions with their stack frames: ``alloc``
(a block handed out), ``free_requested`` (given back by its tensor: torch's allocated count
drops here), ``segment_alloc``/``segment_free`` and ``segment_map``/``segment_unmap`` (reserved
from and returned to the driver). The totals after each action are counted back from the
snapshot's ``segments`` (what was allocated and reserved when it was taken), so that blocks
allocated before the history began are counted too. The history records the size each tensor
asked for; its block, what torch's allocated count adds, is that rounded up to 512 bytes
(:func:`block_size`).
"""
from __future__ import annotations

import io
import pickle

from kernelscope.errors import TraceError
from kernelscope.trace.files import read_bytes
from kernelscope.trace.model import MEMORY_COLUMNS, frame
from kernelscope.trace.sources import is_user_frame

_ALLOCATED = {"alloc": 1, "free_requested": -1}
# The allocator hands out blocks in multiples of this (CUDACachingAllocator's kMinBlockSize): the
# history records the size asked for, the allocated count the block's.
BLOCK_ROUND = 512
_RESERVED = {"segment_alloc": 1, "segment_free": -1, "segment_map": 1, "segment_unmap": -1}


class Refused(pickle.UnpicklingError):
    """A pickle that asks for something a plain snapshot never holds."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that loads no class or function: only pickle's plain values come back."""

    def find_class(self, module, name):
        raise Refused(f"it asks to load {module}.{name}; an allocator snapshot holds only "
                                     "plain values (dicts, lists, strings, numbers), so it is refused unread")

    def persistent_load(self, pid):
        raise Refused("it refers to outside objects (persistent ids); an allocator snapshot has none")


def plain_loads(data: bytes, label: str = "<pickle>"):
    """Unpickle plain values only; anything else is a :class:`~kernelscope.TraceError`.

    >>> plain_loads(pickle.dumps({"segments": [], "device_traces": [[]]}))
    {'segments': [], 'device_traces': [[]]}
    >>> plain_loads(pickle.dumps(print), "evil.pickle")
    Traceback (most recent call last):
    kernelscope.errors.TraceError: evil.pickle: not a plain allocator snapshot: it asks to load builtins.print; ...
    """
    try:
        return PlainUnpickler(io.BytesIO(data)).load()
    except Refused as e:
        raise TraceError(label, f"not a plain allocator snapshot: {e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, MemoryError, RecursionError) as e:
        raise TraceError(label, f"not a readable pickle ({type(e).__name__}: {e})") from None


def read_snapshot(path) -> dict:
    """The snapshot's dict (``segments``, ``device_traces``, ...), read safely.

    >>> sorted(read_snapshot("training/lm_memory.pickle"))[:2]
    ['allocator_settings', 'device_traces']
    """
    label = str(path)
    d = plain_loads(read_bytes(path), label)
    if not isinstance(d, dict) or not isinstance(d.get("device_traces"), list) \
            or not isinstance(d.get("segments"), list):
        raise TraceError(label, "not an allocator snapshot: expected a dict with 'segments' and 'device_traces' "
                                "(torch.cuda.memory._snapshot() after _record_memory_history)")
    if not any(isinstance(t, list) and t for t in d["device_traces"]):
        raise TraceError(label, "the snapshot holds no allocator history: call "
                                "torch.cuda.memory._record_memory_history() before the code it should watch")
    return d


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def frame_names(frames) -> tuple:
    """``(innermost Python frame, innermost user frame)`` of an action's stack (innermost
    first), each as ``file(line): function``; with no Python frame (autograd's backward thread),
    the innermost ATen op the C++ frames name (``at::_ops::mm::call`` -> ``aten::mm``).

    >>> frame_names([{"filename": "??", "line": 0, "name": "c10::alloc"},
    ...              {"filename": "/x/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
    ...              {"filename": "/home/me/train.py", "line": 58, "name": "step"}])
    ('linear.py(125): forward', '/home/me/train.py(58): step')
    """
    py = user = aten = None
    for f in frames if isinstance(frames, list) else ():
        if not isinstance(f, dict):
            continue
        file, line, name = f.get("filename"), f.get("line"), f.get("name")
        if aten is None and isinstance(name, str) and name.startswith("at::_ops::"):
            aten = "aten::" + name[10:].split("::", 1)[0]
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        text = f"{file}({_int(line)}): {name}"
        if py is None:
            py = f"{file.rsplit('/', 1)[-1]}({_int(line)}): {name}"
        if is_user_frame(text):
            user = text
            break
    return py or aten, user


def block_size(size: int) -> int:
    """The allocator's block for a request of ``size`` bytes: rounded up to 512 (the default
    rounding; a block left unsplit can be larger, which the history does not tell).

    >>> block_size(8), block_size(1024), block_size(32896)
    (512, 1024, 33280)
    """
    return max(-(-size // BLOCK_ROUND), 1) * BLOCK_ROUND


def _totals_at_end(segments, device) -> tuple:
    allocated = reserved = 0
    for s in segments:
        if not isinstance(s, dict) or s.get("device") != device:
            continue
        reserved += _int(s.get("total_size"))
        for b in s.get("blocks") or ():
            if isinstance(b, dict) and b.get("state") == "active_allocated":
                allocated += _int(b.get("size"))
    return allocated, reserved


def first_time_us(d: dict) -> int:
    """The time of the snapshot's first action (microseconds since the Unix epoch, as torch
    writes ``time_us``), or 0 where none has one.

    >>> first_time_us(read_snapshot("training/lm_memory.pickle"))
    1796328931614352
    """
    return min((_int(a.get("time_us")) for tr in d["device_traces"] if isinstance(tr, list)
                for a in tr if isinstance(a, dict) and a.get("time_us")), default=0)


def snapshot_table(d: dict, origin_us: float | None = None):
    """The memory table of a snapshot (:func:`read_snapshot`): one row per ``alloc`` and
    ``free_requested`` action of every device, the totals after it, ``op`` the innermost Python
    frame (often torch's own module) and ``source`` the innermost user line; times from
    ``origin_us`` (on the snapshot's clock, microseconds since the Unix epoch: a live recording's
    own time 0), else from the first action.

    >>> t = snapshot_table(read_snapshot("training/lm_memory.pickle")); len(t), int(t["total_allocated"].max())
    (2864, 1069767680)
    """
    cols: dict = {c: [] for c in ("device_index", "start_us", "bytes", "address", "total_allocated",
                                  "total_reserved", "op", "source")}
    t0 = first_time_us(d) if origin_us is None else origin_us
    for device, trace in enumerate(d["device_traces"]):
        if not isinstance(trace, list) or not trace:
            continue
        acts = [a for a in trace if isinstance(a, dict)]
        alloc_end, reserved_end = _totals_at_end(d["segments"], device)
        da = [_ALLOCATED.get(a.get("action"), 0) * block_size(_int(a.get("size"))) for a in acts]
        dr = [_RESERVED.get(a.get("action"), 0) * _int(a.get("size")) for a in acts]
        allocated, reserved = alloc_end - sum(da), reserved_end - sum(dr)
        for a, x, r in zip(acts, da, dr):
            allocated += x
            reserved += r
            if not x:
                continue
            op, src = frame_names(a.get("frames"))
            for c, v in (("device_index", device), ("start_us", float(_int(a.get("time_us")) - t0)), ("bytes", x),
                         ("address", _int(a.get("addr"))), ("total_allocated", allocated),
                         ("total_reserved", reserved), ("op", op), ("source", src)):
                cols[c].append(v)
    n = len(cols["bytes"])
    cols.update(name=["[memory]"] * n, device_type=[1] * n, tid=[None] * n, op_index=[None] * n,
                duration_us=[0.0] * n)
    return frame(cols, MEMORY_COLUMNS)


# Matching a snapshot's allocations to torch.profiler's: how far apart the two clocks may put one
# allocation, after their median difference is taken out (both are torch's approximate clock turned
# into Unix time, each by its own calibration).
MATCH_WINDOW_US = 5000.0
MATCH_TOLERANCE_US = 100.0


def _allocs(t, cols):
    a = t[(t["bytes"].fillna(0) > 0).to_numpy() & (t["device_type"].fillna(-1) == 1).to_numpy()
          & t["address"].notna().to_numpy() & t["start_us"].notna().to_numpy()]
    out = a[cols].copy()
    out["row"] = a.index.to_numpy()
    out["device_index"] = out["device_index"].astype("int64")
    out["address"] = out["address"].astype("int64")
    out["start_us"] = out["start_us"].astype("float64")
    return out.sort_values("start_us", kind="stable")


def _nearest(left, right, tolerance):
    import pandas as pd
    return pd.merge_asof(left, right, on="start_us", by=["device_index", "address"], direction="nearest",
                         tolerance=tolerance, suffixes=("", "_h"))


def match_allocations(mem, hist):
    """For each allocation of torch.profiler's memory table ``mem``, the row of the allocator
    history's table ``hist`` (on the same clock) that is the same allocation, or -1: same device
    and address, nearest in time once the clocks' median offset is taken out (within
    :data:`MATCH_TOLERANCE_US`), and a block at least the size the history asked for.

    >>> import pandas as pd
    >>> m = pd.DataFrame({"device_type": [1, 1, 1], "device_index": [0, 0, 0], "address": [7, 7, 9],
    ...                   "bytes": [1024, -1024, 512], "start_us": [10.0, 20.0, 30.0]})
    >>> h = pd.DataFrame({"device_type": [1, 1], "device_index": [0, 0], "address": [7, 9],
    ...                   "bytes": [1024, 512], "start_us": [12.0, 32.5]})
    >>> match_allocations(m, h).tolist()
    [0, -1, 1]
    """
    import numpy as np
    out = np.full(len(mem), -1, dtype=np.int64)
    cols = ["device_index", "address", "start_us", "bytes"]
    left, right = _allocs(mem.reset_index(drop=True), cols), _allocs(hist.reset_index(drop=True), cols)
    if not len(left) or not len(right):
        return out
    first = _nearest(left, right.assign(t_h=right["start_us"]), MATCH_WINDOW_US)
    offset = float(np.nanmedian(first["t_h"] - first["start_us"])) if first["t_h"].notna().any() else 0.0
    got = _nearest(left, right.assign(start_us=right["start_us"] - offset), MATCH_TOLERANCE_US)
    ok = got["row_h"].notna().to_numpy() & (got["bytes"].to_numpy() >= got["bytes_h"].fillna(np.inf).to_numpy())
    out[got["row"].to_numpy()[ok]] = got["row_h"].to_numpy()[ok].astype(np.int64)
    return out
