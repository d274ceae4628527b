"""What the tuners' watches share: a configuration as text, a number read off another version's
attribute, the note of a candidate that could not run, and :class:`WatchState` (whether the
region runs, the notes, what was watched, the attributes patched until stop)."""
from __future__ import annotations

import sys

from kernelscope.jsonable import whole

FAILED = "did not run: the tuner timed it as infinite (out of resources, or it failed to compile)"


def plain_number(v):
    """An int or float from a value that may be anything (a Triton attribute of another version).

    Unlike :func:`kernelscope.jsonable.num`, an int stays an int (``num_warps``, read by
    :func:`~kernelscope.jsonable.whole`), an infinite time stays infinite (the tuner's "could not
    run", which Helion's check needs) and text is not parsed (an attribute is a number or absent).

    >>> plain_number(True), plain_number(4), plain_number(float("inf")), plain_number("4")
    (1, 4, inf, None)
    """
    if isinstance(v, int):      # a bool too: True is 1
        return whole(v)
    return v if isinstance(v, float) else None


def scalar_text(v) -> str | None:
    """The text of one knob's value (a number, a name, a short list), or None for anything else.

    >>> scalar_text(64), scalar_text([64, 32]), scalar_text({"a": 1})
    ('64', '[64, 32]', None)
    """
    if isinstance(v, (bool, int, float, str)) or v is None:
        return str(v)
    if isinstance(v, (list, tuple)) and len(v) <= 16:   # Helion's block_sizes=[64, 32]
        parts = [scalar_text(x) for x in v]
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
        t = scalar_text(v)
        if t is not None:
            parts.append(f"{k}={t}")
    return ", ".join(parts)


class WatchState:
    """What the watches of one region share: ``active`` (each wrapper checks it: outside the
    region it steps aside), ``notes`` and ``watched`` (``meta["tuning"]``), the attributes
    patched (``patches``: (owner, attribute, original), given back last first by
    :meth:`restore`), and ``force`` (import a tuner to watch it, else only if imported).

    >>> s = WatchState(); s.module("sys") is sys, s.module("not_imported_here") is None
    (True, True)
    """

    def __init__(self, force: bool = False):
        self.force = force
        self.active = False
        self.notes = []
        self.watched = []
        self.patches = []           # (owner, attribute, original)

    def module(self, name):
        """The module ``name`` if imported, else imported when forced, else None."""
        if sys.modules.get(name) is not None:
            return sys.modules[name]
        if not self.force or name in sys.modules:    # None in sys.modules: blocked, not installed
            return None
        import importlib
        return importlib.import_module(name)

    def restore(self) -> None:
        """Give every patched attribute its original back, the last patched first."""
        for owner, attr, orig in reversed(self.patches):
            try:
                setattr(owner, attr, orig)
            except Exception:  # noqa: BLE001 - one class refusing its original must not keep the rest from theirs
                pass
        self.patches.clear()
