"""A trace's events a chunk at a time, as its text streams in.

A Kineto trace is one JSON object whose ``traceEvents`` array holds nearly all of the file. Its
text arrives in blocks (:func:`~kernelscope.trace.files.read_blocks`: read and gunzipped a piece
at a time); each chunk of whole events is cut between two events (``}, {``), decoded typed
(msgspec) and handed on, so that the file's text, its decoded events and the tables built from
them are never all held at once. The header comes from the text before the array and after it.

A cut proves itself: ``[`` + text + ``]`` is valid JSON only when the text ends between two
elements of the array (a cut inside a string or a nested value leaves it open), so a cut that
lands inside a kernel name fails to decode and an earlier one is taken. Anything unexpected (no
array near the start, a chunk that is not strict JSON or has an event of an unexpected shape,
JAX's own trace, a UTF-16 file) raises :class:`NotStreamable`: the reader then reads the file
whole along its careful path (:func:`~kernelscope.trace.decode.decode_document`), which
tolerates what it can and says what is wrong, exactly as for a small file.
"""
from __future__ import annotations

import re

import msgspec

from kernelscope.trace.decode import StreamEvent, TraceFile

# Text decoded at a time (about 27k events of a Kineto trace): large enough that the per-chunk
# work is negligible, small enough that a chunk's text and structs are a small part of memory.
BLOCK_BYTES = 8 << 20
# How far into the text the events array must start, and how much text to gather for the check
# that the file is not JAX's own trace (it is recognised by its first 64 KiB).
HEADER_MAX = 16 << 20
SNIFF_BYTES = 1 << 16
# Cut candidates tried per block, and how many blocks of text may pass without a cut.
CUT_TRIES = 8
MAX_UNCUT_BLOCKS = 4

_WS = b" \t\n\r"      # JSON's whitespace (not \f or \v)
_ARRAY = re.compile(rb'"traceEvents"[ \t\n\r]*:[ \t\n\r]*\[')
# Between two events of the array (the cut a chunk, or split.py's stretch, ends at).
EVENT_BOUNDARY = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_EVENTS = msgspec.json.Decoder(list[StreamEvent])


class NotStreamable(Exception):
    """The text is not the common shape: read the file whole along the careful path."""


