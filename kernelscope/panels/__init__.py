"""What a report shows, one panel at a time, computed once per report and read by every output.

The panels sit between the analyses and the outputs: each is a plain structure built from a
report's tables and analyses; the text, the static HTML, the altair charts and the browser's
payload only format it (``docs/architecture.md``, "Panels"). :func:`report_panels` keeps one
:class:`Panels` per report, so a display that writes all four formats computes each panel once.

    >>> p = report_panels(rep)
    >>> p.header.stats["launches"], p.kernel_table.distinct, report_panels(rep) is p
    (74, 25, True)
"""
from __future__ import annotations

import weakref
from functools import cached_property

import numpy as np
import pandas as pd

from kernelscope.analysis.distinct import first_rows
from kernelscope.panels.base import records, safe
from kernelscope.panels.fixes import findings_panel, fixes_panel
from kernelscope.panels.graphs import graphs_panel
from kernelscope.panels.header import Header, header_panel
from kernelscope.panels.kernels import KernelTable, kernel_table
from kernelscope.panels.measured import counter_samples, stalls_panel
from kernelscope.panels.memory import memory_panel
from kernelscope.panels.ops import ops_panel
from kernelscope.panels.roofline import roofline_panel
from kernelscope.panels.shapes import occupancy_entries
from kernelscope.panels.steps import steps_panel
from kernelscope.panels.tuning import tuning_kernels
from kernelscope.panels.window import overview, sorted_starts

__all__ = ["Panels", "report_panels"]

# The order in which a failed panel's note is listed (the order the view has always listed them).
_PROBLEM_ORDER = ("timeline", "findings", "what to fix", "backend breakdown", "roofline",
                  "Nsight Compute deep dive", "autotuning", "CUDA graphs", "steps", "memory")


