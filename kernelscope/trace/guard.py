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

The streaming reader's blocks pass the same watch (:func:`checked_blocks`, two searches a
block), so a huge string is refused there before the stream gathers it. So a bomb is refused
with a few times :data:`MAX_STRING` held, whatever it inflates to.
"""
from __future__ import annotations

import re

import numpy as np

from kernelscope.errors import TraceError
from kernelscope.trace.decode import NotJSON, prefix_problem
from kernelscope.trace.files import read_blocks
from kernelscope.units import fmt_bytes

# The longest stretch of text without a string boundary (a "): torch.profiler's longest strings
# (C++ template kernel names, shapes) are kilobytes, and so are its stretches between two strings
# (the longest: a process group's ranks, ~7 bytes a rank). A string just under it still costs
# about ten times its size to load (a 6 MiB kernel name: 65 MiB; 30 MiB: 329 MiB and 7 s).
# Blocks of text are no longer than this (the reader's 8 MiB), so only a stretch open across
# blocks can be too long.
MAX_STRING = 8 << 20
# Text checked for an early JSON error before the rest is read.
PREFIX_BYTES = 1 << 20

_WS = b" \t\n\r"
_QUOTE, _BACKSLASH = 0x22, 0x5C
_NOT_WS = re.compile(rb'[^ \t\n\r]')
# JSON's numbers, literals and punctuation (a token cut at the sample's end is a number's start).
_NUMBERS = re.compile(rb'(?:[ \t\n\r,:\[\]{}]+|-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?|null|true|false)*'
                      rb'(?:-|n|nu|nul|t|tr|tru|f|fa|fal|fals)?')
_DELIMITER = re.compile(rb'[ \t\n\r,:\[\]{}]')
_DIGIT = re.compile(rb'[0-9]')
# A file of another format than a trace says so first (kernelscope's saved reports do).
_FORMAT_FIRST = re.compile(rb'\{[ \t\n\r]*"format"[ \t\n\r]*:')
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
    runs = Runs(label)
    text = bytearray()
    checked = False
    try:
        for block in blocks:
            if not text:
                block = block.lstrip(_WS)
                if not block:
                    continue
            runs.add(block)
            text += block
            del block
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


def checked_blocks(blocks, label=""):
    """The text's ``blocks`` as they come, refusing a stretch of more than :data:`MAX_STRING`
    without a string boundary as it passes (:class:`Runs`: two searches a block, nothing held).

    >>> b"".join(checked_blocks([b'{"traceEvents": [', b'{"name": "k"}]}']))
    b'{"traceEvents": [{"name": "k"}]}'
    """
    runs = Runs(label)
    try:
        for block in blocks:
            if not isinstance(block, (bytes, bytearray)):
                block = bytes(block)
            runs.add(block)
            yield block
    finally:
        if hasattr(blocks, "close"):
            blocks.close()


class Runs:
    """Text watched a block at a time for a stretch of more than :data:`MAX_STRING` without a
    string boundary (a ``"`` not escaped): a :class:`~kernelscope.TraceError` names the string's
    key, or says it is whitespace. Leading whitespace is no stretch (JSON allows any amount).

    A block is shorter than :data:`MAX_STRING`, so only the stretch open before it can be too
    long: the first and the last boundary of each block are all it looks for.

    >>> r = Runs("x.json"); r.add(b'{"name": "' + b"a" * 100); r.last
    9
    """

    def __init__(self, label):
        self.label = label
        self.pos = 0          # where the next block starts in the text
        self.last = -1        # where the last boundary is
        self.before = b""     # the text up to it (its key, for the message)
        self.started = False  # a byte other than whitespace seen
        self.head = b""       # the text's first PREFIX_BYTES from there: what is wrong first

    def add(self, block) -> None:
        if len(block) > MAX_STRING:          # a stretch inside a block could be too long: in pieces
            for i in range(0, len(block), MAX_STRING):
                self.add(block[i:i + MAX_STRING])
            return
        if not self.started:
            m = _NOT_WS.search(block)
            if m is None:
                self.pos += len(block)
                self.last = self.pos - 1
                return
            self.started = True
            self.last = self.pos + m.start() - 1
            self.head = bytes(block[m.start():m.start() + PREFIX_BYTES])
        elif len(self.head) < PREFIX_BYTES:
            self.head += bytes(block[:PREFIX_BYTES - len(self.head)])
        m = _BOUNDARY.search(block)
        end = len(block) if m is None else m.start()
        if self.pos + end - self.last - 1 > MAX_STRING and not self._numbers(block, end):
            # A JSON error before the stretch is what is wrong first (and how the whole read says it).
            problem = None if self.head.startswith(_BOMS) else prefix_problem(self.head)
            if problem:
                raise NotJSON(self.label, problem)
            raise TraceError(self.label, self._too_long(block, end, ongoing=m is None))
        if m is not None:
            j = _last_boundary(block, m.start())
            self.last = self.pos + j
            self.before = bytes(block[max(0, j - 256):j + 1])
        self.pos += len(block)

    def _numbers(self, block, end: int) -> bool:
        """Whether the long stretch ending at ``end`` of ``block`` is JSON numbers in a file of
        another format (a saved report's columns are long arrays of them; it starts with its
        ``"format"``), not one string: it follows no key's opening quote, and its last 64 KiB
        here are numbers, nulls and JSON's punctuation, with a digit. (In a trace, 100 MiB of
        numbers took 2.4 GiB to read: no trace holds such arrays.)"""
        if not _FORMAT_FIRST.match(self.head) or (self.last >= 0 and _KEY.search(self.before)):
            return False
        return _is_numbers(bytes(block[max(0, end - (1 << 16)):end]))

    def _too_long(self, block, end: int, ongoing: bool) -> str:
        """The message for the stretch from the last boundary to ``end`` in ``block``."""
        n = self.pos + end - self.last - 1
        size = f"{fmt_bytes(n)} or more" if ongoing else fmt_bytes(n)
        m = _KEY.search(self.before) if self.last >= 0 else None
        if m:
            key = m.group(1).decode("utf-8", "replace")
            key = "".join(c if c.isprintable() else "?" for c in key)[:80]
            return (f'its "{key}" string at byte {self.last:,} holds {size}: kernelscope reads strings '
                    f"of up to {fmt_bytes(MAX_STRING)} (torch.profiler writes none that long)")
        tail = bytes(block[max(0, end - 4096):end])
        what = ("whitespace" if not tail.strip(_WS) else "numbers" if _is_numbers(tail)
                else 'text without a string boundary (")')
        return f"it holds {size} of {what} from byte {self.last + 1:,}: not a torch.profiler trace"


def _is_numbers(sample: bytes) -> bool:
    """Whether ``sample`` (cut anywhere) is JSON numbers, literals and punctuation, with a digit."""
    cut = _DELIMITER.search(sample)                 # from a whole token on
    sample = sample[cut.end():] if cut else b""
    return bool(_DIGIT.search(sample)) and _NUMBERS.fullmatch(sample) is not None


def _rfind_quote(text, lo: int, hi: int) -> int:
    """``text.rfind(b'"', lo, hi)``, also of a memoryview (text read into a buffer, which has no
    rfind): looked for in windows from the end, growing (the last quote of a trace's block is
    within its last few hundred bytes).

    >>> _rfind_quote(memoryview(b'a"b"cd'), 0, 6), _rfind_quote(memoryview(b'a"b'), 2, 3)
    (3, -1)
    """
    if not isinstance(text, memoryview):
        return text.rfind(b'"', lo, hi)
    width = 4096
    while hi > lo:
        at = max(lo, hi - width)
        k = bytes(text[at:hi]).rfind(b'"')
        if k >= 0:
            return at + k
        hi, width = at, width * 4
    return -1


def _last_boundary(text, first: int) -> int:
    """The last " of ``text`` (from ``first``, one) that is not escaped."""
    j = len(text)
    for _ in range(64):             # a trace's text: the last " or the one before it
        j = _rfind_quote(text, first, j)
        if j <= first or text[j - 1] != _BACKSLASH:
            return max(j, first)
    # Thousands of escaped quotes (a bomb made of them): look at them all at once.
    a = np.frombuffer(text, np.uint8, count=j - first, offset=first)
    bound = a == _QUOTE
    bound[1:] &= a[:-1] != _BACKSLASH
    found = first + len(bound) - 1 - int(bound[::-1].argmax()) if bound.any() else first
    del a, bound
    return found