class EventStream:
    """The events of a trace's text blocks as lists of :class:`~.decode.StreamEvent`.

    Iterate :meth:`chunks`; afterwards ``doc`` holds the header (a
    :class:`~.decode.TraceFile`) and ``n_events`` the number of elements of ``traceEvents``.

    >>> s = EventStream([b'{"traceName": "t", "traceEvents": [{"ph": "X", "name": "k"}, {"ph": "i"}]}'])
    >>> [e.name for chunk in s.chunks() for e in chunk], s.n_events, s.doc.traceName
    (['k', ''], 2, 't')

    A stretch of the array cut between two events (:mod:`.split` reads one so) is read with
    ``inner=True`` (the text starts at an event: no header before it) and ``last=False`` (it
    ends after an event: no ``]`` and header after it); ``tail`` then holds the header after the
    array (of the stretch that ends the file), for the caller to :func:`take_header`.

    >>> s = EventStream([b'{"ph": "X"}, {"ph": "i"}'], inner=True, last=False)
    >>> [e.ph for chunk in s.chunks() for e in chunk], s.tail
    (['X', 'i'], None)
    """

    def __init__(self, blocks, jax_check=None, *, inner=False, last=True, fill=None, spare=None):
        self._blocks = iter(blocks)
        # Buffers free for reuse (see chunks); the streams of one process's stretches share them.
        self._spare = [] if spare is None else spare
        # ``fill(view)``: reads the text that follows what ``blocks`` gave straight into the
        # chunk's buffer, returning how many bytes (0 at the end); saves a copy of every block,
        # and the fresh memory each block's own bytes took (split.py's stretches use it).
        self._fill = fill
        self._ended = False
        self._last_part = last
        self.n_events = 0
        self.doc = TraceFile()
        self.tail = None
        self._buf = b"" if inner else self._header(jax_check)

    def _more(self) -> bytes | None:
        if self._ended:
            return None
        for block in self._blocks:
            if block:
                return bytes(block)
        self._ended = True
        return None

    def _header(self, jax_check) -> bytes:
        """Read up to the start of the events array; the header before it goes to ``doc``."""
        buf, searched = b"", 0
        while len(buf) < SNIFF_BYTES:
            more = self._more()
            if more is None:
                break
            buf += more
        if buf.startswith(_UTF8_BOM):
            buf = buf[len(_UTF8_BOM):]   # editors on Windows add one; the careful path drops it too
        elif buf.startswith(_OTHER_BOMS):
            raise NotStreamable("UTF-16 or UTF-32 text")
        if jax_check is not None and jax_check(buf[:SNIFF_BYTES]):
            raise NotStreamable("JAX's own trace")
        while True:
            for m in _ARRAY.finditer(buf, max(0, searched - 64)):
                head = _object_before(buf[:m.start()])
                if head is not None:
                    take_header(self.doc, head)
                    return buf[m.end():]
            searched = len(buf)
            more = self._more() if len(buf) < HEADER_MAX else None
            if more is None:
                raise NotStreamable("no traceEvents array near the start")
            buf += more

    def chunks(self):
        """Decoded events, a chunk at a time (lists of :class:`~.decode.StreamEvent`)."""
        # Each chunk's text is "[" + the text left over from the last cut + a new block, in a
        # buffer of our own: decoded in place by writing "]" over the byte after its last event
        # (no copy of the chunk's text). The events' Raw fields point into that buffer, so it is
        # reused only once they are gone (fresh memory for every block is costly: page faults).
        carry, self._buf = self._buf, None
        spare = self._spare
        while True:
            start = 1 + len(carry)
            if self._fill is not None:
                buf = _buffer(spare, start + BLOCK_BYTES + 1)
                with memoryview(buf) as whole, whole[start:start + BLOCK_BYTES] as view:
                    n = self._fill(view)
                if not n:
                    spare.append(buf)
                    del buf
                    yield from self._last(carry)
                    return
                stop = start + n
            else:
                more = self._more()
                if more is None:
                    yield from self._last(carry)
                    return
                stop = start + len(more)
                buf = _buffer(spare, stop + 1)
                buf[start:stop] = more
                del more
            buf[0] = 0x5B                # "["
            buf[1:start] = carry
            events, end = self._cut(buf, start, stop)
            if events is None:
                if stop - 1 > max(MAX_UNCUT_BLOCKS * BLOCK_BYTES, 1 << 20):
                    raise NotStreamable("no boundary between events in a long stretch of text")
                carry = bytes(memoryview(buf)[1:stop])
                del buf      # outgrown (the next one is longer): not kept as a spare, which held a huge string's text thrice
                continue
            carry = bytes(memoryview(buf)[end:stop])
            spare.append(buf)
            del buf
            self.n_events += len(events)
            yield events
            del events

    @staticmethod
    def _cut(buf: bytearray, new: int, stop: int):
        """(events before the last boundary in ``buf[:stop]``, where the text after it starts),
        or (None, None) when no boundary decodes yet. Only boundaries in the text from ``new``
        on are looked at (one that failed to decode once always will: the text before it stays)."""
        cuts = list(EVENT_BOUNDARY.finditer(buf, max(1, new - 64, stop - (1 << 16)), stop))
        view = memoryview(buf)
        for m in reversed(cuts[-CUT_TRIES:]):
            end = m.start() + 1          # the byte after the event's closing brace
            kept = buf[end]
            buf[end] = 0x5D              # "]"
            try:
                events = _EVENTS.decode(view[:end + 1])
            except msgspec.ValidationError:
                raise NotStreamable("an event of an unexpected shape") from None
            except (msgspec.DecodeError, RecursionError):
                buf[end] = kept
                continue   # inside a string or a nested value, or the text is not strict JSON
            return events, m.end() - 1
        return None, None

    def _last(self, buf: bytes):
        """The events before the array's closing ``]``, and the header after it (only the
        events, all of the text, for a stretch that ends inside the array)."""
        if not self._last_part:
            try:
                events = _EVENTS.decode(b"[" + buf + b"]") if buf.strip(_WS) else []
            except msgspec.ValidationError:
                raise NotStreamable("an event of an unexpected shape") from None
            except (msgspec.DecodeError, RecursionError):
                raise NotStreamable("a stretch of the events does not end between two events") from None
            self.n_events += len(events)
            if events:
                yield events
            return
        j = len(buf)
        for _ in range(CUT_TRIES):
            j = buf.rfind(b"]", 0, j)
            if j < 0:
                break
            tail = _object_after(buf[j + 1:])
            if tail is None:
                continue
            body = buf[:j]
            try:
                events = _EVENTS.decode(b"[" + body + b"]") if body.strip(_WS) else []
            except msgspec.ValidationError:
                raise NotStreamable("an event of an unexpected shape") from None
            except (msgspec.DecodeError, RecursionError):
                continue
            self.tail = tail
            take_header(self.doc, tail)
            self.n_events += len(events)
            if events:
                yield events
            return
        raise NotStreamable("the events array does not end as JSON")


