"""Itanium C++ name demangling (``_ZN2at6native...`` -> ``at::native::...``) through the C++
runtime's own ``__cxa_demangle``, loaded with ctypes on first use; no package needed.

Proton names kernels by their mangled symbol where CUPTI's activity records (Kineto) give the
demangled one, so matching the two needs this. Where no C++ runtime can be loaded, names stay
as they are.

>>> demangle("_ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl")
'at::cuda::(anonymous namespace)::spin_kernel(long)'
>>> demangle("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT")
'nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT'
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
from functools import lru_cache

_fn = None
_free = None


def _load():
    global _fn, _free
    if _fn is not None:
        return _fn if _fn is not False else None
    for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", ctypes.util.find_library("c++"),
                 "libc++abi.dylib", "libc++.1.dylib"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            f = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                      ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        libc.free.argtypes = [ctypes.c_void_p]
        _fn, _free = f, libc.free
        return _fn
    _fn = False
    return None


@lru_cache(maxsize=8192)
def demangle(name: str) -> str:
    """The demangled form of a mangled C++ symbol; anything else comes back unchanged."""
    if not isinstance(name, str) or not name.startswith("_Z"):
        return name
    f = _load()
    if f is None:
        return name
    status = ctypes.c_int(0)
    try:
        p = f(name.encode("utf-8", "replace"), None, None, ctypes.byref(status))
    except (ValueError, OSError):
        return name
    if status.value != 0 or not p:
        return name
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        _free(p)


def name_key(name) -> str:
    """A loose key for matching kernel names recorded by different tools: demangled, without
    whitespace (demanglers differ in ``> >`` against ``>>``) and a leading ``void ``.

    >>> name_key("void f<a<int> >(int)") == name_key("f<a<int>>(int)")
    True
    """
    s = demangle(str(name))
    if s.startswith("void "):
        s = s[5:]
    return "".join(s.split())


# A source name (<length><identifier>), a substitution or template parameter (S4_, T_), an
# integer or bool literal (Li128E, Lb0E), else a length: the pieces of a mangled symbol that
# read as words without a full demangler.
_PIECE = re.compile(r"[ST][0-9A-Z]*_|L([a-z])(n?\d+)E|(\d+)")


def mangled_words(name: str) -> list:
    """The identifiers and literals that can be read in a mangled symbol, in order, for one that
    ``__cxa_demangle`` (and c++filt) reject; numbers come back as digit strings.

    >>> mangled_words("_ZN7cutlass4gemm9GemmShapeILi64ELi128ELi32EEE")
    ['cutlass', 'gemm', 'GemmShape', '64', '128', '32']
    """
    out, i = [], 2 if str(name).startswith("_Z") else 0
    s = str(name)
    while i < len(s):
        m = _PIECE.match(s, i)
        if not m:
            i += 1
            continue
        if m.group(3):
            n, j = int(m.group(3)), m.end()
            word = s[j:j + n]
            if n and len(word) == n and (word[0].isalpha() or word[0] == "_"):
                out.append(word)
                i = j + n
                continue
        elif m.group(1):
            v = m.group(2).replace("n", "-")
            out.append(("true" if v == "1" else "false") if m.group(1) == "b" else v)
        i = m.end()
    return out
