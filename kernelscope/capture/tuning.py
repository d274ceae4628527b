"""What produced each kernel and what else was tried, collected in the process while a region runs.

Three sources, each feature-detected (a Triton or torch without one of these attributes loses
that source and says so in ``meta["tuning"]["notes"]``; nothing here fails a capture):

- Triton's ``@triton.autotune``: at an autotuner's first launch in the region, ``Autotuner.run``
  (wrapped on the class) notes the keys it already holds (tunings measured earlier: cache hits,
  said as such) and then steps aside: the instance gets Triton's own bound ``run``, so its later
  launches pay nothing. What remains runs only when it tunes: its ``cache`` is a dict whose
  ``__setitem__`` notes a new key, its ``_bench`` collects each config's [p50, p20, p80] ms as
  measured (Triton keeps only the last tuning's ``configs_timings``) inside a profiler range
  (``BENCH_RANGE``: the trace then tells the tuner's launches from the ones that used the winner),
  its ``prune_configs`` marks where a tuning begins. A key stored with nothing timed is a read of
  Triton's disk cache (new ``configs_timings``) or the one config left after pruning. stop() gives
  back a plain dict cache and removes the instance attributes. Triton 3.6 has no autotuning listener.
- Triton's ``JITFunction.run`` is wrapped too (user kernels, Helion's ``_helion_*``): each
  function launched is noted, and at the end its compiled variants
  (``device_caches[dev][0]``: ``CompiledKernel.metadata``, ``n_regs``, ``n_spills``, the
  constexprs) become rows of the ``variants`` table. Triton's own launch hooks are not used:
  with one set, every launch builds its metadata.
- Inductor: ``torch._inductor.select_algorithm.add_feedback_saver`` sees every max-autotune
  choice's time (Triton templates and cuBLAS/ATen); ``PyCodeCache.modules`` holds each compiled
  kernel's ``CachingAutotuner`` (its launcher's config, registers, spills, shared memory) and the
  wrapper code's ``Original ATen: [...]`` comment (the fused ops). Inductor's static launcher
  calls no Triton hook; its launch events in the trace carry the knobs (trace/builder.py).
  ``AlgorithmSelectorCache.benchmark_choice`` (one call per choice timed in this process) runs
  inside a profiler range named for the choice (``INDUCTOR_BENCH_RANGE``), so the trace tells
  which launches were which choice's benchmark (its template's kernel is named by a placeholder,
  ``triton_mm``; an extern's is an ordinary cuBLAS kernel). The winner of a template tuning is
  tied to the compiled template kernel (``triton_tem_*``) whose launcher's warps and stages and
  whose source's constexprs are the winner's, where exactly one tuning's winner fits it.

Only names, numbers and strings are kept (no references to kernels or tensors outlive the region).
"""
from __future__ import annotations

import functools
import re
import sys

from kernelscope.analysis.producers import (
    BENCH_RANGE,
    FROM_VARIANT,
    INDUCTOR_BENCH_RANGE,
    INDUCTOR_NAME,
    NOT_BENCHMARKED,
)
from kernelscope.jsonable import num

# Candidates kept per region: thousands are fine (a table row each); beyond this the rest are
# counted in the notes rather than kept.
MAX_CANDIDATES = 20000
_ATEN_RE = re.compile(r"Original ATen: \[([^\]\n]*)\]")
_DEF_RE = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)'", re.M)
_MAX_SOURCE_BYTES = 8 << 20