def take_header(doc: TraceFile, fields: dict) -> None:
    """Set ``doc``'s fields from a header's keys (the text before the array, or after it).

    >>> d = TraceFile(); take_header(d, {"traceName": "t", "other": 1}); d.traceName
    't'
    """
    if "traceEvents" in fields:
        raise NotStreamable("traceEvents twice")   # which one counts is the careful path's call
    for f in TraceFile.__struct_fields__:
        if f in fields and f != "traceEvents":
            setattr(doc, f, fields[f])


def _decode_object(text: bytes):
    try:
        obj = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _object_before(prefix: bytes):
    """The keys before ``"traceEvents"`` as a dict, if ``prefix`` is an object's start up to a key.

    >>> _object_before(b'{"a": 1, '), _object_before(b'{'), _object_before(b'{"a": 1'), _object_before(b'[{')
    ({'a': 1}, {}, None, None)
    """
    p = prefix.rstrip(_WS)
    if p.endswith(b","):
        p = p[:-1].rstrip(_WS)
        if p.endswith((b"{", b",")):
            return None
    elif not p.endswith(b"{"):
        return None
    return _decode_object(p + b"}")


def _object_after(suffix: bytes):
    """The keys after the events array as a dict, if ``suffix`` ends the object the array is in.

    >>> _object_after(b', "traceName": "t"}\\n'), _object_after(b"}"), _object_after(b",}"), _object_after(b"} x")
    ({'traceName': 't'}, {}, None, None)
    """
    s = suffix.lstrip(_WS)
    if s.startswith(b","):
        s = s[1:].lstrip(_WS)
        if s.startswith((b"}", b",")):
            return None
    elif not s.startswith(b"}"):
        return None
    return _decode_object(b"{" + s)


def _buffer(spare: list, size: int) -> bytearray:
    """A buffer of at least ``size`` bytes: a spare one that nothing points into any more (a
    bytearray with live views of it cannot shrink), else a new one; spares still pointed into
    are kept for later."""
    for i, b in enumerate(spare):
        if len(b) < size:
            continue
        try:
            last = b.pop()           # raises while a view of the buffer is alive
        except BufferError:
            continue
        b.append(last)
        return spare.pop(i)
    del spare[:-2]                   # at most the two newest wait; older ones go when unpinned
    return bytearray(max(size, BLOCK_BYTES + (1 << 16) + 2))
