"""Reading Triton Proton's PC-sampling profile (``.hatchet``) into per-kernel stall counts.

``triton.profiler.start(name, backend="cupti", mode="pcsampling")`` samples warp program counters
of every kernel in the process (Triton's and any other) and ``finalize()`` writes ``name.hatchet``:
a JSON list ``[tree, device info]`` whose tree has one ``ROOT`` child per kernel (frame name = the
kernel's mangled symbol; deeper children, where Proton resolves them, are its source lines) with
the metrics ``count`` (launches), ``num_samples``, ``num_stalled_samples``, ``stalled_<reason>``
and ``time (ns)``.

>>> counts = read_hatchet("counters/proton_workload.hatchet")
>>> counts[["name", "launches", "stalled_long_scoreboard"]]
                                      name  launches  stalled_long_scoreboard
0  at::cuda::(anonymous namespace)::spi...         1                      0.0
1  void at::native::reduce_kernel<512, ...         1                  56237.0
2  void at::native::vectorized_elementw...         1                 101979.0
3  void at::native::(anonymous namespac...         1                  84663.0
4  nvjet_sm90_tst_320x128_64x3_1x2_h_bz...         2                  88634.0
"""
from __future__ import annotations

import os

import msgspec
import pandas as pd

from kernelscope.errors import TraceError
from kernelscope.jsonable import num, whole
from kernelscope.trace.demangle import demangle


def read_hatchet(source, *, name=None) -> pd.DataFrame:
    """Per-kernel rows of a Proton ``.hatchet`` file (a path or its decoded JSON): ``name``
    (demangled), ``symbol`` (as Proton recorded it), ``device``, ``launches``, ``time_us``,
    ``num_samples`` and one ``stalled_<reason>`` count column per reason Proton reported.
    Raises :class:`~kernelscope.TraceError` for a file that is not a Proton profile.
    """
    if isinstance(source, (str, os.PathLike)):
        label = name or os.fspath(source)
        from kernelscope.trace.files import read_bytes
        try:
            doc = msgspec.json.decode(read_bytes(source))
        except (msgspec.DecodeError, RecursionError) as e:
            raise TraceError(label, f"not valid JSON ({e})") from None
    else:
        label, doc = name or "<hatchet>", source
    tree = doc[0] if isinstance(doc, list) and doc else doc
    if not isinstance(tree, dict) or not isinstance(tree.get("children", []), list) or "frame" not in tree:
        raise TraceError(label, "not a Proton profile: expected [tree, device info] with a ROOT frame")
    rows = []
    for node in tree.get("children") or []:
        if not isinstance(node, dict):
            continue
        frame = node.get("frame") if isinstance(node.get("frame"), dict) else {}
        metrics = node.get("metrics") if isinstance(node.get("metrics"), dict) else {}
        sym = str(frame.get("name", ""))
        if not sym:
            continue
        m = _sum_metrics(node) if not any(k.startswith("stalled_") for k in metrics) else metrics
        row = {"name": demangle(sym), "symbol": sym, "device": whole(m.get("device_id")),
               "launches": whole(m.get("count")), "time_us": _num(m.get("time (ns)")) / 1000.0,
               "num_samples": _num(m.get("num_samples"))}
        for k, v in m.items():
            if isinstance(k, str) and k.startswith("stalled_"):
                row[k] = _num(v)
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["name", "symbol", "device", "launches", "time_us", "num_samples"])
    out = pd.DataFrame(rows)
    stall = [c for c in out.columns if c.startswith("stalled_")]
    out[stall] = out[stall].fillna(0.0)
    return out


def _sum_metrics(node) -> dict:
    """A kernel node's metrics summed over its children (Proton may keep them per source line)."""
    total = dict(node.get("metrics") or {})
    stack = list(node.get("children") or [])
    while stack:
        c = stack.pop()
        if not isinstance(c, dict):
            continue
        for k, v in (c.get("metrics") or {}).items():
            if isinstance(k, str) and k.startswith("stalled_") or k in ("num_samples",):
                total[k] = _num(total.get(k)) + _num(v)
        stack.extend(c.get("children") or [])
    return total


def _num(v) -> float:
    # a sample count: what is not a finite number counts none
    return num(v) or 0.0