def _num(v):
    """An int or float from a value that may be anything (a Triton attribute of another version)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    return None


def _scalar_text(v) -> str | None:
    if isinstance(v, bool) or isinstance(v, (int, float, str)) or v is None:
        return str(v)
    if isinstance(v, (list, tuple)) and len(v) <= 16:   # Helion's block_sizes=[64, 32]
        parts = [_scalar_text(x) for x in v]
        return None if None in parts else "[" + ", ".join(parts) + "]"
    name = getattr(v, "__name__", None) or getattr(v, "name", None)
    return str(name) if isinstance(name, str) else None


def config_text(kwargs: dict) -> str:
    """A producer's configuration as it writes it: ``BLOCK_M=64, BLOCK_N=128``.

    >>> config_text({"BLOCK_M": 64, "BLOCK_N": 128})
    'BLOCK_M=64, BLOCK_N=128'
    """
    parts = []
    for k, v in (kwargs or {}).items():
        t = _scalar_text(v)
        if t is not None:
            parts.append(f"{k}={t}")
    return ", ".join(parts)


def _jit_of(fn):
    """The JITFunction under an Autotuner/Heuristics (``.fn`` until one has ``device_caches``)."""
    for _ in range(8):
        if fn is None or hasattr(fn, "device_caches"):
            return fn
        fn = getattr(fn, "fn", None)
    return None


def _fn_name(jf) -> str:
    name = getattr(jf, "__name__", None) or getattr(getattr(jf, "fn", None), "__name__", None)
    return str(name) if name else "<unknown>"


def _tuned_name(at) -> str:
    """The name of the function an Autotuner tunes."""
    jf = _jit_of(getattr(at, "fn", None))
    return _fn_name(jf) if jf is not None else str(getattr(getattr(at, "base_fn", None), "__name__", "<unknown>"))


def _fn_source(jf) -> str | None:
    code = getattr(getattr(jf, "fn", None), "__code__", None)
    if code is None:
        return None
    return f"{code.co_filename}:{code.co_firstlineno}"


def declared_constexprs(jf) -> set | None:
    """The names of a JITFunction's ``tl.constexpr`` parameters (None if this Triton does not
    say): Triton also compiles integer arguments equal to 1 as constants, which are not knobs.

    >>> declared_constexprs(object()) is None
    True
    """
    params = getattr(jf, "params", None)
    if not isinstance(params, (list, tuple)) or not params:
        return None
    names = {getattr(p, "name", None) for p in params if getattr(p, "is_constexpr", False)}
    return {n for n in names if isinstance(n, str)}


def _constexprs(ck, arg_names) -> dict:
    """The constexpr arguments a CompiledKernel was compiled with, by name (ASTSource.constants:
    {(index,): value}; ``constexprs`` in other versions)."""
    src = getattr(ck, "src", None)
    got = getattr(src, "constants", None)
    if not isinstance(got, dict):
        got = getattr(src, "constexprs", None)
    out = {}
    if not isinstance(got, dict):
        return out
    for k, v in got.items():
        if isinstance(k, tuple) and len(k) == 1 and isinstance(k[0], int) and 0 <= k[0] < len(arg_names):
            name = arg_names[k[0]]
        elif isinstance(k, str):
            name = k
        else:
            continue    # a constexpr inside a tuple argument: not a tuning knob
        if _scalar_text(v) is not None and v is not None:
            out[name] = v
    return out


def compiled_variants(jf) -> list:
    """One dict per compiled variant of a Triton JITFunction: name, config (its constexprs),
    num_warps, num_stages, num_ctas, registers, spills (local memory, Triton's n_spills),
    shared_mem_bytes, hash, source. Attributes this Triton lacks are left None.

    >>> compiled_variants(object())
    []
    """
    caches = getattr(jf, "device_caches", None)
    if not caches:
        return []
    arg_names = list(getattr(jf, "arg_names", None) or [])
    declared = declared_constexprs(jf)
    name, source = _fn_name(jf), _fn_source(jf)
    out = []
    try:
        entries = list(caches.items())
    except Exception:     # noqa: BLE001 - another Triton's structure: no variants, never a failure
        return []
    for device, entry in entries:
        cache = entry[0] if isinstance(entry, (tuple, list)) and entry else None
        if not isinstance(cache, dict):
            continue
        for ck in list(cache.values()):
            md = getattr(ck, "metadata", None)
            consts = _constexprs(ck, arg_names)
            knobs = {k: v for k, v in consts.items() if declared is None or k in declared}
            out.append({
                "name": str(getattr(md, "name", None) or name), "function": name,
                "producer": "Helion" if name.startswith("_helion_") else "Triton",
                "config": config_text(knobs), "num_warps": _num(getattr(md, "num_warps", None)),
                "num_stages": _num(getattr(md, "num_stages", None)), "num_ctas": _num(getattr(md, "num_ctas", None)),
                "registers": _num(getattr(ck, "n_regs", None)), "spills": _num(getattr(ck, "n_spills", None)),
                "shared_mem_bytes": _num(getattr(md, "shared", None)),
                "hash": str(getattr(md, "hash", None) or getattr(ck, "hash", "") or "") or None,
                "source": source, "source_ops": None, "device_index": _num(device),
                "_consts": consts,
            })
    return out


def _match_variant(variants, cfg) -> dict | None:
    """The compiled variant of a Triton Config: its kwargs among the constexprs, same warps and
    stages; None when none or several distinct ones match (never a guess)."""
    kw = getattr(cfg, "kwargs", None) or {}
    # A Triton whose compiled kernels do not say their constexprs: warps and stages alone,
    # accepted only where they single one out.
    blind = not any(v["_consts"] for v in variants)
    hits = [v for v in variants
            if (blind or all(k in v["_consts"] and v["_consts"][k] == x for k, x in kw.items()))
            and v["num_warps"] == _num(getattr(cfg, "num_warps", None))
            and v["num_stages"] == _num(getattr(cfg, "num_stages", None))]
    keys = {(h["registers"], h["spills"], h["shared_mem_bytes"]) for h in hits}
    return hits[0] if len(keys) == 1 else None


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


PRUNED_TO_ONE = "the only config left after pruning: Triton takes it without timing it"
FAILED = "did not run: the tuner timed it as infinite (out of resources, or it failed to compile)"


def _times(t):
    """(p50, p20, p80) ms of one candidate: Triton gives [p50, p20, p80] (or one float); an
    infinite time (a config that could not run) is None."""
    if isinstance(t, (list, tuple)):
        vals = [num(x) for x in t[:3]]
        return tuple(vals + [None] * (3 - len(vals)))
    return (num(t), None, None)


class TuningWatch:
    """The in-process watch of one region: :meth:`start` before it, :meth:`stop` after, then
    :meth:`tables` (the ``autotune`` and ``variants`` rows and the notes).

    >>> w = TuningWatch(force=False); w.start(); w.stop(); w.tables({"k"})["autotune"]
    []
    """

    def __init__(self, force: bool = False):
        self.force = force          # import Triton/Inductor to watch them (else: only if imported)
        self.notes = []
        self.watched = []
        self._patches = []          # (owner, attribute, original)
        self._autotuners = {}       # id -> what _first_seen noted
        self._jits = {}             # id -> JITFunction launched in the region
        self._hooked = []           # autotuners given hooks (see _hook), unhooked at stop()
        self._tunings = []          # (autotuner id, key, {Config: times}, winner, measured here?)
        self._feedback = []         # Inductor's choices, as plain rows
        self._bench_labels = {}     # id of an Inductor choice benchmarked, not yet in a feedback -> (range, choice)
        self._bench_count = 0
        self._saver: object = None
        self._helion = {}           # id of a Helion search -> its tuning number
        self._helion_rows = []
        self._active = False

    # -- start / stop ---------------------------------------------------------------------
    def start(self) -> None:
        self._active = True
        for step in (self._watch_triton, self._watch_inductor, self._watch_helion):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - a watch that cannot start is a note, not a failure
                self.notes.append(f"{step.__name__[7:]}: not watched ({type(e).__name__}: {e})"[:300])

    def stop(self) -> None:
        self._active = False
        self._bench_labels.clear()      # choices benchmarked but never fed back: let them go
        self._unhook()
        for owner, attr, orig in reversed(self._patches):
            try:
                setattr(owner, attr, orig)
            except Exception:  # noqa: BLE001
                pass
        self._patches.clear()
        for jf in self._jits.values():
            if "run" in getattr(jf, "__dict__", {}):
                try:
                    del jf.run
                except AttributeError:
                    pass
        if self._saver is not None:
            try:
                from torch._inductor import select_algorithm as sa
                fns = getattr(sa.get_algorithm_selector_cache(), "feedback_saver_fns", None)
                if isinstance(fns, list) and self._saver in fns:
                    fns.remove(self._saver)
            except Exception:  # noqa: BLE001 - left registered, it does nothing once inactive
                pass

    def _module(self, name):
        if sys.modules.get(name) is not None:
            return sys.modules[name]
        if not self.force or name in sys.modules:    # None in sys.modules: blocked, not installed
            return None
        import importlib
        return importlib.import_module(name)

    def _watch_triton(self) -> None:
        autotuner = self._module("triton.runtime.autotuner")
        jit = self._module("triton.runtime.jit")
        if autotuner is None or jit is None:
            if self.force:
                self.notes.append("Triton could not be imported: its autotuning and compiled variants were not watched")
            elif sys.modules.get("triton") is None:
                self.notes.append("Triton was not imported when the region started: its autotuning and "
                                  "compiled variants were not watched (import triton first, or tuning=True)")
            return
        at_cls = getattr(autotuner, "Autotuner", None)
        if at_cls is not None and callable(getattr(at_cls, "run", None)):
            self._wrap_autotuner(at_cls)
            self.watched.append("triton.autotune")
        else:
            self.notes.append("this Triton has no Autotuner.run: autotuning not watched")
        jf_cls = getattr(jit, "JITFunction", None)
        if jf_cls is not None and callable(getattr(jf_cls, "run", None)):
            self._wrap_jit(jf_cls)
            self.watched.append("triton.jit")
        else:
            self.notes.append("this Triton has no JITFunction.run: compiled variants not watched")

    def _wrap_autotuner(self, cls) -> None:
        orig = cls.run
        watch = self

        def run(at, *args, **kwargs):
            if not watch._active:
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
        self._patches.append((cls, "run", orig))
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
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"an autotuning could not be read ({type(e).__name__}: {e})"[:300])

    def _unhook(self) -> None:
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
        jits = self._jits

        def run(jf, *args, **kwargs):
            jits[id(jf)] = jf
            # Seen once is enough: this function's later launches go straight to Triton (the
            # instance attribute shadows the class's wrapped run), so a loop of launches pays
            # nothing per launch; stop() takes the attribute away again.
            try:
                jf.run = orig.__get__(jf, type(jf))
            except (AttributeError, TypeError):   # slotted or frozen: the wrapper stays
                pass
            return orig(jf, *args, **kwargs)
        self._patches.append((cls, "run", orig))
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
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"an autotuning could not be read ({type(e).__name__}: {e})"[:300])

    def _watch_inductor(self) -> None:
        sa = self._module("torch._inductor.select_algorithm")
        if sa is None:
            return
        add = getattr(sa, "add_feedback_saver", None)
        if add is None:
            self.notes.append("this torch has no select_algorithm.add_feedback_saver: max-autotune "
                              "choices not watched")
            return

        def saver(timings, name, input_nodes, choices, *rest):
            if self._active:
                self._inductor_choices(timings, name, input_nodes)
        self._saver = saver
        add(saver)
        self.watched.append("inductor.max_autotune")
        self._wrap_benchmark_choice(sa)

    def _wrap_benchmark_choice(self, sa) -> None:
        """Time each Inductor choice inside a profiler range that names it: wraps
        ``AlgorithmSelectorCache.benchmark_choice`` (a classmethod Inductor calls once per choice
        it times in this process; it runs only while Inductor tunes), given back at stop()."""
        cls = getattr(sa, "AlgorithmSelectorCache", None)
        owner = next((c for c in getattr(cls, "__mro__", ()) if "benchmark_choice" in vars(c)), None)
        orig = vars(owner).get("benchmark_choice") if owner is not None else None
        rf = getattr(getattr(getattr(sys.modules.get("torch"), "autograd", None), "profiler", None),
                     "record_function", None)
        if not isinstance(orig, classmethod) or rf is None:
            self.notes.append("this torch has no AlgorithmSelectorCache.benchmark_choice classmethod: max-autotune's "
                              "benchmark launches are not tied to their choices")
            return
        func, watch = orig.__func__, self

        @functools.wraps(func)
        def benchmark_choice(klass, choice, *args, **kwargs):
            if not watch._active:
                return func(klass, choice, *args, **kwargs)
            with rf(watch._bench_label(choice)):
                return func(klass, choice, *args, **kwargs)
        self._patches.append((owner, "benchmark_choice", orig))
        owner.benchmark_choice = classmethod(benchmark_choice)
        self.watched.append("inductor.benchmark_ranges")

    def _bench_label(self, choice) -> str:
        """The profiler range of one choice's benchmark: ``inductor max-autotune benchmark #3:
        triton_mm_17`` (numbered: extern choices' names, ``addmm``, repeat across tunings)."""
        got = self._bench_labels.get(id(choice))
        if got is not None:
            return got[0]
        self._bench_count += 1
        label = f"{INDUCTOR_BENCH_RANGE} #{self._bench_count}: {str(getattr(choice, 'name', '?'))[:200]}"
        # The choice is held until its feedback (or stop()): its id cannot name another meanwhile.
        self._bench_labels[id(choice)] = (label, choice)
        return label

    def _watch_helion(self) -> None:
        bs = self._module("helion.autotuner.base_search") if ("helion" in sys.modules or self.force) else None
        cls = getattr(bs, "BaseSearch", None)
        if cls is None or not callable(getattr(cls, "benchmark_batch", None)):
            if bs is not None:
                self.notes.append("this Helion has no BaseSearch.benchmark_batch: its search not watched")
            return
        orig = cls.benchmark_batch
        watch = self

        def benchmark_batch(search, configs, *args, **kwargs):
            results = orig(search, configs, *args, **kwargs)
            if watch._active:
                try:
                    watch._helion_results(search, results)
                except Exception as e:  # noqa: BLE001
                    watch.notes.append(f"a Helion search could not be read ({type(e).__name__})")
            return results
        self._patches.append((cls, "benchmark_batch", orig))
        cls.benchmark_batch = benchmark_batch
        self.watched.append("helion.autotune")

    def _helion_results(self, search, results) -> None:
        bound = getattr(search, "kernel", None)
        fn = getattr(getattr(bound, "kernel", bound), "fn", None)
        name = f"_helion_{getattr(fn, '__name__', 'kernel')}"
        tuning = self._helion.setdefault(id(search), len(self._helion))
        for r in list(results or []):
            cfg = getattr(r, "config", None)
            d = dict(cfg) if hasattr(cfg, "keys") else {}
            perf = _num(getattr(r, "perf", None))
            self._helion_rows.append({
                "kernel": name, "producer": "Helion", "tuner": "helion autotune", "tuning": tuning, "op": None,
                "shape_key": None, "choice": "config",
                "config": config_text({k: v for k, v in d.items() if k not in ("num_warps", "num_stages")}),
                "description": str(getattr(r, "status", "") or "") or None,
                "num_warps": _num(d.get("num_warps")), "num_stages": _num(d.get("num_stages")), "num_ctas": None,
                "p50_ms": perf if perf is not None and perf != float("inf") else None, "p20_ms": None, "p80_ms": None,
                "registers": None, "spills": None, "shared_mem_bytes": None, "resources_source": None,
                "winner": False, "cached": False,
                "note": "Helion's own timing (one figure per config); registers not matched to its variants",
            })

    def _inductor_choices(self, timings, name, input_nodes) -> None:
        try:
            shapes = []
            for n in input_nodes or []:
                try:
                    shapes.append("x".join(str(s) for s in n.get_size()))
                except Exception:  # noqa: BLE001
                    shapes.append("?")
            key = f"{name}({', '.join(shapes)})"
            finite = {c: t for c, t in timings.items() if isinstance(t, (int, float)) and t == t and t != float("inf")}
            best = min(finite, key=finite.get) if finite else None
            tuning = len({r["tuning"] for r in self._feedback})
            for c, t in timings.items():
                info = {}
                try:
                    got = c.info_dict()
                    info = got if isinstance(got, dict) else {}
                except Exception:  # noqa: BLE001
                    pass
                bm = getattr(c, "bmreq", None)
                extern = str(info.get("backend", "")).lower() == "extern" or bm is None
                kw = {}
                tile = info.get("tile_shape")
                if isinstance(tile, str):
                    m = re.fullmatch(r"\((-?\d+), (-?\d+), (-?\d+)\)", tile.strip())
                    if m:   # Inductor writes (BLOCK_M, BLOCK_K, BLOCK_N)
                        kw = {"BLOCK_M": int(m[1]), "BLOCK_N": int(m[3]), "BLOCK_K": int(m[2])}
                if isinstance(info.get("GROUP_M"), int) and info["GROUP_M"] >= 0:
                    kw["GROUP_M"] = info["GROUP_M"]
                desc = str(getattr(c, "description", "") or "")
                res = {} if extern else template_resources(c)
                bench = self._bench_labels.pop(id(c), (None,))[0]
                unbenched = (bench is None and num(t) is not None and "inductor.benchmark_ranges" in self.watched)
                self._feedback.append({
                    "kernel": str(getattr(c, "name", "?")), "producer": "Inductor", "tuner": "inductor max-autotune",
                    "tuning": tuning, "op": str(name), "shape_key": key,
                    "choice": "extern" if extern else "Triton template",
                    "config": (str(info.get("kernel_call_name") or getattr(c, "name", "")) if extern
                               else (config_text(kw) or desc)),
                    "description": desc[:500],
                    "num_warps": _num(info.get("num_warps")) if not extern else None,
                    "num_stages": _num(info.get("num_stages")) if not extern else None,
                    "num_ctas": None, "p50_ms": num(t), "p20_ms": None, "p80_ms": None,
                    "registers": res.get("registers"), "spills": res.get("spills"),
                    "shared_mem_bytes": res.get("shared_mem_bytes"), "resources_source": res.get("source"),
                    "winner": c is best, "cached": False,
                    "benchmark_range": bench, "compiled_kernel": None, "_kw": kw,
                    "note": choice_note(extern, c is best, num(t) is None, res.get("why"), unbenched),
                })
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"Inductor's autotuning could not be read ({type(e).__name__}: {e})"[:300])

    # -- the tables -------------------------------------------------------------------------
    def tables(self, kernel_names) -> dict:
        """``{"autotune": rows, "variants": rows, "notes": [...], "watched": [...]}`` (rows are
        dicts); ``kernel_names`` (the recorded kernels' names) limits Inductor's variants to
        the kernels this region ran."""
        names = set(kernel_names or ())
        variants, autotune = [], []
        by_jit = {}
        for jf in list(self._jits.values()):
            try:
                vs = compiled_variants(jf)
            except Exception as e:  # noqa: BLE001
                self.notes.append(f"compiled variants of {_fn_name(jf)} not read ({type(e).__name__})")
                vs = []
            by_jit[id(jf)] = vs
            variants.extend(vs)
        try:
            variants.extend(self._inductor_variants(names))
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"Inductor's compiled kernels not read ({type(e).__name__}: {e})"[:300])
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
        base = len(tuning_ids)
        inductor = [dict(r, tuning=r["tuning"] + base) for r in self._feedback]
        link_template_winners(inductor, [v for v in variants if v.get("producer") == "Inductor"])
        for r in inductor:
            r.pop("_kw", None)
        autotune.extend(inductor)
        base += len({r["tuning"] for r in self._feedback})
        helion = [dict(r, tuning=r["tuning"] + base) for r in self._helion_rows]
        for t in {r["tuning"] for r in helion}:
            timed = [r for r in helion if r["tuning"] == t and r["p50_ms"] is not None]
            if timed:
                min(timed, key=lambda r: r["p50_ms"])["winner"] = True
        autotune.extend(helion)
        if len(autotune) > MAX_CANDIDATES:
            self.notes.append(f"{len(autotune) - MAX_CANDIDATES} autotuning candidates beyond the first "
                              f"{MAX_CANDIDATES} were not kept")
            autotune = autotune[:MAX_CANDIDATES]
        for v in variants:
            v.pop("_consts", None)
        return {"autotune": autotune, "variants": variants, "notes": list(self.notes), "watched": list(self.watched)}

    def _candidates(self, at, key, timings, winner, *, cached, tuning, by_jit, note=None) -> list:
        jf = _jit_of(getattr(at, "fn", None))
        vs = by_jit.get(id(jf)) if jf is not None else None
        if vs is None and jf is not None:
            vs = by_jit[id(jf)] = compiled_variants(jf)
        name = _tuned_name(at)
        rows = []
        for cfg, t in (timings or {}).items():
            if cfg is None:
                continue
            p50, p20, p80 = _times(t)
            v = _match_variant(vs or [], cfg)
            rows.append({
                "kernel": name, "producer": "Helion" if name.startswith("_helion_") else "Triton",
                "tuner": "triton.autotune", "tuning": tuning, "op": None,
                "shape_key": ", ".join(str(x) for x in key) if isinstance(key, tuple) else str(key),
                "choice": "config", "config": config_text(getattr(cfg, "kwargs", None) or {}),
                "description": None,
                "num_warps": _num(getattr(cfg, "num_warps", None)), "num_stages": _num(getattr(cfg, "num_stages", None)),
                "num_ctas": _num(getattr(cfg, "num_ctas", None)),
                "p50_ms": p50, "p20_ms": p20, "p80_ms": p80,
                "registers": v["registers"] if v else None, "spills": v["spills"] if v else None,
                "resources_source": FROM_VARIANT if v and v["registers"] is not None else None,
                "shared_mem_bytes": v["shared_mem_bytes"] if v else None,
                "winner": cfg is winner or cfg == winner, "cached": bool(cached),
                "note": note if note else FAILED if p50 is None and t is not None else
                (None if v else "its compiled variant could not be identified"),
            })
        return rows

    def _inductor_variants(self, names) -> list:
        cc = sys.modules.get("torch._inductor.codecache")
        cache = getattr(cc, "PyCodeCache", None)
        mods = getattr(cache, "modules", None)
        if mods is None:
            return []
        mods = list(mods.values()) if isinstance(mods, dict) else list(mods)
        aten = {}
        # Every kernel of each name: Inductor numbers kernels per graph, so two graphs compiled
        # in one process both have a triton_tem_fused_addmm_relu_t_0 (seen on the H200); the
        # launch's shape tells their variants apart, or the launch says it cannot.
        found: list = []
        seen: set = set()
        for mod in mods:
            d = getattr(mod, "__dict__", {})
            path = d.get("__file__")
            if isinstance(path, str) and "async_compile" in d:
                aten.update(_origins(path))
            for k, obj in list(d.items()):
                if id(obj) in seen or (names and k not in names):
                    continue
                try:
                    launchers = getattr(obj, "launchers", None)
                    if not isinstance(launchers, list) or not hasattr(obj, "inductor_meta"):
                        continue
                except ReferenceError:      # a dead weak proxy
                    continue
                seen.add(id(obj))
                found.append((k, obj))
        have = {k for k, _ in found}
        missing = {n for n in names if n not in have and INDUCTOR_NAME.match(n)}
        if missing:
            found.extend(_live_autotuners(missing))
            have = {k for k, _ in found}
        out = []
        for k, obj in found:
            meta = getattr(obj, "inductor_meta", None) or {}
            name = str(meta.get("kernel_name") or k)
            if names and name not in names:
                continue    # a template benchmarked under its placeholder name, never launched here
            # A template's tile is not in its launcher's config but in its source's constexprs.
            tem = template_constexprs(obj) if name.startswith("triton_tem_") else {}
            for ln in list(obj.launchers):
                cfg = getattr(ln, "config", None)
                kw = getattr(cfg, "kwargs", None) or {}
                out.append({
                    "name": name, "function": name, "producer": "Inductor",
                    "config": config_text(kw) or config_text({k: tem[k] for k in TEMPLATE_KNOBS if k in tem}),
                    "num_warps": _num(getattr(cfg, "num_warps", None)), "num_stages": _num(getattr(cfg, "num_stages", None)),
                    "num_ctas": _num(getattr(cfg, "num_ctas", None)),
                    "registers": _num(getattr(ln, "n_regs", None)), "spills": _num(getattr(ln, "n_spills", None)),
                    "shared_mem_bytes": _num(getattr(ln, "shared", None)),
                    "hash": str(getattr(ln, "cache_hash", "") or "") or None, "source": None,
                    "source_ops": aten.get(name), "device_index": None, "_consts": tem,
                })
        # Kernels named in the trace whose wrapper said their ops, but with no live launcher
        for name, ops in aten.items():
            if name in names and name not in have:
                out.append({"name": name, "function": name, "producer": "Inductor", "config": None,
                            "num_warps": None, "num_stages": None, "num_ctas": None, "registers": None,
                            "spills": None, "shared_mem_bytes": None, "hash": None, "source": None,
                            "source_ops": ops, "device_index": None, "_consts": {}})
        return out


