"""RankReport: one report across the ranks of a distributed run (``ks.load_ranks``).

It is built from per-rank summaries (:mod:`kernelscope.analysis.ranks`), not from every rank's
launches, so that 64 ranks' traces can be summarised where they lie and only the summaries
come to the notebook. Every table has a ``rank`` column. ``rep.rank(r)`` opens one rank's full
:class:`~kernelscope.Report` when the launches of that rank are wanted (``ks.compare`` of two
ranks uses it).
"""
from __future__ import annotations

from functools import cached_property

import pandas as pd

from kernelscope.analysis.ranks import combine


class RankReport:
    """Many ranks of one run: per-rank summary, stragglers, collectives, overlap and findings.

    >>> import kernelscope as ks
    >>> rep = ks.load_ranks("ranks")
    >>> rep.stragglers[["step", "slowest_rank", "lag_us"]]
                 step  slowest_rank      lag_us
    0  ProfilerStep#1             1  52885.9142
    1  ProfilerStep#2             1  52945.0616
    2  ProfilerStep#3             1  53545.9175
    >>> ks.compare(rep.rank(0), rep.rank(1))
    kernelscope comparison: rank 0 -> rank 1
      GPU kernel time       3.34 ms ->  166.11 ms    +162.77 ms  x49.72
      copy/memset time      8.84 ms ->    8.94 ms      +93.7 us   x1.01
      GPU busy (union)     11.55 ms ->  174.38 ms    +162.83 ms  x15.10
      GPU active window   307.76 ms ->  308.28 ms     +523.2 us   x1.00
      wall time           309.99 ms ->  309.87 ms     -121.1 us   x1.00
    ...
    """

    def __init__(self, summaries, *, notes=(), opener=None):
        self.summaries = sorted(summaries, key=lambda s: s.info["rank"])
        self._t = combine(self.summaries)
        self._opener = opener
        self.meta = {"notes": [*notes, *self._t.notes], "origin_ns": self._t.origin_ns,
                     "world_size": _world(self.summaries)}

    # -- tables --------------------------------------------------------------------------
    @property
    def ranks(self) -> pd.DataFrame:
        """One row per rank: host, device, steps, compute, communication (exposed and hidden),
        launches, its own top finding and its trace file."""
        return self._t.ranks

    @property
    def steps(self) -> pd.DataFrame:
        """One row per rank and step: span on the common clock, compute, communication,
        exposed communication and work (step time less exposed communication)."""
        return self._t.steps

    @property
    def stragglers(self) -> pd.DataFrame:
        """One row per step: the slowest rank (most work), by how much it lags the median of
        the others (``lag_us``, ``lag_share`` of the step) and the fastest rank."""
        return self._t.stragglers

    @property
    def collectives(self) -> pd.DataFrame:
        """One row per rank and collective call: kind, bytes, data type, group, algorithm and
        protocol (NCCL), algorithm and bus bandwidth, the matching ``call`` on the other ranks,
        the rank that arrived last, the arrival skew and the bus bandwidth against the link."""
        return self._t.collectives

    @property
    def overlap(self) -> pd.DataFrame:
        """Per rank: compute, communication, the part of communication compute hides, and the
        exposed rest."""
        return self._t.overlap

    @property
    def lanes(self) -> dict:
        """Per rank, per kind (``compute``, ``comm``, ``copy``): merged busy intervals
        (starts, ends) on the common clock, coarsened for drawing."""
        return self._t.lanes

    @property
    def findings(self) -> list:
        """Exposed communication, a slow rank, imbalance: a list of Finding, most costly first."""
        return self._t.findings

    @property
    def notes(self) -> list:
        """What could not be read or aligned, in words."""
        return list(self.meta["notes"])

    @property
    def world_size(self) -> int:
        """The job's world size as the traces record it (else the number of ranks loaded)."""
        return self.meta["world_size"]

    def summary(self, by: str = "name") -> pd.DataFrame:
        """Kernels per rank: one row per rank and kernel (``by``: ``name``, ``short_name`` or
        ``backend``), launches, total and mean time and share of the rank's kernel time.

        >>> ranks.summary().query("rank == 1")[["rank", "short_name", "launches", "total_us"]].head(3)
            rank                              short_name  launches    total_us
        15     1        cuBLAS GEMM 256x128 (sm80, ffma)        60  162784.625
        16     1  CUTLASS GEMM 256x128 (sm80, simt) [nt]         6    1047.518
        17     1          cuBLAS GEMM 64x64 (sm80, ffma)         3     699.357
        """
        k = self._t.kernels
        if by == "name":
            return k
        if by not in ("short_name", "backend"):
            raise ValueError(f"summary(by=...) takes 'name', 'short_name' or 'backend', not {by!r}")
        g = k.groupby(["rank", by], sort=False)
        out = pd.DataFrame({"launches": g["launches"].sum(), "total_us": g["total_us"].sum()}).reset_index()
        out["mean_us"] = out["total_us"] / out["launches"]
        out["share"] = out["total_us"] / out.groupby("rank")["total_us"].transform("sum")
        return out.sort_values(["rank", "total_us"], ascending=[True, False], kind="stable").reset_index(drop=True)

    @cached_property
    def backends(self) -> pd.DataFrame:
        """Kernel time per rank and backend (launches, GPU time, share of the rank's)."""
        return self.summary(by="backend").rename(columns={"total_us": "gpu_time_us"})[
            ["rank", "backend", "launches", "gpu_time_us", "share"]]

    def comm_summary(self) -> pd.DataFrame:
        """Collectives by backend, kind, algorithm, protocol and data type: calls, bytes, time
        per rank, median bus bandwidth (of the last arrival's time) and its share of the link.

        >>> ranks.comm_summary()[["kind", "calls", "busbw_gbps", "busbw_of_link"]]
                kind  calls  busbw_gbps  busbw_of_link
        0  AllReduce    9.0      0.3698            NaN
        1  Broadcast    3.0      3.6782            NaN
        """
        return self._t.comm

    # -- one rank ------------------------------------------------------------------------
    def rank(self, rank: int):
        """The full Report of one rank (its trace is opened again: only summaries were kept).

        >>> ranks.rank(1).summary()[["short_name", "launches", "total_us"]].head(3)
                                       short_name  launches    total_us
        0        cuBLAS GEMM 256x128 (sm80, ffma)        60  162784.625
        1  CUTLASS GEMM 256x128 (sm80, simt) [nt]         6    1047.518
        2          cuBLAS GEMM 64x64 (sm80, ffma)         3     699.357
        """
        sources = {s.info["rank"]: s.info["source"] for s in self.summaries}
        if rank not in sources:
            raise KeyError(f"no rank {rank} in this report (ranks {sorted(sources)})")
        if self._opener is None:
            raise RuntimeError("this report was built without a way to open its traces")
        rep = self._opener(sources[rank])
        # The rank the loader settled on, also for a trace that records none (ks.compare labels it).
        d = rep.meta.get("distributed") if isinstance(rep.meta.get("distributed"), dict) else {}
        rep.meta["distributed"] = {**d, "rank": rank}
        return rep

    # -- display -------------------------------------------------------------------------
    def __repr__(self) -> str:
        from kernelscope.render.ranks import ranks_text
        return ranks_text(self)

    def _repr_html_(self) -> str:
        from kernelscope.render.ranks import ranks_html
        return ranks_html(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The live widget (needs a kernel), our MIME type (renders with no kernel in JupyterLab),
        static HTML and text, as a single-rank Report's display carries."""
        from kernelscope.render.ranks import ranks_html
        from kernelscope.view.bundle import MIME_TYPE, mime_payload, with_widget
        from kernelscope.view.ranks import ranks_view_model
        model = ranks_view_model(self)
        bundle = {MIME_TYPE: mime_payload(self, model), "text/html": ranks_html(self), "text/plain": repr(self)}
        return with_widget(bundle, lambda: self.widget(model=model))

    def widget(self, *, model=None):
        """The interactive view: ranks as lanes on one clock, stragglers, collectives, kernels
        per rank; picking a rank in the live widget opens that rank's full report below.

        >>> rep.widget()                                          # doctest: +SKIP
        """
        from kernelscope.view.ranks import ranks_view_model
        from kernelscope.view.widget import ReportWidget
        return ReportWidget(self, model=model or ranks_view_model(self))


def _world(summaries) -> int:
    sizes = [s.info.get("world_size") for s in summaries if s.info.get("world_size")]
    return max(sizes) if sizes else len(summaries)
