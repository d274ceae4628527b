"""Whether a file is an Nsight Compute report, and the path NVIDIA's reader can open for it.

``ncu_report`` loads a foreign file as an empty report and a cut one as the launches before the
cut, so a report is checked here first (:func:`check_report_file`: ncu's ``NVR`` header, then
records that end exactly at the end of the file). Reports can be read as written (``.ncu-rep``,
``.ncu-repz``) or gzip/xz-compressed (``.ncu-rep.gz``, ``.ncu-rep.xz``, which shrinks them 20-40x
for storing): a compressed one is unpacked into a temporary folder (the reader reads paths only),
never past the readers' size cap. What a file that is not a report looks like is said from its
first bytes (a Kineto trace, a CSV export).
"""
from __future__ import annotations

import gzip
import lzma
import os
import shutil
import struct
from pathlib import Path

from kernelscope.errors import TraceError

REPORT_MAGIC = b"NVR\x00"
_GZIP, _XZ, _ZSTD, _ZIP = b"\x1f\x8b", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"PK\x03\x04"
REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz", ".ncu-rep.gz", ".ncu-rep.xz", ".ncu-repz.gz", ".ncu-repz.xz")


def is_report_path(path) -> bool:
    """Whether a file name is an Nsight Compute report's (compressed or not).

    >>> is_report_path("run.ncu-rep.xz"), is_report_path("run.csv")
    (True, False)
    """
    return str(os.fspath(path)).lower().endswith(REPORT_SUFFIXES)


def _stat_regular(path: str) -> os.stat_result:
    from kernelscope.trace.files import stat_regular
    return stat_regular(path, "an Nsight Compute report")


def check_report_file(path) -> int:
    """Check that ``path`` is a whole ``.ncu-rep`` file: ncu's ``NVR`` header, then records
    (a 4-byte length and that many bytes) that end exactly at the end of the file. Returns the
    number of records. ``ncu_report`` itself loads a foreign file as an empty report and a cut
    one as the launches before the cut, so this check is what makes bad input an error.

    >>> import lzma
    >>> _ = (tmp / "k.ncu-rep").write_bytes(lzma.open("ncu_rep/triton_kernels.ncu-rep.xz").read())
    >>> check_report_file(tmp / "k.ncu-rep")
    21
    """
    path = os.fspath(path)
    size = _stat_regular(path).st_size
    try:
        with Path(path).open("rb") as f:
            head = f.read(4)
            if head != REPORT_MAGIC:
                raise TraceError(path, _foreign(head))
            off, records = 4, 0
            while off < size:
                f.seek(off)
                b = f.read(4)
                if len(b) < 4:
                    raise TraceError(path, f"truncated: the file ends inside a record header at byte {off:,}")
                (n,) = struct.unpack("<I", b)
                off += 4 + n
                records += 1
                if off > size:
                    raise TraceError(path, f"truncated: a record runs to byte {off:,} but the file has "
                                           f"{size:,} bytes (was the copy or the ncu run cut short?)")
    except OSError as e:
        raise TraceError(path, f"cannot be read ({e.strerror or e})") from None
    if records < 3:
        raise TraceError(path, "holds no profiling results (an empty or cut Nsight Compute report)")
    return records


NOT_A_REPORT = "not an Nsight Compute report (it does not start with ncu's NVR header)"


def _foreign(head: bytes) -> str:
    """What a file that is not a report looks like, from its first bytes: JSON or text only where
    those bytes are text (random bytes start with "{" one time in 256).

    >>> _foreign(b'{"traceEvents": ['), _foreign(b"{" + bytes(range(1, 9)))
    ('is JSON, not an Nsight Compute report (a Kineto trace? open it with ks.load)', "not an Nsight Compute report (it does not start with ncu's NVR header)")
    """
    head = head.lstrip()
    if not _is_text(head):
        return NOT_A_REPORT
    if head[:1] in (b"{", b"["):
        return "is JSON, not an Nsight Compute report (a Kineto trace? open it with ks.load)"
    if head.startswith((b'"ID"', b"==PROF", b"==WARNING", b"==ERROR", b'"')):
        return "is text, not an Nsight Compute report (a CSV export? ks.load_ncu reads those by their .csv name)"
    return NOT_A_REPORT