# The knobs of Inductor's GEMM templates, as its choices say them (info_dict's tile_shape, GROUP_M).
TEMPLATE_KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")
_CONSTEXPR_RE = re.compile(r"^[ \t]*(\w+)[ \t]*:[ \t]*tl\.constexpr[ \t]*=[ \t]*([-\w.]+)[ \t]*$", re.M)
_DIM_RE = re.compile(r"^[ \t]*([MNK])[ \t]*=[ \t]*(\d+)[ \t]*$", re.M)
SAME_WINNER = "not tied to its compiled kernel: {n} tunings chose this config ({kernels} runs it), which cannot be told apart"
# A winner that no compiled template kernel runs: Inductor chose again after the tuning (its
# epilogue-fusion benchmark can), or the GEMM was not compiled as a template in the region.
RAN_OTHERWISE = ("not run as tuned: this GEMM's compiled kernel {kernel} has {config}, not this winner's config "
                 "(Inductor chose again after this tuning, as its epilogue-fusion benchmark can)")
NOT_COMPILED = ("not tied to a compiled kernel: none of the region's {n} compiled template kernels runs this GEMM "
                "with this config")
NO_TEMPLATE_KERNEL = "not tied to a compiled kernel: no compiled template kernel was found in the region"


EXTERN = "an extern kernel (cuBLAS/ATen): no Triton config"
EXTERN_WINNER = ("its launches in the compiled graph are plain calls of its ATen op, not tied to this choice "
                 "(only its benchmark launches are)")


