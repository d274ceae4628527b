"""Reading a recording's bytes safely: the guards every reader shares.

Pipes and devices are refused (they would block or never end), directories and missing files
get a clear message, and gzip is decompressed under a cap (``KERNELSCOPE_MAX_TRACE_BYTES``) so
that a gzip bomb cannot exhaust memory. The Nsight Compute reader and saved reports read files
whole through :func:`read_bytes`; the Kineto reader streams them through :func:`read_blocks`
(the same checks, a block at a time, so that a large trace is never held whole).
"""
from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

from kernelscope.errors import TraceError
from kernelscope.units import fmt_bytes

GZIP_MAGIC = b"\x1f\x8b"


def max_trace_bytes() -> int:
    """The most bytes of JSON kernelscope reads from one file, after decompression.

    A guard against gzip bombs and files that would exhaust memory: decoding needs about as
    much memory again as the JSON text. The default is a quarter of physical memory (at least
    256 MiB); set ``KERNELSCOPE_MAX_TRACE_BYTES`` (bytes) to change it.

    >>> max_trace_bytes() >= 256 << 20
    True
    """
    env = os.environ.get("KERNELSCOPE_MAX_TRACE_BYTES")
    if env:
        try:
            return int(env)
        except ValueError:
            raise ValueError(f"KERNELSCOPE_MAX_TRACE_BYTES must be a number of bytes, not {env!r}") from None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        phys = 16 << 30
    return max(256 << 20, phys // 4)


def stat_regular(path: str, what: str = "a trace file") -> os.stat_result:
    """``os.stat`` of a file to read, or a TraceError: missing, a directory, or not a regular
    file (a pipe or a device would block or never end).

    >>> stat_regular("ranks").st_size
    Traceback (most recent call last):
        ...
    kernelscope.errors.TraceError: ranks: is a directory, not a trace file
    """
    try:
        st = os.stat(path)  # noqa: PTH116 - os.stat("") is "no such file"; Path("") is ".", a folder
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise TraceError(path, "no such file") from None
    except OSError as e:
        raise TraceError(path, f"cannot be opened ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(path, f"is a directory, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(path, "is not a regular file")
    return st


def too_big(n, limit) -> str:
    """The message for a file over the reader's size cap (:func:`max_trace_bytes`)."""
    return (f"it holds more than {fmt_bytes(limit)} of JSON ({fmt_bytes(n)} or more), the most kernelscope "
            "reads (set KERNELSCOPE_MAX_TRACE_BYTES to raise the limit)")


def read_bytes(path, notes=None) -> bytes:
    """The file's bytes, gunzipped when they are gzip; ``notes`` (a list) collects what was
    tolerated. Raises :class:`~kernelscope.TraceError` naming the file otherwise.

    >>> read_bytes("mlp_train.pt.trace.json.gz").lstrip()[:1]     # gunzipped
    b'{'
    """
    path, size, limit = checked_file(path)
    try:
        with Path(path).open("rb") as f:
            raw = f.read()
    except OSError as e:
        raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
    if raw[:2] == GZIP_MAGIC:
        raw = gunzip(raw, path, limit, notes)
    return raw


def checked_file(path):
    """``(path, size, limit)`` of a file that may be read: it exists, is a regular file (a pipe
    or a device would block or never end) and is not over the cap."""
    path = os.fspath(path)
    st = stat_regular(path)
    limit = max_trace_bytes()
    if st.st_size > limit:
        raise TraceError(path, too_big(st.st_size, limit))
    return path, st.st_size, limit


# Bytes read from the file at a time, and the most text one gunzip step may produce.
READ_BYTES = 1 << 20
BLOCK_BYTES = 8 << 20


def read_blocks(path, notes=None, progress=None, block_bytes=None):
    """The file's text in blocks (gunzipped when it is gzip), never more than
    :func:`max_trace_bytes` in all: :func:`read_bytes` a piece at a time, with the same checks
    and messages. ``progress(done, total)`` is called with the file's bytes read so far.

    >>> b"".join(read_blocks("mlp_train.pt.trace.json.gz")).lstrip()[:1]
    b'{'
    """
    path, size, limit = checked_file(path)
    block = block_bytes or BLOCK_BYTES
    try:
        f = Path(path).open("rb")  # noqa: SIM115 - opened before the with: only a failed open is "cannot be read" here
    except OSError as e:
        raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
    with f:
        def read(n):
            try:
                data = f.read(n)
            except OSError as e:
                raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
            if progress is not None:
                progress(f.tell(), size)
            return data

        head = read(max(2, READ_BYTES))
        if head[:2] != GZIP_MAGIC:
            data = head
            while data:
                for i in range(0, len(data), block):
                    yield data[i:i + block]
                data = read(max(READ_BYTES, block))
            return
        yield from _gunzip_blocks(head, read, path, limit, block, notes)


def _gunzip_blocks(data, read, label, limit, block, notes):
    """:func:`gunzip` as a stream: every member, each step's output capped, the CRC checked."""
    total = 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not d.eof:
            ended = False
            if not data:
                data = read(READ_BYTES)
                ended = not data
            try:
                # With no input left, this gives what zlib still holds from a capped step.
                out = d.decompress(data, min(block, limit - total + 1))
            except zlib.error as e:
                raise TraceError(label, f"the gzip stream is damaged or truncated ({e})") from None
            data = d.unconsumed_tail
            total += len(out)
            if total > limit:
                raise TraceError(label, too_big(total, limit))
            if out:
                yield out
            elif ended:
                break
        if not d.eof:
            raise TraceError(label, "the gzip stream is damaged or truncated (it ends before its "
                                    "end-of-stream marker)")
        data = d.unused_data
        while len(data) < 2:
            more = read(READ_BYTES)
            if not more:
                break
            data += more
        if data[:2] != GZIP_MAGIC:
            break  # concatenated gzip members are legal (`cat a.gz b.gz`); anything else is junk
    junk = len(data)
    while True:
        more = read(READ_BYTES)
        if not more:
            break
        junk += len(more)
    if junk and notes is not None:
        notes.append(f"ignored {junk} byte(s) of trailing data after the gzip stream")


def gunzip(data: bytes, label, limit=None, notes=None) -> bytes:
    """Decompress every gzip member, never producing more than ``limit`` bytes (default
    :func:`max_trace_bytes`).

    The header's size field (ISIZE) is not trusted; zlib checks each member's CRC and length.

    >>> import gzip
    >>> gunzip(gzip.compress(b"{}") * 2, "two.gz")
    b'{}{}'
    """
    limit = max_trace_bytes() if limit is None else limit
    parts, total = [], 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(data, limit - total + 1)
        except zlib.error as e:
            raise TraceError(label, f"the gzip stream is damaged or truncated ({e})") from None
        total += len(out)
        if total > limit:
            raise TraceError(label, too_big(total, limit))
        parts.append(out)
        if not d.eof:
            raise TraceError(label, "the gzip stream is damaged or truncated (it ends before its "
                                    "end-of-stream marker)")
        data = d.unused_data
        if data[:2] != GZIP_MAGIC:
            break  # concatenated gzip members are legal (`cat a.gz b.gz`); anything else is junk
    if data and notes is not None:
        notes.append(f"ignored {len(data)} byte(s) of trailing data after the gzip stream")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def write_file(path, data: bytes) -> str:
    """Write ``data`` to ``path`` whole or not at all: into a temporary file beside it, then
    renamed over it, so that a full disk or a crash never leaves a cut file where a good one
    was. A target that exists and is not a regular file (a FIFO would block, a device would
    take the bytes) is refused with an OSError. Returns the path.

    >>> write_file("/tmp/ks-doctest.bin", b"ok")            # doctest: +SKIP
    '/tmp/ks-doctest.bin'
    """
    import tempfile
    path = os.fspath(path)
    try:
        st = os.stat(path)  # noqa: PTH116 - os.stat("") is "no such file"; Path("") is ".", a folder
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise OSError(f"{path} is {kind}: kernelscope writes regular files only")
    folder = str(Path(os.path.abspath(path)).parent)
    fd, name = tempfile.mkstemp(prefix=f".{Path(path).name}.", suffix=".part", dir=folder)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        tmp.chmod(mode)
        tmp.replace(path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return path


# The trace files this process read (ks.load) or wrote (--trace, trace_path): the only files the
# view's Perfetto button may hand to the browser. A report's meta names a file; it does not make
# that file ours to send (a shared report could name any local file).
_OWN_TRACES: set = set()


def own_trace(path) -> None:
    """Note that this process read or wrote the trace file ``path``."""
    _OWN_TRACES.add(os.path.realpath(os.fspath(path)))


def is_own_trace(path) -> bool:
    """Whether this process read or wrote the trace file ``path`` (:func:`own_trace`).

    >>> is_own_trace("/etc/passwd")
    False
    """
    return isinstance(path, str) and bool(path) and os.path.realpath(path) in _OWN_TRACES
