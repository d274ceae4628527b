"""Reading a recording's bytes safely: the guards every reader shares.

Pipes and devices are refused (they would block or never end), directories and missing files
get a clear message, and gzip is decompressed under a cap (``KERNELSCOPE_MAX_TRACE_BYTES``) so
that a gzip bomb cannot exhaust memory. The Kineto reader, the Nsight Compute reader and
``kernelscope.load`` all read files through :func:`read_bytes`.
"""
from __future__ import annotations

import os
import stat
import zlib

from ..errors import TraceError
from ..units import fmt_bytes

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

    >>> stat_regular("tests").st_size                          # doctest: +SKIP
    TraceError: tests: is a directory, not a trace file
    """
    try:
        st = os.stat(path)
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

    >>> read_bytes("tests/data/mlp_train.pt.trace.json.gz").lstrip()[:1]     # gunzipped
    b'{'
    """
    path = os.fspath(path)
    st = stat_regular(path)
    limit = max_trace_bytes()
    if st.st_size > limit:
        raise TraceError(path, too_big(st.st_size, limit))
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
    if raw[:2] == GZIP_MAGIC:
        raw = gunzip(raw, path, limit, notes)
    return raw


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
