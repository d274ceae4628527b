"""The tuning watch of one region (:class:`TuningWatch`: Triton's, Inductor's and Helion's
watches side by side, their rows numbered one after the other) and its tables on a trace
(:func:`attach_tuning`)."""
from __future__ import annotations

from kernelscope.capture.tuning.common import WatchState
from kernelscope.capture.tuning.helion import HelionWatch
from kernelscope.capture.tuning.inductor import InductorWatch
from kernelscope.capture.tuning.triton import TritonWatch

# Candidates kept per region: thousands are fine (a table row each); beyond this the rest are
# counted in the notes rather than kept.
MAX_CANDIDATES = 20000


class TuningWatch:
    """The in-process watch of one region: :meth:`start` before it, :meth:`stop` after, then
    :meth:`tables` (the ``autotune`` and ``variants`` rows and the notes).

    >>> w = TuningWatch(force=False); w.start(); w.stop(); w.tables({"k"})["autotune"]
    []
    """

    def __init__(self, force: bool = False):
        # force: import Triton/Inductor to watch them (else: only if imported)
        self.shared = WatchState(force)
        self.triton = TritonWatch(self.shared)
        self.inductor = InductorWatch(self.shared)
        self.helion = HelionWatch(self.shared)

    @property
    def force(self) -> bool:
        return self.shared.force

    @property
    def notes(self) -> list:
        return self.shared.notes

    @property
    def watched(self) -> list:
        return self.shared.watched

    # -- start / stop ---------------------------------------------------------------------
    def start(self) -> None:
        self.shared.active = True
        for name, tuner in (("triton", self.triton), ("inductor", self.inductor), ("helion", self.helion)):
            try:
                tuner.start()
            except Exception as e:  # noqa: BLE001 - a watch that cannot start is a note, not a failure
                self.notes.append(f"{name}: not watched ({type(e).__name__}: {e})"[:300])

    def stop(self) -> None:
        self.shared.active = False
        self.inductor.forget_benchmarks()
        self.triton.unhook()
        self.shared.restore()
        self.triton.release()
        self.inductor.remove_saver()

    # -- the tables -------------------------------------------------------------------------
    def tables(self, kernel_names) -> dict:
        """``{"autotune": rows, "variants": rows, "notes": [...], "watched": [...]}`` (rows are
        dicts); ``kernel_names`` (the recorded kernels' names) limits Inductor's variants to
        the kernels this region ran."""
        names = set(kernel_names or ())
        variants, by_jit = self.triton.variants()
        variants.extend(self.inductor.variants(names))
        autotune, base = self.triton.rows(by_jit)
        inductor, n = self.inductor.rows(base, variants)
        autotune.extend(inductor)
        helion, _ = self.helion.rows(base + n)
        autotune.extend(helion)
        if len(autotune) > MAX_CANDIDATES:
            self.notes.append(f"{len(autotune) - MAX_CANDIDATES} autotuning candidates beyond the first "
                              f"{MAX_CANDIDATES} were not kept")
            autotune = autotune[:MAX_CANDIDATES]
        for v in variants:
            v.pop("_consts", None)
        return {"autotune": autotune, "variants": variants, "notes": list(self.notes), "watched": list(self.watched)}


def attach_tuning(trace, got: dict) -> None:
    """Put a watch's :meth:`TuningWatch.tables` on a trace: its ``autotune`` and ``variants``
    tables and ``meta["tuning"]`` (what was watched, the notes).

    >>> from kernelscope.trace.model import Trace
    >>> t = Trace.empty(); attach_tuning(t, {"autotune": [{"kernel": "add", "p50_ms": 0.1}], "watched": ["triton.jit"]})
    >>> t.autotune[["kernel", "p50_ms"]].values.tolist(), t.meta["tuning"]
    ([['add', 0.1]], {'watched': ['triton.jit'], 'notes': [], 'candidates': 1, 'variants': 0})
    """
    from kernelscope.trace.model import AUTOTUNE_COLUMNS, VARIANT_COLUMNS, frame

    def table(rows, schema):
        return frame({c: [r.get(c) for r in rows] for c in schema} if rows else {}, schema)
    trace.autotune = table(got.get("autotune") or [], AUTOTUNE_COLUMNS)
    trace.variants = table(got.get("variants") or [], VARIANT_COLUMNS)
    trace.meta["tuning"] = {"watched": list(got.get("watched") or []), "notes": list(got.get("notes") or []),
                            "candidates": len(trace.autotune), "variants": len(trace.variants)}
