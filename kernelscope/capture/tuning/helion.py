"""The watch of Helion's autotuner search (:class:`HelionWatch`): ``BaseSearch.benchmark_batch``
is wrapped while a region runs, and each config it timed becomes an ``autotune`` row with
Helion's own figure (one per config), the fastest of each search its winner. Helion's compiled
kernels (``_helion_*``) are Triton JIT functions: their variants come from :mod:`.triton`'s watch.
"""
from __future__ import annotations

import sys

from kernelscope.capture.tuning.common import WatchState, config_text, plain_number


class HelionWatch:
    """Helion's searches in one region (its part of a
    :class:`~kernelscope.capture.tuning.TuningWatch`): :meth:`start` wraps
    ``BaseSearch.benchmark_batch`` (where Helion is imported), :meth:`rows` is what it saw.

    >>> w = HelionWatch(WatchState()); w.start(); w.rows(0)
    ([], 0)
    """

    def __init__(self, shared: WatchState):
        self.shared = shared
        self._searches = {}         # id of a Helion search -> its tuning number
        self._rows = []

    def start(self) -> None:
        bs = (self.shared.module("helion.autotuner.base_search") if ("helion" in sys.modules or self.shared.force)
              else None)
        cls = getattr(bs, "BaseSearch", None)
        if cls is None or not callable(getattr(cls, "benchmark_batch", None)):
            if bs is not None:
                self.shared.notes.append("this Helion has no BaseSearch.benchmark_batch: its search not watched")
            return
        orig = cls.benchmark_batch
        watch = self

        def benchmark_batch(search, configs, *args, **kwargs):
            results = orig(search, configs, *args, **kwargs)
            if watch.shared.active:
                try:
                    watch._results(search, results)
                except Exception as e:  # noqa: BLE001 - runs inside the user's Helion search: a note, never its failure
                    watch.shared.notes.append(f"a Helion search could not be read ({type(e).__name__})")
            return results
        self.shared.patches.append((cls, "benchmark_batch", orig))
        cls.benchmark_batch = benchmark_batch
        self.shared.watched.append("helion.autotune")

    def _results(self, search, results) -> None:
        bound = getattr(search, "kernel", None)
        fn = getattr(getattr(bound, "kernel", bound), "fn", None)
        name = f"_helion_{getattr(fn, '__name__', 'kernel')}"
        tuning = self._searches.setdefault(id(search), len(self._searches))
        for r in list(results or []):
            cfg = getattr(r, "config", None)
            d = dict(cfg) if hasattr(cfg, "keys") else {}
            perf = plain_number(getattr(r, "perf", None))
            self._rows.append({
                "kernel": name, "producer": "Helion", "tuner": "helion autotune", "tuning": tuning, "op": None,
                "shape_key": None, "choice": "config",
                "config": config_text({k: v for k, v in d.items() if k not in ("num_warps", "num_stages")}),
                "description": str(getattr(r, "status", "") or "") or None,
                "num_warps": plain_number(d.get("num_warps")), "num_stages": plain_number(d.get("num_stages")),
                "num_ctas": None,
                "p50_ms": perf if perf is not None and perf != float("inf") else None, "p20_ms": None, "p80_ms": None,
                "registers": None, "spills": None, "shared_mem_bytes": None, "resources_source": None,
                "winner": False, "cached": False,
                "note": "Helion's own timing (one figure per config); registers not matched to its variants",
            })

    def rows(self, first) -> tuple[list, int]:
        """The ``autotune`` rows of the searches, numbered from ``first``, the fastest config of
        each its winner; and how many searches they are."""
        helion = [dict(r, tuning=r["tuning"] + first) for r in self._rows]
        for t in {r["tuning"] for r in helion}:
            timed = [r for r in helion if r["tuning"] == t and r["p50_ms"] is not None]
            if timed:
                min(timed, key=lambda r: r["p50_ms"])["winner"] = True
        return helion, len(self._searches)
