"""A trace's whole text read under cheap checks, so that a bomb is refused before it is held.

The careful path (:func:`~kernelscope.trace.kineto.read_kineto` when the text does not stream)
holds a file's whole text, and a few hundred kilobytes of gzip inflate to gigabytes: of
whitespace, of garbage, or of one string that decoding then copies several times over (a
300 MiB kernel name peaked at 3.1 GiB). So, as the text comes in (:func:`~.files.read_blocks`:
decompressed a block at a time, under the size cap):

* leading whitespace is dropped, not held (JSON allows any amount of it);
* the first :data:`PREFIX_BYTES` must be able to start a JSON document: an error inside them
  is the whole text's error (:func:`~.decode.prefix_problem`), said at once;
* no stretch of more than :data:`MAX_STRING` bytes goes without a ``"`` (no string of torch's is
  near that long, and no stretch of JSON between two strings either): the string, or the
  whitespace, is named in a :class:`~kernelscope.TraceError`.

So a bomb is refused with about :data:`MAX_STRING` held, whatever it inflates to.
"""
from __future__ import annotations

import re

import numpy as np

from kernelscope.errors import TraceError
from kernelscope.trace.decode import NotJSON, prefix_problem
from kernelscope.trace.files import read_blocks
from kernelscope.units import fmt_bytes

# The longest stretch of text without a string boundary (a "): torch.profiler's longest strings
# (C++ template kernel names, shapes) are kilobytes. The streaming reader's longest stretch
# without a cut between events is the same size (stream.MAX_UNCUT_BLOCKS blocks).
MAX_STRING = 32 << 20
# Text checked for an early JSON error before the rest is read.
PREFIX_BYTES = 1 << 20

_WS = b" \t\n\r"
_QUOTE, _BACKSLASH = 0x22, 0x5C
_BOUNDARY = re.compile(rb'(?<!\\)"')     # a " not escaped: a string's start or end (\" is inside one)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
# The key of the string whose opening quote ends the text: "key": "
_KEY = re.compile(rb'"((?:[^"\\]|\\.){1,200})"[ \t\n\r]*:[ \t\n\r]*"\Z')


def read_text(path, notes=None, label=None):
    """The file's whole text (gunzipped; leading whitespace dropped), read under the checks
    above; :class:`~kernelscope.TraceError` naming the file (or ``label``) and what is wrong
    otherwise.

    >>> read_text("mlp_train.pt.trace.json.gz")[:1]          # held once, not copied into bytes
    bytearray(b'{')
    """
    label = label or str(path)
    blocks = read_blocks(path, notes)
    text = bytearray()
    checked = False
    last = -1          # where the last string boundary (a " not escaped) is in ``text``
    try:
        for block in blocks:
            if not text:
                block = block.lstrip(_WS)
                if not block:
                    continue
            start = len(text)
            text += block
            del block
            last = _check_runs(text, start, last, label)
            if not checked and len(text) > PREFIX_BYTES:
                checked = True
                head = bytes(text[:PREFIX_BYTES])
                if not head.startswith(_BOMS):      # re-encoded text: to_utf8 reads it later
                    problem = prefix_problem(head)
                    if problem:
                        raise NotJSON(label, problem)
    finally:
        blocks.close()
    return text


def _check_runs(text: bytearray, start: int, last: int, label) -> int:
    """Where the last string boundary of ``text`` is (``last``: before the new text), after
    checking the new text from ``start`` on for a stretch of more than :data:`MAX_STRING`.

    A block is shorter than :data:`MAX_STRING`, so only the stretch open before it can be too
    long: the first and the last boundary of the new text are all that is needed."""
    m = _BOUNDARY.search(text, start)
    end = len(text) if m is None else m.start()
    if end - last - 1 > MAX_STRING:
        raise TraceError(label, _too_long(text, last, end))
    return last if m is None else _last_boundary(text, m.start())


def _last_boundary(text: bytearray, first: int) -> int:
    """The last " of ``text`` (from ``first``, one) that is not escaped."""
    j = len(text)
    for _ in range(64):             # a trace's text: the last " or the one before it
        j = text.rfind(b'"', first, j)
        if j <= first or text[j - 1] != _BACKSLASH:
            return max(j, first)
    # Thousands of escaped quotes (a bomb made of them): look at them all at once.
    a = np.frombuffer(text, np.uint8, count=j - first, offset=first)
    bound = a == _QUOTE
    bound[1:] &= a[:-1] != _BACKSLASH
    found = first + len(bound) - 1 - int(bound[::-1].argmax()) if bound.any() else first
    del a, bound
    return found


def _too_long(text: bytearray, last: int, end: int) -> str:
    """The message for the stretch of ``text`` after ``last`` (a boundary) up to ``end``."""
    size = f"{fmt_bytes(end - last - 1)} or more" if end == len(text) else fmt_bytes(end - last - 1)
    limit = f"kernelscope reads strings of up to {fmt_bytes(MAX_STRING)} (torch.profiler writes none that long)"
    if last >= 0:
        m = _KEY.search(bytes(text[max(0, last - 256):last + 1]))
        if m:
            key = m.group(1).decode("utf-8", "replace")
            key = "".join(c if c.isprintable() else "?" for c in key)[:80]
            return f'its "{key}" string at byte {last:,} holds {size}: {limit}'
    tail = bytes(text[max(last + 1, end - 4096):end])
    what = "whitespace" if not tail.strip(_WS) else "JSON without a string in it"
    return f"it holds {size} of {what} from byte {last + 1:,}: not a torch.profiler trace"
