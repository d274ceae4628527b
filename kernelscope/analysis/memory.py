"""GPU memory from torch's caching allocator: the peak, what held it, the curve, growth per step.

The input is a table of the allocator's events (the Trace's ``memory`` table: torch.profiler's
``profile_memory`` "[memory]" events; or an allocator history snapshot read by
:mod:`kernelscope.trace.memory_snapshot`), one row per block allocated (``bytes`` > 0) or freed
(< 0), each with the allocator's ``total_allocated`` and ``total_reserved`` after it.

- The peak is the highest ``total_allocated`` (and ``total_reserved``) of one device.
- What held it: the blocks allocated and not yet freed at that instant, grouped by the op and
  Python line that allocated them. Blocks allocated before the recording began have no event:
  their bytes are the allocated total before the first event (``before_bytes``), told as one
  row, "allocated before the recording" (weights, optimizer state, data loaded earlier).
- The curve: allocated and reserved over time, at most ``max_points`` points, the peak kept.
- Growth per step (given each step's start and end): allocated at each step's end; a leak is
  that rising step over step, with the blocks allocated in the steps and never freed.
- Fragmentation: reserved above allocated at the peak (the allocator's cached, unused bytes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelscope.trace.model import float_values
from kernelscope.units import fmt_bytes

# Ops that only allocate: a block is named by the op around them (aten::empty_strided inside
# aten::_to_copy inside aten::to is the "to"'s block). Climbed only where the ops' tree is given.
# (aten::_to_copy is named by its aten::to; aten::to itself is a call the user wrote.)
ALLOC_OPS = frozenset({"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
                       "aten::new_empty_strided", "aten::resize_", "aten::_to_copy", "aten::empty_permuted"})
MAX_POINTS = 1000
# Where a live recording's memory table came from (meta["memory_history"]["used"], capture/memory.py):
# torch.profiler's events with the allocator history's lines, or the history's own rows.
SOURCE_OF_HISTORY = {"lines": "profile_memory + allocator history", "table": "allocator history"}
BEFORE = "allocated before the recording"
# A leak: allocated at the step ends rises in at least this share of the steps, by this much in all.
LEAK_RISING_SHARE = 0.8
LEAK_MIN_BYTES = 16 * 2**20
LEAK_MIN_STEPS = 3


@dataclass
class MemoryAnalysis:
    """What the allocator's events say about one device's memory (:func:`memory_analysis`)."""

    source: str                  # "profile_memory" (a trace) or "allocator history" (a snapshot)
    device: str                  # e.g. "cuda:0"
    events: int                  # allocator events of this device
    peak_bytes: int              # allocated at the peak
    peak_us: float               # when
    reserved_at_peak: int
    peak_reserved: int           # the highest reserved (may come later than the allocated peak)
    before_bytes: int            # allocated before the first event (held by no recorded op)
    held: pd.DataFrame           # what held the peak: op, source, blocks, bytes, share
    series: pd.DataFrame         # time_us, allocated, reserved (bounded, the peak kept)
    steps: pd.DataFrame = field(default_factory=pd.DataFrame)   # step, start_us, end_us, allocated_end, growth
    leak: dict | None = None
    fragmentation: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"MemoryAnalysis({self.device}: peak {fmt_bytes(self.peak_bytes)} allocated at "
                f"{self.peak_us:.0f} us, {fmt_bytes(self.reserved_at_peak)} reserved; {len(self.held)} holders)")

    def to_dict(self) -> dict:
        """Plain data (the payload's and the findings' figures)."""
        return {"source": self.source, "device": self.device, "events": self.events,
                "peak_bytes": self.peak_bytes, "peak_us": self.peak_us,
                "reserved_at_peak": self.reserved_at_peak, "peak_reserved": self.peak_reserved,
                "before_bytes": self.before_bytes, "held": self.held.to_dict("records"),
                "leak": self.leak, "fragmentation": self.fragmentation}


def device_events(mem: pd.DataFrame, device: str | None = None) -> tuple:
    """``(label, rows)``: the allocator events of one device in time order (the GPU with the
    highest allocated total unless ``device`` names one; ``"cpu"``, torch's CPU allocator, where
    the table holds no GPU event or ``device`` asks for it), or ``(None, empty)``.

    >>> t = ks.load("training/lm_steps.pt.trace.json.gz").trace
    >>> label, ev = device_events(t.memory); label, len(ev)
    ('cuda:0', 8592)
    """
    if not len(mem):
        return None, mem
    m = mem[(mem["name"] == "[memory]").to_numpy() & mem["total_allocated"].notna().to_numpy()
            & mem["bytes"].notna().to_numpy()]
    cpu = (m["device_type"].fillna(-1) == 0).to_numpy()
    if device == "cpu" or (device is None and cpu.all()):
        m = m[cpu]   # torch's CPU allocator (profile_memory on CPU tensors): one device, no index
        labels = pd.Series("cpu", index=m.index)
    else:
        m = m[~cpu]
        labels = "cuda:" + m["device_index"].astype("Int64").astype(str).str.replace("<NA>", "?")
    if not len(m):
        return None, m
    if device is None:
        device = str(m.groupby(labels.to_numpy())["total_allocated"].max().idxmax())
    m = m[(labels == device).to_numpy()]
    order = np.argsort(float_values(m["start_us"]), kind="stable")
    return device, m.iloc[order].reset_index(drop=True)


def holders(ev: pd.DataFrame, ops: pd.DataFrame | None = None, parents=None) -> pd.Series:
    """The op each event's block is named by: its own op, climbed past :data:`ALLOC_OPS` when
    the ops' ``parents`` (``analysis/op_tree``'s column, by row position) are given."""
    op = ev["op"].to_numpy(dtype=object).copy()
    if ops is None or parents is None or "op_index" not in ev.columns:
        return pd.Series(op, dtype=object)
    names = ops["name"].to_numpy(dtype=object)
    parents = np.asarray(parents)
    idx = ev["op_index"].to_numpy(dtype=np.int64, na_value=-1)
    for _ in range(8):     # allocation wrappers nest a few deep at most
        climb = (idx >= 0) & np.isin(op, list(ALLOC_OPS))
        if not climb.any():
            break
        up = parents[idx[climb]]
        idx[climb] = up
        op[climb] = np.where(up >= 0, names[np.maximum(up, 0)], op[climb])
    return pd.Series(op, dtype=object)


def live_mask(nbytes: np.ndarray, address: np.ndarray, upto: int) -> np.ndarray:
    """Which events are allocations made at or before position ``upto`` and not freed at or
    before it (each allocation's block is freed by the next event at its address).

    >>> live_mask(np.array([8, 4, -8, 2]), np.array([1, 2, 1, 3]), 2).tolist()
    [False, True, False, False]
    """
    n = len(nbytes)
    order = np.lexsort((np.arange(n), address))
    nxt = np.full(n, n, dtype=np.int64)       # the next event at the same address, else n
    same = address[order[1:]] == address[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    pos = np.arange(n)
    return (nbytes > 0) & (pos <= upto) & (nxt > upto)


def freed_from_before(nbytes: np.ndarray, address: np.ndarray, upto: int) -> int:
    """Bytes of blocks allocated before the recording (no allocation event of theirs) and freed
    at or before position ``upto``: what the "allocated before" row no longer holds there.

    >>> freed_from_before(np.array([-512, 8, -8, 4]), np.array([7, 1, 1, 2]), 3)
    512
    """
    n = len(nbytes)
    order = np.lexsort((np.arange(n), address))
    prev = np.full(n, -1, dtype=np.int64)     # the previous event at the same address, else -1
    same = address[order[1:]] == address[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    first_is_free = (nbytes < 0) & (prev < 0) & (np.arange(n) <= upto)
    return int(-nbytes[first_is_free].sum())


def _group(ev: pd.DataFrame, mask: np.ndarray, who: pd.Series, before: int, total: int) -> pd.DataFrame:
    """Blocks of ``mask`` grouped by (op, source), largest first, with ``before`` as its own row."""
    cols = ["op", "source", "blocks", "bytes", "share"]
    g = pd.DataFrame({"op": who.to_numpy(dtype=object)[mask],
                      "source": ev["source"].to_numpy(dtype=object)[mask],
                      "bytes": ev["bytes"].to_numpy(dtype=np.int64, na_value=0)[mask]})
    g["op"] = g["op"].fillna("(no op recorded)")
    g["source"] = g["source"].fillna("")
    out = g.groupby(["op", "source"], sort=False).agg(blocks=("bytes", "size"), bytes=("bytes", "sum")).reset_index()
    if before > 0:
        out = pd.concat([out, pd.DataFrame({"op": [BEFORE], "source": [""], "blocks": [0], "bytes": [before]})],
                        ignore_index=True)
    out = out.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)
    out["share"] = out["bytes"] / total if total > 0 else 0.0
    return out[cols]


def downsample(t: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Positions of at most ``max_points`` points of a curve that keep its shape: in each of
    ``max_points / 2`` equal time bins, the lowest and the highest point (so the peak is kept).

    >>> downsample(np.arange(10.0), np.array([0, 5, 1, 9, 2, 3, 8, 1, 0, 4.0]), 4).tolist()
    [0, 3, 6, 8]
    """
    n = len(t)
    if n <= max_points:
        return np.arange(n)
    bins = max(max_points // 2, 1)
    span = t[-1] - t[0]
    b = np.minimum(((t - t[0]) / span * bins).astype(np.int64), bins - 1) if span > 0 else np.zeros(n, np.int64)
    frame = pd.DataFrame({"b": b, "y": y})
    lo = frame.groupby("b")["y"].idxmin().to_numpy()
    hi = frame.groupby("b")["y"].idxmax().to_numpy()
    keep = np.unique(np.concatenate([lo, hi]))
    return keep[np.argsort(t[keep], kind="stable")]


def profiler_steps(ops: pd.DataFrame) -> list:
    """``(name, start_us, end_us)`` of each ``ProfilerStep#N`` range, in order: the steps
    :func:`kernelscope.analysis.steps.step_windows` finds (one way to find steps).

    >>> t = ks.load("training/lm_steps.pt.trace.json.gz").trace
    >>> [name for name, start, end in profiler_steps(t.ops)][:2]
    ['ProfilerStep#3', 'ProfilerStep#4']
    """
    from kernelscope.analysis.steps import step_windows
    w = step_windows(ops)
    return [(str(n), float(a), float(e)) for n, a, e in zip(w["step"], w["start_us"], w["end_us"])]


def step_growth(ev: pd.DataFrame, steps: list, before: int) -> pd.DataFrame:
    """Allocated at each step's end (the last event at or before it; ``before`` if none) and its
    growth over the step (from the previous step's end; the first step's from its start).

    >>> step_growth(pd.DataFrame({"start_us": [1.0, 3.0], "total_allocated": [10, 30]}),
    ...             [("a", 0.0, 2.0), ("b", 2.0, 4.0)], 0)[["step", "allocated_end", "growth"]].values.tolist()
    [['a', 10, 10], ['b', 30, 20]]
    """
    cols = ["step", "start_us", "end_us", "allocated_end", "growth"]
    if not steps:
        return pd.DataFrame({c: [] for c in cols})
    t = float_values(ev["start_us"])
    alloc = ev["total_allocated"].to_numpy(dtype=np.int64, na_value=0)

    def at(time):
        i = int(np.searchsorted(t, time, side="right")) - 1
        return int(alloc[i]) if i >= 0 else int(before)
    names, starts, ends = zip(*steps)
    end_vals = [at(e) for e in ends]
    prev = [at(starts[0])] + end_vals[:-1]
    return pd.DataFrame({"step": list(names), "start_us": list(starts), "end_us": list(ends),
                         "allocated_end": end_vals, "growth": [e - p for e, p in zip(end_vals, prev)]})


def find_leak(ev: pd.DataFrame, steps: pd.DataFrame, who: pd.Series, before: int) -> dict | None:
    """A leak: allocated at the step ends rising in most steps (:data:`LEAK_RISING_SHARE`) by
    :data:`LEAK_MIN_BYTES` or more over :data:`LEAK_MIN_STEPS` steps or more; with the blocks
    allocated inside the steps and still held at the last step's end, by op and line."""
    if len(steps) < LEAK_MIN_STEPS:
        return None
    ends = steps["allocated_end"].to_numpy(dtype=np.int64)
    rises = np.diff(ends)
    total = int(ends[-1] - ends[0])
    rising = int((rises > 0).sum())
    if total < LEAK_MIN_BYTES or rising < LEAK_RISING_SHARE * len(rises):
        return None
    t = float_values(ev["start_us"])
    last = int(np.searchsorted(t, float(steps["end_us"].iloc[-1]), side="right")) - 1
    nbytes = ev["bytes"].to_numpy(dtype=np.int64, na_value=0)
    inside = t >= float(steps["start_us"].iloc[0])
    stay = live_mask(nbytes, ev["address"].to_numpy(dtype=np.int64, na_value=-1), last) & inside
    held = _group(ev, stay, who, 0, int(nbytes[stay].sum()))
    return {"steps": len(steps), "first_step": str(steps["step"].iloc[0]), "last_step": str(steps["step"].iloc[-1]),
            "rising_steps": rising, "total_growth": total, "growth_per_step": total / (len(steps) - 1),
            "stayed_bytes": int(nbytes[stay].sum()), "stayed_blocks": int(stay.sum()),
            "held": held.head(5).to_dict("records")}


def fragmentation(peak: int, reserved: int) -> dict:
    """Reserved above allocated at the peak: the caching allocator's bytes held from the driver
    but not in a tensor. ``flagged`` where that is over 30% of allocated and over 256 MiB.

    >>> fragmentation(2 * 2**30, 3 * 2**30)["flagged"]
    True
    """
    gap = max(int(reserved) - int(peak), 0)
    share = gap / peak if peak > 0 else 0.0
    return {"allocated_bytes": int(peak), "reserved_bytes": int(reserved), "gap_bytes": gap, "gap_share": share,
            "flagged": bool(share > 0.3 and gap > 256 * 2**20),
            "meaning": (f"the allocator held {fmt_bytes(gap)} ({share:.0%} of what tensors used) in cached "
                        "blocks no tensor used at the peak: freed blocks kept for reuse, and pieces of segments "
                        "too small or split for the sizes asked for. Another process or a larger batch cannot "
                        "have it; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow in place "
                        "instead of leaving odd-sized gaps.")}


def memory_analysis(mem: pd.DataFrame, *, ops: pd.DataFrame | None = None, parents=None, steps=None,
                    device: str | None = None, source: str = "profile_memory",
                    max_points: int = MAX_POINTS) -> MemoryAnalysis | None:
    """The peak, what held it, the curve and the growth per step of one device (the GPU with
    the highest peak unless ``device`` names one); None where the table has no GPU events.
    ``steps``: ``(name, start_us, end_us)`` of each step (default: the ops' ProfilerStep ranges).

    >>> t = ks.load("training/lm_steps.pt.trace.json.gz").trace
    >>> m = memory_analysis(t.memory, ops=t.ops)
    >>> m.peak_bytes, m.before_bytes, int(m.held["bytes"].sum())
    (1071864832, 326551040, 1071864832)
    >>> m.held[["op", "source", "bytes"]].head(3)
                                   op               source      bytes
    0  allocated before the recording                       326551040
    1              aten::_log_softmax  record.py(47): step  134217728
    2         aten::nll_loss_backward                       134217728
    """
    label, ev = device_events(mem, device)
    if label is None:
        return None
    alloc = ev["total_allocated"].to_numpy(dtype=np.int64, na_value=0)
    reserved = ev["total_reserved"].to_numpy(dtype=np.int64, na_value=0)
    nbytes = ev["bytes"].to_numpy(dtype=np.int64, na_value=0)
    t = float_values(ev["start_us"])
    p = int(np.argmax(alloc))
    before = max(int(alloc[0] - nbytes[0]), 0)
    who = holders(ev, ops, parents)
    address = ev["address"].to_numpy(dtype=np.int64, na_value=-1)
    live = live_mask(nbytes, address, p)
    # Blocks from before the recording freed before the peak no longer hold it (on the H200 a
    # 512-byte one made the rows sum past the peak).
    still_before = max(before - freed_from_before(nbytes, address, p), 0)
    held = _group(ev, live, who, still_before, int(alloc[p]))
    keep = downsample(t, alloc, max_points)
    series = pd.DataFrame({"time_us": t[keep], "allocated": alloc[keep], "reserved": reserved[keep]})
    if steps is None and ops is not None:
        steps = profiler_steps(ops)
    growth = step_growth(ev, list(steps or []), before)
    return MemoryAnalysis(source=source, device=label, events=len(ev), peak_bytes=int(alloc[p]), peak_us=float(t[p]),
                          reserved_at_peak=int(reserved[p]), peak_reserved=int(reserved.max()), before_bytes=before,
                          held=held, series=series, steps=growth, leak=find_leak(ev, growth, who, before),
                          fragmentation=fragmentation(int(alloc[p]), int(reserved[p])))


def report_memory(rep) -> MemoryAnalysis | None:
    """:func:`memory_analysis` of a report's memory table, ops named through its call tree
    (``Report.memory``); None where the trace has no allocator events. A live recording that
    joined the allocator history (``ks.profile(memory=True)``, :mod:`kernelscope.capture.memory`)
    says so in ``source``.

    >>> report_memory(rep) is None       # the MLP step was recorded without profile_memory
    True
    """
    mem = rep.trace.memory
    if not len(mem):
        return None
    ops = rep.trace.ops
    parents = rep.op_tree["parent"].to_numpy() if len(ops) else None
    joined = rep.trace.meta.get("memory_history")
    used = str(joined.get("used")) if isinstance(joined, dict) else ""
    return memory_analysis(mem, ops=ops, parents=parents, source=SOURCE_OF_HISTORY.get(used, "profile_memory"))