class Panels:
    """The panels of one report, each computed when first asked for and kept.

    A panel whose analysis fails is left empty and its failure kept in :attr:`problems` (the
    view lists them in the report's notes). ``Panels(rep).kernels`` etc. are the report's own
    tables (a window of the view takes its rows from them).
    """

    def __init__(self, rep):
        self.rep = rep
        self.kernels: pd.DataFrame = rep.kernels
        self.copies: pd.DataFrame = rep.copies
        self._problems: dict[str, list] = {}

    def _safe(self, fn, default, what: str):
        got: list = []
        out = safe(fn, default, got, what)
        if got:
            self._problems[what] = got
        return out

    @property
    def problems(self) -> list:
        """Each failed panel's note, in a fixed order whatever the order they were asked for."""
        order = {w: i for i, w in enumerate(_PROBLEM_ORDER)}
        return [p for w in sorted(self._problems, key=lambda w: order.get(w, len(order))) for p in self._problems[w]]

    @property
    def notes(self) -> list:
        """The report's own notes (what the reader or the capture noticed), read at each display:
        the magic adds to them after the report is made."""
        return [str(n) for n in self.rep.notes]

    @property
    def time_of(self) -> str:
        """What the shares of "what to fix first" are of: the wall time, or an Nsight Compute
        replay's kernel time (``Report.time_base``)."""
        return self.rep.time_base[1]

    # -- what several panels read ------------------------------------------------------------
    @cached_property
    def timeline(self):
        """The report's timeline analysis (busy time, gaps), or None when it failed."""
        return self._safe(lambda: self.rep.timeline, None, "timeline")

    @cached_property
    def names(self) -> np.ndarray:
        """A row of each kernel name (the first launch of each: ``drop_duplicates("name")``'s rows)."""
        k = self.kernels
        return first_rows(k["name"]) if len(k) else np.zeros(0, np.int64)

    @cached_property
    def launch_starts(self) -> np.ndarray:
        """Every kernel's and copy's start, sorted (what places a window of the view)."""
        return sorted_starts([self.kernels, self.copies])

    @cached_property
    def host_starts(self) -> np.ndarray:
        """Every CPU op's and runtime call's start, sorted."""
        return sorted_starts([self.rep.ops, self.rep.runtime])

    # -- the panels --------------------------------------------------------------------------
    @cached_property
    def header(self) -> Header:
        """Title, devices, notes, headline figures and what the report can show."""
        return header_panel(self.rep, self.kernels, self.copies, self.timeline, self.names)

    @cached_property
    def findings(self) -> list:
        """Every finding, JSON-ready, its evidence in words."""
        return self._safe(lambda: findings_panel(self.rep), [], "findings")

    @cached_property
    def fixes(self) -> list:
        """What to fix first: the ranked list of the first screen."""
        return self._safe(lambda: fixes_panel(self.rep), [], "what to fix")

    @cached_property
    def backends(self) -> list:
        """The backend breakdown (``rep.backends``) as records."""
        return records(self._safe(lambda: self.rep.backends, pd.DataFrame(), "backend breakdown"))

    @cached_property
    def kernel_table(self) -> KernelTable:
        """Per kernel name its statistics (``rep.summary()``) and launch facts."""
        return kernel_table(self.rep, self.kernels, self.names)

    @cached_property
    def roofline(self) -> dict | None:
        """Roofline points and ceilings, or None."""
        rl = self._safe(lambda: self.rep.roofline, None, "roofline")
        return roofline_panel(rl, self.kernels, self.names)

    @cached_property
    def counters(self):
        """(PM samples table, its column spec) for the utilization strip, or None."""
        return counter_samples(self.rep)

    @cached_property
    def stalls(self) -> dict | None:
        """Warp-stall shares per kernel and overall, with each reason's meaning, or None."""
        return stalls_panel(self.rep)

    @cached_property
    def shapes(self) -> list:
        """Per launch shape its occupancy breakdown, advice and (for the costliest) curves."""
        return occupancy_entries(self.rep, self.kernels)

    @cached_property
    def kernel_detail(self) -> dict | None:
        """The Nsight Compute deep dive, JSON-ready, or None."""
        from kernelscope.analysis.kernel_detail import kernel_detail
        from kernelscope.jsonable import jsonable
        return self._safe(lambda: jsonable(kernel_detail(self.rep)), None, "Nsight Compute deep dive")

    @cached_property
    def depth(self) -> np.ndarray | None:
        """Each CPU op's depth in its thread's call tree (the host lanes of every window)."""
        return self.rep.op_tree["depth"].to_numpy() if len(self.rep.ops) else None

    @cached_property
    def ops(self) -> tuple:
        """(the costliest op names' rows of the CPU ops table, how many op names there are)."""
        return ops_panel(self.rep)

    @cached_property
    def overview(self) -> dict | None:
        """The whole trace at a glance, for the window chooser."""
        return overview(self.launch_starts, self.host_starts, self.kernels, self.copies, self.timeline)

    @cached_property
    def tuning_kernels(self) -> dict:
        """Per kernel name its producer and knob sets (the tuning block's whole-report part)."""
        return tuning_kernels(self.rep)

    @cached_property
    def graphs(self) -> dict | None:
        """The CUDA graphs the recording replayed (``rep.graphs``) with their labels, or None."""
        return self._safe(lambda: graphs_panel(self.rep), None, "CUDA graphs")

    @cached_property
    def steps(self) -> dict | None:
        """A training loop's steps (``rep.steps``) with their breakdown and labels, or None."""
        return self._safe(lambda: steps_panel(self.rep), None, "steps")

    @cached_property
    def memory(self) -> dict | None:
        """The allocator's peak, what held it, growth per step and the memory lane (``rep.memory``), or None."""
        return self._safe(lambda: memory_panel(self.rep.memory), None, "memory")


# One Panels per report (weakly held), made again when the report's tables were replaced.
_PANELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _key(rep) -> tuple:
    return tuple(id(getattr(rep, t, None)) for t in ("kernels", "copies", "ops", "runtime"))


def report_panels(rep) -> Panels:
    """The panels of ``rep``, made at the first display and kept with the report.

    >>> report_panels(rep).fixes[0]["title"][:11]
    'Host-bound:'
    """
    key = _key(rep)
    try:
        got = _PANELS.get(rep)
    except TypeError:     # cannot be weakly referenced: made for each display
        return Panels(rep)
    if got is not None and got[0] == key:
        return got[1]
    panels = Panels(rep)
    _PANELS[rep] = (key, panels)
    return panels
