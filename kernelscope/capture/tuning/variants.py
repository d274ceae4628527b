"""The compiled variants of a Triton JITFunction (Triton's own kernels and Helion's ``_helion_*``,
seen by the JIT watch in :mod:`.triton`): its ``device_caches[dev][0]`` (``CompiledKernel.metadata``,
``n_regs``, ``n_spills``, the constexprs) as rows of the ``variants`` table, and the variant a
Triton Config compiled to (its registers and spills beside the autotuning candidate)."""
from __future__ import annotations

import re

from kernelscope.capture.tuning.common import config_text, plain_number, scalar_text


def jit_of(fn):
    """The JITFunction under an Autotuner/Heuristics (``.fn`` until one has ``device_caches``).

    >>> from types import SimpleNamespace as NS
    >>> jit_of(NS(fn=NS(fn=NS(device_caches={}, name="k")))).name
    'k'
    """
    for _ in range(8):
        if fn is None or hasattr(fn, "device_caches"):
            return fn
        fn = getattr(fn, "fn", None)
    return None


def function_name(jf) -> str:
    """The name of a JITFunction's Python function.

    >>> from types import SimpleNamespace as NS
    >>> function_name(NS(fn=NS(__name__="add_one"))), function_name(None)
    ('add_one', '<unknown>')
    """
    name = getattr(jf, "__name__", None) or getattr(getattr(jf, "fn", None), "__name__", None)
    return str(name) if name else "<unknown>"


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
        if scalar_text(v) is not None and v is not None:
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
    name, source = function_name(jf), _fn_source(jf)
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
                "config": config_text(knobs), "num_warps": plain_number(getattr(md, "num_warps", None)),
                "num_stages": plain_number(getattr(md, "num_stages", None)),
                "num_ctas": plain_number(getattr(md, "num_ctas", None)),
                "registers": plain_number(getattr(ck, "n_regs", None)),
                "spills": plain_number(getattr(ck, "n_spills", None)),
                "shared_mem_bytes": plain_number(getattr(md, "shared", None)),
                "hash": str(getattr(md, "hash", None) or getattr(ck, "hash", "") or "") or None,
                "source": source, "source_ops": None, "device_index": plain_number(device),
                **ptx_loads(getattr(ck, "asm", None)), "_consts": consts,
            })
    return out


_LD_GLOBAL = re.compile(r"\bld\.global((?:\.[a-z0-9]+)*)")
_MMA = re.compile(r"\b(?:wgmma|mma)\.")


def ptx_loads(asm) -> dict:
    """A compiled kernel's global loads by width and whether it uses the tensor cores, from its
    PTX: ``loads_scalar`` / ``loads_vector`` count ``ld.global`` without / with ``.v2``/``.v4``
    (Triton vectorizes the loads it can prove contiguous and aligned), ``tensor_core`` is True
    where an ``mma``/``wgmma`` instruction appears. None where the PTX is not kept.

    >>> ptx_loads({"ptx": "ld.global.v4.b32 {%r1,%r2,%r3,%r4}, [%rd1];\\n ld.global.b32 %r5, [%rd2];"})
    {'loads_scalar': 1, 'loads_vector': 1, 'tensor_core': False}
    >>> ptx_loads(None)
    {'loads_scalar': None, 'loads_vector': None, 'tensor_core': None}
    """
    ptx = asm.get("ptx") if isinstance(asm, dict) else None
    if isinstance(ptx, bytes):
        ptx = ptx.decode("utf-8", "replace")
    if not isinstance(ptx, str):
        return {"loads_scalar": None, "loads_vector": None, "tensor_core": None}
    widths = [m.group(1) for m in _LD_GLOBAL.finditer(ptx)]
    vector = sum(1 for w in widths if ".v2" in w or ".v4" in w or ".v8" in w)
    return {"loads_scalar": len(widths) - vector, "loads_vector": vector, "tensor_core": bool(_MMA.search(ptx))}


def match_variant(variants, cfg) -> dict | None:
    """The compiled variant of a Triton Config: its kwargs among the constexprs, same warps and
    stages; None when none or several distinct ones match (never a guess).

    >>> from types import SimpleNamespace as NS
    >>> v = {"_consts": {"BLOCK": 64}, "num_warps": 4, "num_stages": 3, "registers": 40, "spills": 0,
    ...      "shared_mem_bytes": 0}
    >>> match_variant([v], NS(kwargs={"BLOCK": 64}, num_warps=4, num_stages=3))["registers"]
    40
    >>> match_variant([v], NS(kwargs={"BLOCK": 32}, num_warps=4, num_stages=3)) is None
    True
    """
    kw = getattr(cfg, "kwargs", None) or {}
    # A Triton whose compiled kernels do not say their constexprs: warps and stages alone,
    # accepted only where they single one out.
    blind = not any(v["_consts"] for v in variants)
    hits = [v for v in variants
            if (blind or all(k in v["_consts"] and v["_consts"][k] == x for k, x in kw.items()))
            and v["num_warps"] == plain_number(getattr(cfg, "num_warps", None))
            and v["num_stages"] == plain_number(getattr(cfg, "num_stages", None))]
    keys = {(h["registers"], h["spills"], h["shared_mem_bytes"]) for h in hits}
    return hits[0] if len(keys) == 1 else None
