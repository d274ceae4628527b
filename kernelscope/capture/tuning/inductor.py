"""The watch of Inductor's max-autotune and compiled kernels (:class:`InductorWatch`).

``torch._inductor.select_algorithm.add_feedback_saver`` sees every max-autotune choice's time
(Triton templates and cuBLAS/ATen); ``PyCodeCache.modules`` holds each compiled kernel's
``CachingAutotuner`` (its launcher's config, registers, spills, shared memory) and the wrapper
code's ``Original ATen: [...]`` comment (the fused ops). Inductor's static launcher calls no
Triton hook; its launch events in the trace carry the knobs (trace/builder.py).
``AlgorithmSelectorCache.benchmark_choice`` (one call per choice timed in this process) runs
inside a profiler range named for the choice (``INDUCTOR_BENCH_RANGE``), so the trace tells
which launches were which choice's benchmark (its template's kernel is named by a placeholder,
``triton_mm``; an extern's is an ordinary cuBLAS kernel). The winner of a template tuning is
tied to the compiled template kernel (``triton_tem_*``) whose launcher's warps and stages and
whose source's constexprs are the winner's, where exactly one tuning's winner fits it.
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

from kernelscope.analysis.producers import INDUCTOR_BENCH_RANGE, INDUCTOR_NAME, NOT_BENCHMARKED
from kernelscope.capture.tuning.common import FAILED, WatchState, config_text, plain_number, scalar_text
from kernelscope.jsonable import num

_ATEN_RE = re.compile(r"Original ATen: \[([^\]\n]*)\]")
_DEF_RE = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)'", re.M)
_MAX_SOURCE_BYTES = 8 << 20

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
    out = {str(k): v for k, v in got.items() if scalar_text(v) is not None} if isinstance(got, dict) else {}
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
        regs = plain_number(getattr(obj, "n_regs", None)) if obj is not None else None
        if regs is not None:     # the three numbers of one object, labelled with it
            shared = plain_number(getattr(obj, "shared", None))
            out = {"registers": regs, "spills": plain_number(getattr(obj, "n_spills", None)), "source": label,
                   "shared_mem_bytes": shared if shared is not None else
                   plain_number(getattr(getattr(obj, "metadata", None), "shared", None))}
            break
    if not out and plain_number(getattr(choice, "n_regs", None)) is not None:
        out = {"registers": plain_number(choice.n_regs), "source": FROM_CHOICE}
    out.setdefault("registers", None)
    if out["registers"] is None:
        out["why"] = ("registers not known: Inductor released this choice's benchmark kernel before it was read"
                      if kernel is None else "registers not known: its benchmark kernel does not say (n_regs empty)")
    return out


def _origins(path) -> dict:
    """{kernel name: "aten.gelu, aten.sum"} from an Inductor wrapper's source (the ``Original
    ATen: [...]`` comment above each ``async_compile.triton('name', ...)``)."""
    try:
        with Path(path).open("rb") as f:
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


class InductorWatch:
    """Inductor's max-autotune choices and compiled kernels in one region (its part of a
    :class:`~kernelscope.capture.tuning.TuningWatch`): :meth:`start` registers the feedback
    saver and wraps ``benchmark_choice``, :meth:`remove_saver` takes the saver away again,
    :meth:`variants` and :meth:`rows` are what it saw.

    >>> w = InductorWatch(WatchState()); w.variants({"k"}), w.rows(0, [])
    ([], ([], 0))
    """

    def __init__(self, shared: WatchState):
        self.shared = shared
        self._feedback = []         # Inductor's choices, as plain rows
        self._bench_labels = {}     # id of an Inductor choice benchmarked, not yet in a feedback -> (range, choice)
        self._bench_count = 0
        self._saver: object = None

    def start(self) -> None:
        sa = self.shared.module("torch._inductor.select_algorithm")
        if sa is None:
            return
        add = getattr(sa, "add_feedback_saver", None)
        if add is None:
            self.shared.notes.append("this torch has no select_algorithm.add_feedback_saver: max-autotune "
                                     "choices not watched")
            return

        def saver(timings, name, input_nodes, choices, *rest):
            if self.shared.active:
                self._choices(timings, name, input_nodes)
        self._saver = saver
        add(saver)
        self.shared.watched.append("inductor.max_autotune")
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
            self.shared.notes.append("this torch has no AlgorithmSelectorCache.benchmark_choice classmethod: "
                                     "max-autotune's benchmark launches are not tied to their choices")
            return
        func, watch = orig.__func__, self

        @functools.wraps(func)
        def benchmark_choice(klass, choice, *args, **kwargs):
            if not watch.shared.active:
                return func(klass, choice, *args, **kwargs)
            with rf(watch.bench_label(choice)):
                return func(klass, choice, *args, **kwargs)
        self.shared.patches.append((owner, "benchmark_choice", orig))
        owner.benchmark_choice = classmethod(benchmark_choice)
        self.shared.watched.append("inductor.benchmark_ranges")

    def bench_label(self, choice) -> str:
        """The profiler range of one choice's benchmark: ``inductor max-autotune benchmark #3:
        triton_mm_17`` (numbered: extern choices' names, ``addmm``, repeat across tunings).

        >>> from types import SimpleNamespace as NS
        >>> InductorWatch(WatchState()).bench_label(NS(name="addmm"))
        'inductor max-autotune benchmark #1: addmm'
        """
        got = self._bench_labels.get(id(choice))
        if got is not None:
            return got[0]
        self._bench_count += 1
        label = f"{INDUCTOR_BENCH_RANGE} #{self._bench_count}: {str(getattr(choice, 'name', '?'))[:200]}"
        # The choice is held until its feedback (or stop()): its id cannot name another meanwhile.
        self._bench_labels[id(choice)] = (label, choice)
        return label

    def forget_benchmarks(self) -> None:
        """Let go of the choices benchmarked but never fed back."""
        self._bench_labels.clear()

    def remove_saver(self) -> None:
        """Take the feedback saver off Inductor's list again."""
        if self._saver is not None:
            try:
                from torch._inductor import select_algorithm as sa
                fns = getattr(sa.get_algorithm_selector_cache(), "feedback_saver_fns", None)
                if isinstance(fns, list) and self._saver in fns:
                    fns.remove(self._saver)
            except Exception:  # noqa: BLE001 - left registered, it does nothing once inactive
                pass

    def _choices(self, timings, name, input_nodes) -> None:
        try:
            shapes = []
            for n in input_nodes or []:
                try:
                    shapes.append("x".join(str(s) for s in n.get_size()))
                except Exception:  # noqa: BLE001 - any of Inductor's IR nodes, raising its own error: this size unknown
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
                except Exception:  # noqa: BLE001 - the choice's own method, of any torch: its row without the knobs
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
                unbenched = (bench is None and num(t) is not None and "inductor.benchmark_ranges" in self.shared.watched)
                self._feedback.append({
                    "kernel": str(getattr(c, "name", "?")), "producer": "Inductor", "tuner": "inductor max-autotune",
                    "tuning": tuning, "op": str(name), "shape_key": key,
                    "choice": "extern" if extern else "Triton template",
                    "config": (str(info.get("kernel_call_name") or getattr(c, "name", "")) if extern
                               else (config_text(kw) or desc)),
                    "description": desc[:500],
                    "num_warps": plain_number(info.get("num_warps")) if not extern else None,
                    "num_stages": plain_number(info.get("num_stages")) if not extern else None,
                    "num_ctas": None, "p50_ms": num(t), "p20_ms": None, "p80_ms": None,
                    "registers": res.get("registers"), "spills": res.get("spills"),
                    "shared_mem_bytes": res.get("shared_mem_bytes"), "resources_source": res.get("source"),
                    "winner": c is best, "cached": False,
                    "benchmark_range": bench, "compiled_kernel": None, "_kw": kw,
                    "note": choice_note(extern, c is best, num(t) is None, res.get("why"), unbenched),
                })
        except Exception as e:  # noqa: BLE001 - runs inside the user's compile: a note, never its failure
            self.shared.notes.append(f"Inductor's autotuning could not be read ({type(e).__name__}: {e})"[:300])

    # -- the tables -------------------------------------------------------------------------
    def variants(self, names) -> list:
        """The compiled kernels of the region's Inductor kernels (``names``: the recorded kernels'),
        rows of ``variants``; a note, and none, where they cannot be read."""
        try:
            return self._compiled(names)
        except Exception as e:  # noqa: BLE001 - another torch's code cache and kernels: a note, the tables stand
            self.shared.notes.append(f"Inductor's compiled kernels not read ({type(e).__name__}: {e})"[:300])
            return []

    def rows(self, first, variants) -> tuple[list, int]:
        """The ``autotune`` rows of the choices, their tunings numbered from ``first``, each winning
        template tied to its compiled kernel among ``variants``; and how many tunings they are."""
        inductor = [dict(r, tuning=r["tuning"] + first) for r in self._feedback]
        link_template_winners(inductor, [v for v in variants if v.get("producer") == "Inductor"])
        for r in inductor:
            r.pop("_kw", None)
        return inductor, len({r["tuning"] for r in self._feedback})

    def _compiled(self, names) -> list:
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
                    "num_warps": plain_number(getattr(cfg, "num_warps", None)),
                    "num_stages": plain_number(getattr(cfg, "num_stages", None)),
                    "num_ctas": plain_number(getattr(cfg, "num_ctas", None)),
                    "registers": plain_number(getattr(ln, "n_regs", None)),
                    "spills": plain_number(getattr(ln, "n_spills", None)),
                    "shared_mem_bytes": plain_number(getattr(ln, "shared", None)),
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

