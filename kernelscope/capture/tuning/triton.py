"""The watch of Triton's ``@triton.autotune`` and of its JIT launches (:class:`TritonWatch`).

At an autotuner's first launch in the region, ``Autotuner.run`` (wrapped on the class) notes
the keys it already holds (tunings measured earlier: cache hits, said as such) and then steps
aside: the instance gets Triton's own bound ``run``, so its later launches pay nothing. What
remains runs only when it tunes: its ``cache`` is a dict whose ``__setitem__`` notes a new key,
its ``_bench`` collects each config's [p50, p20, p80] ms as measured (Triton keeps only the last
tuning's ``configs_timings``) inside a profiler range (``BENCH_RANGE``: the trace then tells the
tuner's launches from the ones that used the winner), its ``prune_configs`` marks where a tuning
begins. A key stored with nothing timed is a read of Triton's disk cache (new ``configs_timings``)
or the one config left after pruning. stop() gives back a plain dict cache and removes the
instance attributes. Triton 3.6 has no autotuning listener.

``JITFunction.run`` is wrapped too (user kernels, Helion's ``_helion_*``): each function
launched is noted, and at the end its compiled variants (:mod:`.variants`) become rows of the
``variants`` table. Triton's own launch hooks are not used: with one set, every launch builds
its metadata.
"""
from __future__ import annotations

import sys

from kernelscope.analysis.producers import BENCH_RANGE, FROM_VARIANT
from kernelscope.capture.tuning.common import FAILED, WatchState, config_text, plain_number
from kernelscope.capture.tuning.variants import compiled_variants, function_name, jit_of, match_variant
from kernelscope.jsonable import num

PRUNED_TO_ONE = "the only config left after pruning: Triton takes it without timing it"


def tensor_bytes(args, kwargs) -> int | None:
    """Bytes of the tensors among a launch's arguments (what a memory-bound kernel must at least
    move, read once or written once); None when it has none. Runs once per function and region.

    >>> tensor_bytes((1, "x"), {}) is None
    True
    """
    total, seen = 0, False
    for a in (*args, *kwargs.values()):
        n, size = getattr(a, "numel", None), getattr(a, "element_size", None)
        if callable(n) and callable(size) and hasattr(a, "data_ptr"):
            try:
                total += int(n()) * int(size())
                seen = True
            except Exception:  # noqa: BLE001 - an object that looks like a tensor and is not: skipped
                continue
    return total if seen else None


def _tuned_name(at) -> str:
    """The name of the function an Autotuner tunes."""
    jf = jit_of(getattr(at, "fn", None))
    return function_name(jf) if jf is not None else str(getattr(getattr(at, "base_fn", None), "__name__", "<unknown>"))


class _NoteNewKeys(dict):
    """An autotuner's ``cache`` while a region runs: a dict (lookups are dict's own) whose
    ``__setitem__`` calls ``on_new(key, config)`` when Triton stores a key it did not hold:
    a tuning just finished."""
    __slots__ = ("_on_new",)

    def __init__(self, items, on_new):
        super().__init__(items)
        self._on_new = on_new

    def __setitem__(self, key, value):
        new = key not in self
        dict.__setitem__(self, key, value)
        if new:
            try:
                self._on_new(key, value)
            except Exception:  # noqa: BLE001 - never fail the user's launch
                pass


def _times(t):
    """(p50, p20, p80) ms of one candidate: Triton gives [p50, p20, p80] (or one float); an
    infinite time (a config that could not run) is None."""
    if isinstance(t, (list, tuple)):
        vals = [num(x) for x in t[:3]]
        return tuple(vals + [None] * (3 - len(vals)))
    return (num(t), None, None)