def _is_text(head: bytes) -> bool:
    """UTF-8 without control characters other than whitespace (a cut last character allowed)."""
    if any(b < 32 and b not in b"\t\n\r" or b == 127 for b in head):
        return False
    for cut in range(4):
        try:
            head[:len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def _decompressed_copy(path: str, head: bytes, tmpdir: str) -> str:
    """A gzip/xz-compressed report unpacked into ``tmpdir`` (``ncu_report`` reads paths only),
    never writing more than the reader's size cap."""
    from kernelscope.trace.files import max_trace_bytes, too_big
    limit = max_trace_bytes()
    out = str(Path(tmpdir, "report.ncu-rep"))
    opener = gzip.open if head.startswith(_GZIP) else lzma.open
    kind = "gzip" if opener is gzip.open else "xz"
    total = 0
    # A .ncu-rep must start with ncu's header: check the first unpacked bytes before writing
    # the rest (a bomb of anything else would fill the temp folder first).
    foreign_ok = path.lower().endswith((".ncu-repz.gz", ".ncu-repz.xz"))
    try:
        with opener(path, "rb") as src, Path(out).open("wb") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                if total == 0 and not foreign_ok and not chunk.startswith(REPORT_MAGIC):
                    raise TraceError(path, _foreign(chunk[:64]))
                total += len(chunk)
                if total > limit:
                    raise TraceError(path, too_big(total, limit).replace("of JSON", "unpacked"))
                dst.write(chunk)
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise TraceError(path, f"the {kind} stream is damaged or truncated ({e})") from None
    return out


def report_head(name: str) -> bytes:
    """The first bytes of the report file ``name`` (a regular file: no pipe or device), by which
    :func:`readable_path` tells its kind.

    >>> report_head("ncu_rep/triton_kernels.ncu-rep.xz")[:6]     # xz
    b'\\xfd7zXZ\\x00'
    """
    _stat_regular(name)
    with Path(name).open("rb") as f:
        return f.read(64)


def readable_path(name: str, head: bytes, tmp: str) -> str:
    """The path NVIDIA's reader can open for the report ``name`` (``head``: its first bytes, from
    :func:`report_head`): the file itself, or, for a compressed report or one not named
    ``.ncu-rep``, an unpacked copy or an alias in the folder ``tmp``. A file that is not a whole
    report raises a TraceError that says what it looks like instead.

    >>> name = "ncu_rep/triton_kernels.ncu-rep.xz"
    >>> readable_path(name, report_head(name), str(tmp)) == str(tmp / "report.ncu-rep")
    True
    """
    real = name
    if head.startswith((_GZIP, _XZ)):
        real = _decompressed_copy(name, head, tmp)
        with Path(real).open("rb") as f:
            head = f.read(64)
    if head.startswith(REPORT_MAGIC):
        try:
            check_report_file(real)
        except TraceError as e:
            raise TraceError(name, e.problem) from None
        if not real.lower().endswith(".ncu-rep"):
            # ncu_report picks its format by the name (it reads a .ncu-repz as another one)
            alias = str(Path(tmp, "report.ncu-rep"))
            try:
                Path(alias).symlink_to(os.path.abspath(real))
            except OSError:
                shutil.copyfile(real, alias)
            real = alias
    elif head.startswith((_ZSTD, _ZIP)) or not name.lower().endswith((".ncu-repz", ".ncu-repz.gz", ".ncu-repz.xz")):
        raise TraceError(name, _foreign(head))
    # else: a .ncu-repz in a container we do not know: let NVIDIA's reader judge it.
    return real