def choice_note(extern, winner, failed, why, unbenched) -> str | None:
    """The note of one Inductor max-autotune choice: why a number is missing, what an extern
    choice is, and, for an extern winner, that the compiled graph's launches of it are not
    linked (they are ordinary calls of the ATen op, which eager code in the cell makes too).

    >>> for part in choice_note(True, True, False, None, False).split("; "):
    ...     print(part)
    an extern kernel (cuBLAS/ATen): no Triton config
    its launches in the compiled graph are plain calls of its ATen op, not tied to this choice (only its benchmark launches are)
    >>> choice_note(False, False, False, None, False) is None
    True
    """
    return "; ".join(x for x in (FAILED if failed else why if not extern else EXTERN,
                                 EXTERN_WINNER if extern and winner else None,
                                 NOT_BENCHMARKED if unbenched else None) if x) or None


def _literal(text):
    """An int, True/False, or the text of one constexpr's value as Inductor writes it."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"True": True, "False": False}.get(text, text)


def template_constexprs(kernel) -> dict:
    """The constexprs an Inductor template kernel was generated with (``BLOCK_M``, ``GROUP_M``,
    ...): its ``inductor_meta["config_args"]`` where this torch writes it, else the
    ``NAME : tl.constexpr = value`` lines of its source; with ``_M``/``_N``/``_K``, the GEMM's
    sizes where the source fixes them (``M = 2048``).

    >>> from types import SimpleNamespace as NS
    >>> template_constexprs(NS(inductor_meta={}, fn=NS(src="def k(a):\\n    BLOCK_M : tl.constexpr = 64\\n    M = 512\\n")))
    {'BLOCK_M': 64, '_M': 512}
    """
    meta = getattr(kernel, "inductor_meta", None)
    src = getattr(getattr(kernel, "fn", None), "src", None)
    src = src if isinstance(src, str) else ""
    got = meta.get("config_args") if isinstance(meta, dict) else None
    out = {str(k): v for k, v in got.items() if _scalar_text(v) is not None} if isinstance(got, dict) else {}
    if not out:
        out = {m[1]: _literal(m[2]) for m in _CONSTEXPR_RE.finditer(src[:_MAX_SOURCE_BYTES])}
    for m in _DIM_RE.finditer(src[:_MAX_SOURCE_BYTES]):
        out.setdefault(f"_{m[1]}", int(m[2]))
    return out


def _gemm_dims(shape_key) -> tuple | None:
    """(M, N, K) of a GEMM choice's shape key ``addmm(2048x4096, 2048x1024, 1024x4096)``: its
    last two inputs are A (MxK) and B (KxN); None where the key does not say."""
    m = re.fullmatch(r"\w+\((.*)\)", str(shape_key or ""))
    dims = [p.strip().split("x") for p in m[1].split(",")] if m else []
    if len(dims) < 2 or any(not all(d.isdigit() for d in x) or len(x) < 2 for x in dims[-2:]):
        return None
    a, b = dims[-2], dims[-1]
    return (int(a[-2]), int(b[-1]), int(a[-1]))


def _source_dims(consts) -> tuple:
    """(M, N, K) a template kernel's source fixes (:func:`template_constexprs`' ``_M``...), None
    for each it does not."""
    return tuple(consts.get(f"_{d}") for d in "MNK")


def link_template_winners(rows, variants) -> None:
    """Tie each Inductor tuning's winning template choice (``rows``: its ``autotune`` rows, with
    ``_kw`` its knobs) to the compiled template kernels that run it (``variants``: Inductor's,
    with ``_consts`` from :func:`template_constexprs`): a kernel whose warps, stages and knobs
    are the winner's. A kernel that fits the winners of several tunings is tied to the one whose
    GEMM sizes its source fixes, else to none, and those winners say so (never a guess). Sets
    ``compiled_kernel`` (names, ", "-joined) and ``note`` in place.

    >>> r = {"tuning": 0, "winner": True, "choice": "Triton template", "num_warps": 4, "num_stages": 3,
    ...      "_kw": {"BLOCK_M": 64}, "shape_key": "mm(64x32, 32x16)", "compiled_kernel": None, "note": None}
    >>> link_template_winners([r], [{"name": "triton_tem_fused_mm_0", "num_warps": 4, "num_stages": 3,
    ...                              "_consts": {"BLOCK_M": 64}}]); r["compiled_kernel"]
    'triton_tem_fused_mm_0'
    """
    winners = [r for r in rows if r.get("winner") and r.get("choice") == "Triton template" and r.get("_kw")]
    if not winners:
        return
    templates = [v for v in variants if str(v.get("name", "")).startswith("triton_tem_") and v.get("_consts")]
    fits: dict = {}
    for v in templates:
        consts = v["_consts"]
        hit = [w for w in winners if w["num_warps"] == v.get("num_warps") and w["num_stages"] == v.get("num_stages")
               and all(consts.get(k) == x for k, x in w["_kw"].items())]
        if len(hit) > 1:        # the GEMM's sizes, where the template's source fixes them
            dims = _source_dims(consts)
            by_dims = [w for w in hit if None not in dims and _gemm_dims(w.get("shape_key")) == dims]
            hit = by_dims if len(by_dims) == 1 else hit
        fits.setdefault(str(v["name"]), {}).update({id(w): w for w in hit})    # a name two graphs share
    for name, hit in fits.items():
        for w in hit.values():
            if len(hit) == 1:
                w["compiled_kernel"] = ", ".join(x for x in (w.get("compiled_kernel"), name) if x)
            else:
                _add_note(w, SAME_WINNER.format(n=len(hit), kernels=name))
    # A winner no kernel fits: say what ran instead where the source's GEMM sizes name its kernel.
    for w in winners:
        if w.get("compiled_kernel") or any(id(w) in hit for hit in fits.values()):
            continue
        dims = _gemm_dims(w.get("shape_key"))
        same = [v for v in templates if not fits.get(str(v["name"])) and dims is not None
                and _source_dims(v["_consts"]) == dims]
        if len(same) == 1:
            v = same[0]
            knobs = ", ".join(f"{k}={v['_consts'][k]}" for k in w["_kw"] if k in v["_consts"])
            config = f"{knobs}, num_warps={v.get('num_warps')}, num_stages={v.get('num_stages')}".lstrip(", ")
            _add_note(w, RAN_OTHERWISE.format(kernel=v["name"], config=config))
        else:
            n = len({str(v["name"]) for v in templates})
            _add_note(w, NOT_COMPILED.format(n=n) if n else NO_TEMPLATE_KERNEL)


def _add_note(row, why) -> None:
    row["note"] = why if not row.get("note") else f"{row['note']}; {why}"


def _live_autotuners(names) -> list:
    """[(kernel name, CachingAutotuner)] of the Inductor kernels ``names`` that are alive in the
    process but not in PyCodeCache's module list (a module Inductor loaded without listing it),
    every one of each name (two graphs' kernels can share one): one pass over the collector's
    objects, only where a recorded Inductor kernel was not found."""
    cls = getattr(sys.modules.get("torch._inductor.runtime.triton_heuristics"), "CachingAutotuner", None)
    if not isinstance(cls, type):
        return []
    import gc
    out = []
    for obj in gc.get_objects():
        # type(), not isinstance(): a dead weak proxy among the objects raises on the latter
        if issubclass(type(obj), cls):
            meta = getattr(obj, "inductor_meta", None)
            name = meta.get("kernel_name") if isinstance(meta, dict) else None
            if name in names and isinstance(getattr(obj, "launchers", None), list):
                out.append((name, obj))
    return out


FROM_CHOICE = "Inductor's choice (its launcher's n_regs at precompile)"
FROM_LAUNCHER = "Inductor's benchmark kernel (its launcher, after the benchmark ran it)"
FROM_BINARY = "Inductor's benchmark kernel (its compiled binary, after the benchmark ran it)"


def _benchmark_kernel(bmreq):
    """The CachingAutotuner an Inductor template choice was benchmarked with: its benchmark
    request's module (kept on it, or in PyCodeCache by path) and kernel name."""
    name = getattr(bmreq, "kernel_name", None)
    path = getattr(bmreq, "module_path", None)
    if not isinstance(name, str):
        return None
    mod = getattr(bmreq, "_benchmark_module", None)
    if mod is None and isinstance(path, str):
        cache = getattr(sys.modules.get("torch._inductor.codecache"), "PyCodeCache", None)
        by_path = getattr(cache, "modules_no_attr", None)
        mod = by_path.get(path) if isinstance(by_path, dict) else None
        if mod is None:
            mods = getattr(cache, "modules", None)
            mods = list(mods.values()) if isinstance(mods, dict) else list(mods or [])
            mod = next((m for m in reversed(mods) if getattr(m, "__file__", None) == path), None)
    return getattr(mod, name, None) if mod is not None else None


def template_resources(choice) -> dict:
    """Registers, spills and shared memory of one Inductor template choice, read after its
    benchmark, with where they came from (``source``) or why they are not known (``why``):
    its benchmark kernel's launcher, else that kernel's compiled binary (Triton fills ``n_regs``
    once it has run), else the choice's own ``n_regs`` (registers only: Inductor's, at precompile).

    >>> template_resources(object())["why"]
    "registers not known: this choice has no benchmark request (not Inductor's Triton template)"
    """
    bmreq = getattr(choice, "bmreq", None)
    if bmreq is None:
        return {"why": "registers not known: this choice has no benchmark request (not Inductor's Triton template)"}
    kernel = _benchmark_kernel(bmreq)
    launchers = getattr(kernel, "launchers", None)
    ln = launchers[0] if isinstance(launchers, list) and len(launchers) == 1 else None
    results = getattr(kernel, "compile_results", None)
    binary = getattr(results[0], "kernel", None) if isinstance(results, list) and len(results) == 1 else None
    out = {}
    for obj, label in ((ln, FROM_LAUNCHER), (binary, FROM_BINARY)):
        regs = _num(getattr(obj, "n_regs", None)) if obj is not None else None
        if regs is not None:     # the three numbers of one object, labelled with it
            shared = _num(getattr(obj, "shared", None))
            out = {"registers": regs, "spills": _num(getattr(obj, "n_spills", None)), "source": label,
                   "shared_mem_bytes": shared if shared is not None else
                   _num(getattr(getattr(obj, "metadata", None), "shared", None))}
            break
    if not out and _num(getattr(choice, "n_regs", None)) is not None:
        out = {"registers": _num(choice.n_regs), "source": FROM_CHOICE}
    out.setdefault("registers", None)
    if out["registers"] is None:
        out["why"] = ("registers not known: Inductor released this choice's benchmark kernel before it was read"
                      if kernel is None else "registers not known: its benchmark kernel does not say (n_regs empty)")
    return out


def _origins(path) -> dict:
    """{kernel name: "aten.gelu, aten.sum"} from an Inductor wrapper's source (the ``Original
    ATen: [...]`` comment above each ``async_compile.triton('name', ...)``)."""
    try:
        with open(path, "rb") as f:
            text = f.read(_MAX_SOURCE_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    return origins_of_source(text)


def origins_of_source(text: str) -> dict:
    """The fused ATen ops of each kernel an Inductor wrapper defines.

    >>> origins_of_source("# Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]\\n"
    ...                   "triton_poi_fused_gelu_0 = async_compile.triton('triton_poi_fused_gelu_0', '''")
    {'triton_poi_fused_gelu_0': 'aten.gelu'}
    """
    out = {}
    last = None
    events = sorted([(m.start(), "aten", m[1]) for m in _ATEN_RE.finditer(text)] +
                    [(m.start(), "def", m[2]) for m in _DEF_RE.finditer(text)])
    for _pos, kind, val in events:
        if kind == "aten":
            last = val.strip()
        elif last is not None:
            out[val] = last
            last = None
    return out


def attach_tuning(trace, got: dict) -> None:
    """Put a watch's :meth:`TuningWatch.tables` on a trace: its ``autotune`` and ``variants``
    tables and ``meta["tuning"]`` (what was watched, the notes)."""
    from kernelscope.trace.model import AUTOTUNE_COLUMNS, VARIANT_COLUMNS, frame

    def table(rows, schema):
        return frame({c: [r.get(c) for r in rows] for c in schema} if rows else {}, schema)
    trace.autotune = table(got.get("autotune") or [], AUTOTUNE_COLUMNS)
    trace.variants = table(got.get("variants") or [], VARIANT_COLUMNS)
    trace.meta["tuning"] = {"watched": list(got.get("watched") or []), "notes": list(got.get("notes") or []),
                            "candidates": len(trace.autotune), "variants": len(trace.variants)}