class TritonWatch:
    """Triton's autotuners and JIT functions in one region (its part of a
    :class:`~kernelscope.capture.tuning.TuningWatch`): :meth:`start` wraps their classes (given
    back by :meth:`WatchState.restore`), :meth:`unhook` and :meth:`release` give back what it set
    on instances, :meth:`variants` and :meth:`rows` are what it saw.

    >>> w = TritonWatch(WatchState()); w.variants(), w.rows({})
    (([], {}), ([], 0))
    """

    def __init__(self, shared: WatchState):
        self.shared = shared
        self._autotuners = {}       # id -> what _first_seen noted
        self._jits = {}             # id -> JITFunction launched in the region
        self._arg_bytes = {}        # id -> bytes of the tensors of its first launch in the region
        self._hooked = []           # autotuners given hooks (see _hook), unhooked at stop()
        self._tunings = []          # (autotuner id, key, {Config: times}, winner, measured here?)

    def start(self) -> None:
        autotuner = self.shared.module("triton.runtime.autotuner")
        jit = self.shared.module("triton.runtime.jit")
        if autotuner is None or jit is None:
            if self.shared.force:
                self.shared.notes.append("Triton could not be imported: its autotuning and compiled variants were "
                                         "not watched")
            elif sys.modules.get("triton") is None:
                self.shared.notes.append("Triton was not imported when the region started: its autotuning and "
                                         "compiled variants were not watched (import triton first, or tuning=True)")
            return
        at_cls = getattr(autotuner, "Autotuner", None)
        if at_cls is not None and callable(getattr(at_cls, "run", None)):
            self._wrap_autotuner(at_cls)
            self.shared.watched.append("triton.autotune")
        else:
            self.shared.notes.append("this Triton has no Autotuner.run: autotuning not watched")
        jf_cls = getattr(jit, "JITFunction", None)
        if jf_cls is not None and callable(getattr(jf_cls, "run", None)):
            self._wrap_jit(jf_cls)
            self.shared.watched.append("triton.jit")
        else:
            self.shared.notes.append("this Triton has no JITFunction.run: compiled variants not watched")

    def _wrap_autotuner(self, cls) -> None:
        orig = cls.run
        watch = self

        def run(at, *args, **kwargs):
            if not watch.shared.active:
                return orig(at, *args, **kwargs)
            seen = watch._autotuners.get(id(at))
            if seen is None:
                seen = watch._first_seen(at)
                # Hooked where it tunes: its later launches call Triton's own run (nothing per launch).
                if watch._hook(at, orig, cls):
                    return orig(at, *args, **kwargs)
            if seen[6]:       # hooked, but called through the class (Autotuner.run(at, ...))
                return orig(at, *args, **kwargs)
            # Not hookable (another Triton's structure): the cache's size is compared around each call.
            cache = getattr(at, "cache", None)
            n = len(cache) if isinstance(cache, dict) else -1
            try:
                return orig(at, *args, **kwargs)
            finally:
                if n >= 0 and len(cache) != n:
                    watch._tuned(at, seen)
        self.shared.patches.append((cls, "run", orig))
        cls.run = run

    def _hook(self, at, orig_run, cls) -> bool:
        """Give one autotuner Triton's own bound ``run`` and watch it only where it tunes: its
        ``cache`` becomes a dict whose ``__setitem__`` notes a newly tuned key (lookups stay
        dict's own), its ``_bench`` collects each config's times as they are measured (inside a
        profiler range named :data:`BENCH_RANGE`, so the trace tells the tuner's launches from
        the ones that used the winner), its ``prune_configs`` marks where a tuning starts. False
        (nothing changed) where this Triton's autotuner does not have that shape, or its class
        has a ``run`` of its own (which Triton's bound ``run`` would skip)."""
        owner = next((c for c in type(at).__mro__ if "run" in vars(c)), None)
        if owner is not cls:
            return False
        cache, d = getattr(at, "cache", None), getattr(at, "__dict__", None)
        bench, prune = getattr(at, "_bench", None), getattr(at, "prune_configs", None)
        if type(cache) is not dict or not isinstance(d, dict) or not callable(bench) or not callable(prune):
            return False
        if any(a in d for a in ("run", "_bench", "prune_configs")):
            return False      # someone else's per-instance patch: not stacked on
        watch, key = self, id(at)
        state = self._autotuners[key]
        rf = getattr(getattr(getattr(sys.modules.get("torch"), "autograd", None), "profiler", None),
                     "record_function", None)
        label = f"{BENCH_RANGE}: {_tuned_name(at)}"

        def _bench(*args, config, **meta):
            if rf is None:
                t = bench(*args, config=config, **meta)
            else:
                with rf(f"{label} [{config_text(getattr(config, 'kwargs', None) or {})}]"):
                    t = bench(*args, config=config, **meta)
            state[7].append((config, t))
            return t

        def prune_configs(*args, **kwargs):
            watch._settle(key)
            state[7] = []
            state[8] = id(getattr(at, "configs_timings", None))
            return prune(*args, **kwargs)

        def tuned(k, winner):
            state[9].append((k, winner, state[7], state[8]))
            state[7] = []
        try:
            d["run"] = orig_run.__get__(at, type(at))
            d["_bench"], d["prune_configs"] = _bench, prune_configs
            at.cache = _NoteNewKeys(cache, tuned)
        except Exception:  # noqa: BLE001 - give back what was set; the per-call watch takes over
            for a in ("run", "_bench", "prune_configs"):
                d.pop(a, None)
            return False
        state[6] = True
        state[8] = id(getattr(at, "configs_timings", None))
        self._hooked.append(at)
        return True

    def _settle(self, key) -> None:
        """Turn an autotuner's tunings noted by its cache into rows of ``_tunings``. Called where
        the next tuning starts and at stop(): the timings Triton read from its disk cache are
        assigned after the key (``check_disk_cache``), so they are read once it has returned."""
        state = self._autotuners.get(key)
        if state is None or not state[9]:
            return
        at = state[0]
        pending, state[9] = state[9], []
        try:
            for k, winner, benched, ct_id in pending:
                timings = getattr(at, "configs_timings", None)
                if benched:          # timed in this region, config by config
                    self._tunings.append((key, k, dict(benched), winner, True))
                elif isinstance(timings, dict) and id(timings) != ct_id:
                    # New timings without a benchmark: read from Triton's autotuning disk cache
                    # (measured by an earlier process).
                    self._tunings.append((key, k, dict(timings), winner, False))
                else:                # nothing timed: pruned to one config, taken as it is
                    self._tunings.append((key, k, {winner: None}, winner, True, PRUNED_TO_ONE))
        except Exception as e:  # noqa: BLE001 - another Triton's autotuner: a note, never a failure
            self.shared.notes.append(f"an autotuning could not be read ({type(e).__name__}: {e})"[:300])

    def unhook(self) -> None:
        for at in self._hooked:
            self._settle(id(at))
            d = getattr(at, "__dict__", {})
            for a in ("run", "_bench", "prune_configs"):
                d.pop(a, None)
            try:
                if type(at.cache) is _NoteNewKeys:
                    at.cache = dict(at.cache)
            except Exception:  # noqa: BLE001 - a cache that cannot be given back still works as a dict
                pass
        self._hooked.clear()

    def _wrap_jit(self, cls) -> None:
        orig = cls.run
        jits, arg_bytes = self._jits, self._arg_bytes

        def run(jf, *args, **kwargs):
            jits[id(jf)] = jf
            arg_bytes[id(jf)] = tensor_bytes(args, kwargs)
            # Seen once is enough: this function's later launches go straight to Triton (the
            # instance attribute shadows the class's wrapped run), so a loop of launches pays
            # nothing per launch; stop() takes the attribute away again.
            try:
                jf.run = orig.__get__(jf, type(jf))
            except (AttributeError, TypeError):   # slotted or frozen: the wrapper stays
                pass
            return orig(jf, *args, **kwargs)
        self.shared.patches.append((cls, "run", orig))
        cls.run = run

    def _first_seen(self, at) -> list:
        cache = getattr(at, "cache", None)
        timings = getattr(at, "configs_timings", None)
        keys = set(cache) if isinstance(cache, dict) else set()
        # [autotuner, keys known (grows), timings before the region, bench_time, keys before the region,
        #  id of its timings, hooked?, (config, times) benchmarked since the tuning began,
        #  id of its timings when it began, tunings noted by the cache and not yet settled]
        seen = [at, keys, dict(timings) if isinstance(timings, dict) else None, getattr(at, "bench_time", None),
                frozenset(keys), id(timings), False, [], None, []]
        self._autotuners[id(at)] = seen
        return seen

    def _tuned(self, at, seen) -> None:
        try:
            cache = at.cache
            new = [k for k in cache if k not in seen[1]]
            timings = getattr(at, "configs_timings", None)
            bench = getattr(at, "bench_time", None)
            # Triton assigns a new dict at each benchmark: the same one means nothing was timed
            # (the configs were pruned to one, which Triton takes without benchmarking).
            fresh = isinstance(timings, dict) and id(timings) != seen[5]
            # Read from Triton's autotuning disk cache: timings were measured by an earlier process
            # (bench_time did not move).
            from_disk = bench is None or bench == seen[3]
            for k in new:
                seen[1].add(k)
                self._tunings.append((id(at), k, dict(timings) if fresh else {cache[k]: None},
                                      cache[k], fresh and not from_disk) if fresh else
                                     (id(at), k, {cache[k]: None}, cache[k], True, PRUNED_TO_ONE))
            seen[3], seen[5] = bench, id(timings)
        except Exception as e:  # noqa: BLE001 - another Triton's autotuner: a note, never a failure
            self.shared.notes.append(f"an autotuning could not be read ({type(e).__name__}: {e})"[:300])


    def release(self) -> None:
        """Take away the shortcut each launched function was given (its own ``run``)."""
        for jf in self._jits.values():
            if "run" in getattr(jf, "__dict__", {}):
                try:
                    del jf.run
                except AttributeError:
                    pass

    # -- the tables -------------------------------------------------------------------------
    def variants(self) -> tuple[list, dict]:
        """The compiled variants of the functions launched in the region (rows of ``variants``),
        and the same by function (``id`` of its JITFunction) for :meth:`rows`."""
        variants, by_jit = [], {}
        for jf in list(self._jits.values()):
            try:
                vs = compiled_variants(jf)
            except Exception as e:  # noqa: BLE001 - another Triton's compiled kernels: a note, never a failure
                self.shared.notes.append(f"compiled variants of {function_name(jf)} not read ({type(e).__name__})")
                vs = []
            for v in vs:
                v["arg_bytes"] = self._arg_bytes.get(id(jf))
            by_jit[id(jf)] = vs
            variants.extend(vs)
        return variants, by_jit

    def rows(self, by_jit) -> tuple[list, int]:
        """The ``autotune`` rows of the tunings (measured in the region, then those from before it)
        and how many tunings they number (``tuning`` 0 to n - 1)."""
        autotune = []
        tuning_ids = {}
        for at_id, key, timings, winner, here, *note in self._tunings:
            autotune.extend(self._candidates(self._autotuners[at_id][0], key, timings, winner, cached=not here,
                                             note=note[0] if note else None,
                                             tuning=tuning_ids.setdefault((at_id, key), len(tuning_ids)), by_jit=by_jit))
        # Tunings from before the region (cache hits): the winner, and the timings Triton still
        # holds when only one shape was tuned then.
        for at_id, (at, _, timings, _, before, *_) in self._autotuners.items():
            earlier = list(before)
            for k in earlier:
                winner = (getattr(at, "cache", None) or {}).get(k)
                t = timings if (len(before) == 1 and timings) else {winner: None} if winner is not None else {}
                autotune.extend(self._candidates(at, k, t, winner, cached=True,
                                                 tuning=tuning_ids.setdefault((at_id, k), len(tuning_ids)), by_jit=by_jit,
                                                 note=None if len(before) == 1 and timings else
                                                 "measured before the region; Triton keeps only the winner of this shape"))
        return autotune, len(tuning_ids)

    def _candidates(self, at, key, timings, winner, *, cached, tuning, by_jit, note=None) -> list:
        jf = jit_of(getattr(at, "fn", None))
        vs = by_jit.get(id(jf)) if jf is not None else None
        if vs is None and jf is not None:
            vs = by_jit[id(jf)] = compiled_variants(jf)
        name = _tuned_name(at)
        rows = []
        for cfg, t in (timings or {}).items():
            if cfg is None:
                continue
            p50, p20, p80 = _times(t)
            v = match_variant(vs or [], cfg)
            rows.append({
                "kernel": name, "producer": "Helion" if name.startswith("_helion_") else "Triton",
                "tuner": "triton.autotune", "tuning": tuning, "op": None,
                "shape_key": ", ".join(str(x) for x in key) if isinstance(key, tuple) else str(key),
                "choice": "config", "config": config_text(getattr(cfg, "kwargs", None) or {}),
                "description": None,
                "num_warps": plain_number(getattr(cfg, "num_warps", None)),
                "num_stages": plain_number(getattr(cfg, "num_stages", None)),
                "num_ctas": plain_number(getattr(cfg, "num_ctas", None)),
                "p50_ms": p50, "p20_ms": p20, "p80_ms": p80,
                "registers": v["registers"] if v else None, "spills": v["spills"] if v else None,
                "resources_source": FROM_VARIANT if v and v["registers"] is not None else None,
                "shared_mem_bytes": v["shared_mem_bytes"] if v else None,
                "winner": cfg is winner or cfg == winner, "cached": bool(cached),
                "note": note if note else FAILED if p50 is None and t is not None else
                (None if v else "its compiled variant could not be identified"),
            })
        return rows
