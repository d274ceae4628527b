"""The kernel table panel: per kernel name its statistics and launch facts, and the names the
browser's table shows (short name, what the kernel is, why its backend)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kernelscope.analysis.backend_rules import BACKENDS
from kernelscope.analysis.distinct import first_rows, texts_in_order
from kernelscope.trace.counters import DERIVED

# The kernel table's statistics, as rep.summary() names them and every output heads them: the
# durations' total, mean, median, min, max and (sample) standard deviation, in us.
STATISTICS = (("total_us", "total"), ("mean_us", "mean"), ("median_us", "median"), ("min_us", "min"),
              ("max_us", "max"), ("std_us", "std dev"))


@dataclass(frozen=True)
class KernelTable:
    """One row per kernel name, costliest first, with what each launch of it shares.

    ``summary`` is ``rep.summary()`` (launches, total, mean, median, min, max, std dev, share);
    ``facts`` holds, per name, its first launch's short name, occupancy and limiter, and top
    warp stall; ``counters`` the PM-sampled counters time-weighted per kernel (None without
    samples), ``counter_tracks`` which of them, ``counter_source`` what measured them and
    ``counter_interval_us`` how often.
    """
    summary: pd.DataFrame
    distinct: int
    facts: dict
    counters: pd.DataFrame | None
    counter_tracks: tuple
    counter_source: str | None
    counter_interval_us: float | None
    stall_source: str | None

    def top(self, n: int) -> pd.DataFrame:
        """The ``n`` costliest kernels.

        >>> kernel_table(rep, rep.kernels).top(2)["launches"].tolist()
        [4, 2]
        """
        return self.summary.head(n)

    def counter(self, name: str, column: str) -> float | None:
        """Kernel ``name``'s time-weighted ``column`` counter, None where not measured."""
        c = self.counters
        if c is None or name not in c.index:
            return None
        v = c.loc[name, column]
        return None if v != v else float(v)


def kernel_table(rep, k: pd.DataFrame, names: np.ndarray | None = None) -> KernelTable:
    """The kernel table of ``rep`` (``k``: its kernels; ``names``: a row of each kernel name).

    >>> t = kernel_table(rep, rep.kernels)
    >>> t.distinct, t.facts[t.summary["name"].iloc[0]]["short_name"]
    (25, 'foreach mul (multi-tensor)')
    """
    names = first_rows(k["name"]) if names is None and len(k) else names
    facts: dict = {}
    if len(k):
        cols = [c for c in ("name", "short_name", "theoretical_occupancy", "occupancy_limiter", "top_stall")
                if c in k.columns]
        facts = {r["name"]: r for r in k[cols].iloc[names].to_dict("records")}
    tracks: tuple = ()
    counters = source = interval = None
    if len(k) and "tensor_pct" in k.columns and len(getattr(rep, "metrics", ())):
        from kernelscope.analysis.counters import kernel_counters
        tracks = tuple(d for d in DERIVED if d.column in k.columns)
        counters = kernel_counters(k).set_index("name")
        meta = rep.meta.get("counters") if isinstance(rep.meta.get("counters"), dict) else {}
        iv = meta.get("interval_us")
        source = str(meta.get("source") or "CUPTI PM sampling")
        interval = float(iv) if isinstance(iv, (int, float)) and not isinstance(iv, bool) and iv == iv else None
    stall = None
    if "top_stall" in k.columns and len(getattr(rep, "stalls", ())):
        stall = ", ".join(sorted({str(x) for x in rep.stalls["source"].dropna()}))
    return KernelTable(summary=rep.summary(), distinct=int(k["name"].iloc[names].notna().sum()) if len(k) else 0,
                       facts=facts, counters=counters, counter_tracks=tracks, counter_source=source,
                       counter_interval_us=interval,
                       stall_source=stall)


def backend_color(backend) -> str:
    """The colour of a backend label (``analysis/backend_rules.py: BACKENDS``), "other"'s for
    one it does not know.

    >>> backend_color("cuBLAS") == BACKENDS["cuBLAS"], backend_color("??") == BACKENDS["other"]
    (True, True)
    """
    return BACKENDS.get(str(backend), BACKENDS["other"])


def palette() -> dict:
    """Each backend, copy direction and idle cause (as ``"idle: <cause>"``) with the colour every
    view draws it in, from the tables that own them (``analysis/backend_rules.py``,
    ``analysis/timeline.py: CAUSES``).

    >>> palette()["cuBLAS"], palette()["idle: host"]
    ('#4e79a7', '#b22222')
    """
    from kernelscope.analysis.backend_rules import COPY_COLORS
    from kernelscope.analysis.timeline import CAUSES
    return {**BACKENDS, **COPY_COLORS, **{f"idle: {c}": x.solid for c, x in CAUSES.items()}}


def name_table(k: pd.DataFrame) -> list:
    """Per kernel name (in the order of the dictionary sent with the ``name`` column): short name.

    >>> name_table(rep.kernels)[:2]
    ['elementwise bfloat16_copy (vectorized x8)', 'cuBLAS GEMM 128x128 (sm90) [TNT, bias]']
    """
    if not len(k):
        return []
    first = k[["name", "short_name"]].iloc[first_rows(k["name"])]     # k.drop_duplicates("name")
    short = dict(zip(first["name"].astype(str), first["short_name"].astype(str)))
    return [short.get(n, n) for n in texts_in_order(k["name"])]


def name_notes(k: pd.DataFrame) -> list:
    """Per kernel name (same order as :func:`name_table`): what the kernel is in words ("" when
    nothing to add), and why its backend was chosen.

    >>> sorted(name_notes(rep.kernels)[0])
    ['about', 'why']
    """
    if not len(k):
        return []
    from kernelscope.analysis.backend_rules import RULES
    from kernelscope.analysis.names import describe
    why = {r.id: r.why for r in RULES}
    first = k.iloc[first_rows(k["name"])]     # k.drop_duplicates("name")
    info = {str(n): (describe(str(n), b), why.get(r, "")) for n, b, r in
            zip(first["name"], first["backend"], first.get("backend_rule", [""] * len(first)))}
    return [{"about": info[n][0], "why": info[n][1]} for n in texts_in_order(k["name"])]
