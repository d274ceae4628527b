"""One large trace read on several cores at once.

Nearly all of a Kineto trace's text is one array of events. A plain (not gzip) file of at least
:data:`MIN_BYTES` is cut into stretches of about :data:`STRETCH_BYTES`, each cut between two
events; this process and worker processes take the stretches from a queue in file order, each
reads its stretches into table pieces with the same :class:`~.stream.EventStream` and
:class:`~.builder.TableBuilder` that one process uses, and the pieces are put together in file
order. So the tables are exactly those one process builds (``tests/test_split_reader.py``).

* **The queue** is a pipe holding one byte per stretch: a read of one byte is atomic, so every
  stretch is taken exactly once, by whichever process is free first (a worker takes its first
  one once Python and numpy have started in it, ~0.2 s, while this process is already reading).
* **A cut is checked by decoding.** A cut is the first ``}, {`` after a round offset; Kineto
  writes a line break between events, which cannot be inside a JSON string, so the first with
  one is taken where there is one. In a file without them a cut may lie inside a string. A
  stretch that starts between two events decodes only if it also ends between two (a cut
  inside a string or a nested value leaves it open), and the first stretch starts at the
  array's start; so when every stretch decodes, every cut was right. If one does
  not, or a worker fails in any way, the file is read again by one process, which reads what it
  can and says what is wrong, as for any file.
* **Workers** are ``python -c`` processes that import only the trace readers and numpy (not
  pandas, not the notebook side, and not the caller's ``__main__``, which multiprocessing would
  re-run in a script without a ``__main__`` guard). Each pickles a stretch's pieces to a file of
  a temporary folder as soon as it is read; this process loads them between its own stretches.
  They are killed if the load is interrupted, and the folder is removed.

``KERNELSCOPE_READ_WORKERS`` sets the number of workers (0: one process); the default is one
fewer than the CPUs this process may use, at most :data:`MAX_WORKERS`.
"""
from __future__ import annotations

import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelscope.trace.builder import TableBuilder
from kernelscope.trace.decode import no_gc
from kernelscope.trace.files import GZIP_MAGIC, checked_file
from kernelscope.trace.guard import Runs
from kernelscope.trace.stream import BLOCK_BYTES, EVENT_BOUNDARY, EventStream, take_header

# Below this a worker's start and the pieces' hand-over cost about what a second core saves.
MIN_BYTES = 96 << 20
# A stretch: small enough that the last ones even out the processes' shares, large enough that
# its own cost (a seek, a stream, a builder) is nothing.
STRETCH_BYTES = 16 << 20
# Past a few workers the load is bound by what one process does (the first stretch, joining
# the tables; on 16 cores 7 workers read 1M events no faster than 3), and each costs ~50 MiB.
MAX_WORKERS = 3
MAX_STRETCHES = 255            # one byte per stretch in the queue
# The text of the last TAIL_STRETCHES stretches is cut into quarters: the processes take the
# stretches from the queue as they free up, so they end at most a quarter stretch apart (with
# whole stretches the last one to finish kept the others waiting ~0.15 s of a 1.5 s read).
TAIL_STRETCHES = 2
_CUT_SEARCH = 1 << 20          # how far past an offset to look for a cut
_LINE_BREAK_SEARCH = 1 << 16   # and for one with a line break, before taking one without


class SplitFailed(Exception):
    """The split read did not work out: read the file again in one process."""


def workers_for(size: int) -> int:
    """How many worker processes read a plain trace file of ``size`` bytes (0: this one alone).

    >>> workers_for(1 << 20)
    0
    """
    env = os.environ.get("KERNELSCOPE_READ_WORKERS", "").strip()
    if env:
        try:
            wanted = max(0, int(env))
        except ValueError:
            raise ValueError(f"KERNELSCOPE_READ_WORKERS must be a number of processes, not {env!r}") from None
    else:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        wanted = min(cpus - 1, MAX_WORKERS)
    if size < MIN_BYTES or os.name != "posix" or not sys.executable:
        return 0
    return max(0, min(wanted, size // STRETCH_BYTES - 1))


def plan(f, size: int, stretch_bytes: int | None = None) -> list:
    """The stretches of an open file: ``(start, stop)`` byte ranges, the first from the file's
    start to just after an event, the last from an event to the file's end, each cut at the
    first ``}, {`` after a multiple of ``stretch_bytes`` (in the last :data:`TAIL_STRETCHES`
    stretches' worth of a file of more than twice that, of a quarter of it).

    >>> import io
    >>> plan(io.BytesIO(b'{"traceEvents": [{"a": 1}, {"a": 2}, {"a": 3}]}'), 47, 20)
    [(0, 25), (27, 47)]
    """
    quarters = 4 * (TAIL_STRETCHES + 1)   # at most this many stretches in the tail (of quarters)
    stretch_bytes = max(stretch_bytes or STRETCH_BYTES, -(-size // (MAX_STRETCHES - quarters)))
    cuts, pos = [], 0
    for offset in _offsets(size, stretch_bytes):
        offset = max(offset, pos + 1)
        f.seek(offset)
        m = _first_cut(f.read(_CUT_SEARCH))
        if m is None:
            continue          # no event boundary nearby: a longer stretch
        end, start = offset + m.start() + 1, offset + m.end() - 1
        cuts.append((end, start))
        pos = start
    bounds = [0] + [x for cut in cuts for x in cut] + [size]
    return list(zip(bounds[::2], bounds[1::2]))


def _offsets(size: int, stretch_bytes: int) -> list:
    """Where :func:`plan` looks for cuts: every ``stretch_bytes``, the tail's every quarter of it.

    >>> _offsets(100, 10)[-8:], _offsets(30, 10)
    ([80, 82, 85, 87, 90, 92, 95, 97], [10, 20])
    """
    tail = size - TAIL_STRETCHES * stretch_bytes
    if tail < 2 * stretch_bytes:            # a small file: whole stretches
        return list(range(stretch_bytes, size - stretch_bytes // 2, stretch_bytes))
    coarse = list(range(stretch_bytes, tail + 1, stretch_bytes))
    step = stretch_bytes / 4
    return coarse + [int(coarse[-1] + step * i) for i in range(1, int((size - coarse[-1]) / step - 0.5) + 1)]


def _first_cut(text: bytes):
    """The first ``}, {`` of ``text`` with a line break in it, else the first one.

    A line break cannot be inside a JSON string, and Kineto writes one between events
    (``},\\n  {``), so in its files the cut taken is never inside a name.

    >>> _first_cut(b'"a}, {b"},\\n {"c"').start()
    8
    """
    first = None
    for m in EVENT_BOUNDARY.finditer(text):
        if b"\n" in m.group():
            return m
        first = first or m
        if m.start() > _LINE_BREAK_SEARCH:
            break             # a file without line breaks between events (compact JSON)
    return first


def read_stretch(f, stretch, index: int, count: int, interned: dict, jax_check=None, on_read=None,
                 spare=None) -> dict:
    """Table pieces of one stretch (``index`` of ``count``) of an open file: a
    :meth:`~.builder.TableBuilder.part`, with the stretch's event count, and its header
    (``doc``, of the first) or the header after the array (``tail``, of the last). ``spare``
    (a list) carries the text buffers from one stretch to the next (fresh ones cost page faults)."""
    start, stop = stretch
    at = [start]                 # where the text read next starts
    runs = Runs("")              # the guard's watch over all of the stretch's text, in order

    def read(n, into=None):
        if f.tell() != at[0]:
            f.seek(at[0])
        got = f.read(n) if into is None else f.readinto(into[:n])
        got = got if into is None else into[:got]
        if not len(got):
            raise SplitFailed("the file ended early")   # it changed while being read
        at[0] += len(got)
        runs.add(got)
        if on_read is not None:
            on_read(len(got))
        return got

    def blocks():                # the header's text (the first stretch's)
        while at[0] < stop:
            yield read(min(BLOCK_BYTES, stop - at[0]))

    def fill(view):              # the rest, straight into the stream's buffer
        if at[0] >= stop:
            return 0
        with read(min(len(view), stop - at[0]), view) as got:
            return len(got)

    events = EventStream(blocks(), jax_check=jax_check, inner=index > 0, last=index == count - 1, fill=fill,
                         spare=spare)
    builder = TableBuilder(interned)
    for chunk in events.chunks():
        builder.add(chunk)
        del chunk
    part = builder.part()
    part.update(n_events=events.n_events, tail=events.tail, doc=events.doc if index == 0 else None)
    return part


def read_split(path, progress=None, jax_check=None):
    """``(doc, builder, n_events, processes)`` of a plain trace file read by several processes,
    or None where one process should read it: small, gzip, one CPU,
    ``KERNELSCOPE_READ_WORKERS=0``, or a split read that did not work out (a cut inside a
    string, a damaged file, a worker that failed): the one-process reader then reads it and
    says what is wrong. Ctrl-C stops the workers and is raised.

    >>> read_split("mlp_train.pt.trace.json.gz") is None     # gzip (and small)
    True
    """
    path, size, _limit = checked_file(path)
    n_workers = workers_for(size)
    if not n_workers:
        return None
    try:
        with Path(path).open("rb") as f:
            if f.read(2) == GZIP_MAGIC:
                return None       # a gzip stream can only be read from its start
            stretches = plan(f, size)
        if len(stretches) < 2:
            return None
        n_workers = min(n_workers, len(stretches) - 1)
        parts = _read_parts(path, size, stretches, n_workers, progress, jax_check)
    except Exception:  # noqa: BLE001 - anything odd: the one-process reader reads the file again
        return None
    builder = TableBuilder()
    for i in range(len(stretches)):
        builder.extend(parts[i])
    doc, n_events = parts[0]["doc"], sum(p["n_events"] for p in parts.values())
    tail = parts[len(stretches) - 1]["tail"]
    if tail:
        take_header(doc, tail)
    return doc, builder, n_events, n_workers + 1


def _read_parts(path, size, stretches, n_workers, progress, jax_check) -> dict:
    """Every stretch's :func:`read_stretch` part by index: read here and by the workers.

    A worker writes each part to a file of its own in a folder of ours as soon as it is read
    and says so on the ``done`` pipe; this process loads the parts that are ready between its
    own stretches, so that at the end only the last ones are still to come."""
    queue_r, queue_w = os.pipe()
    done_r, done_w = os.pipe()
    folder = tempfile.mkdtemp(prefix="kernelscope-read-")
    procs: list = []
    try:
        os.write(queue_w, bytes(range(1, len(stretches))))   # stretch 0 (the header's) is ours
        os.close(queue_w)
        queue_w = None
        job = json.dumps({"path": path, "stretches": stretches, "queue": queue_r, "done": done_w,
                          "folder": folder})
        _start_workers(job, n_workers, (queue_r, done_w), procs)
        os.close(done_w)
        done_w = None
        os.set_blocking(done_r, False)
        reading = _Parts(stretches, done_r, folder, size, progress)
        reading.read_own(path, queue_r, jax_check)
        reading.wait_for_workers(procs)
        if progress is not None:
            progress(size, size)
        return reading.parts
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        for fd in (queue_r, queue_w, done_r, done_w):
            if fd is not None:
                os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def _start_workers(job: str, n_workers: int, fds: tuple, procs: list) -> None:
    """Start ``n_workers`` worker processes on ``job`` (JSON: the file, its stretches, the pipes'
    ends ``fds`` they inherit and the folder), each appended to ``procs`` as it starts (so that
    those started are stopped if a later one fails)."""
    root = str(Path(os.path.abspath(__file__)).parents[2])
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            "from kernelscope.trace.split import worker_main; worker_main()")
    # The workers do no linear algebra: one BLAS/OpenMP thread each, not one per CPU.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for _ in range(n_workers):
        procs.append(  # noqa: PERF401 - one by one, so that those started are stopped if a later one fails
            subprocess.Popen([sys.executable, "-c", code, job], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=fds, env=env))


class _Parts:
    """The parts of one split read as they come in, by stretch index: this process's own as it
    reads them, the workers' as they say on the ``done`` pipe that one is ready in ``folder``;
    and the bytes read so far, for ``progress``."""

    def __init__(self, stretches, done_r: int, folder: str, size: int, progress):
        self.stretches, self.done_r, self.folder, self.size, self.progress = stretches, done_r, folder, size, progress
        self.sizes = [stop - start for start, stop in stretches]
        self.parts: dict = {}
        self.bytes, self.now = 0, 0     # the stretches done, and this process's current one so far
        self.ready: list = []           # the workers' stretches done and not yet loaded

    def drain(self) -> bool:
        """Note the stretches the workers have finished since we last looked; False once every
        worker has closed its end."""
        try:
            got = os.read(self.done_r, 4096)
        except BlockingIOError:
            return True
        for k in got:
            self.bytes += self.sizes[k]
            self.ready.append(k)
        return bool(got)            # b"": every worker has closed its end

    def on_read(self, n) -> None:
        self.drain()
        self.now += n
        if self.progress is not None:
            self.progress(min(self.size, self.bytes + self.now), self.size)

    def load_ready(self) -> None:
        for k in self.ready:
            part_path = Path(self.folder, f"{k}.pickle")
            with part_path.open("rb") as pf:
                self.parts[k] = pickle.load(pf)
            part_path.unlink()
        self.ready.clear()

    def read_own(self, path, queue_r: int, jax_check) -> None:
        """Read stretches here, the first and then each taken from the queue, until it is empty;
        the workers' parts are loaded between them."""
        interned: dict = {}
        k, spare = 0, []
        with Path(path).open("rb") as f:
            while True:
                self.parts[k] = read_stretch(f, self.stretches[k], k, len(self.stretches), interned,
                                             jax_check=jax_check if k == 0 else None, on_read=self.on_read,
                                             spare=spare)
                self.now = 0
                self.bytes += self.sizes[k]
                self.drain()
                self.load_ready()
                token = os.read(queue_r, 1)
                if not token:
                    break
                k = token[0]

    def wait_for_workers(self, procs) -> None:
        """Load the workers' last stretches as they finish; SplitFailed where every worker has
        ended and some stretch was never read (with why, if one said)."""
        open_ends = True
        while len(self.parts) < len(self.stretches) and open_ends:
            select.select([self.done_r], [], [], 1.0)
            open_ends = self.drain()
            self.load_ready()
        if len(self.parts) < len(self.stretches):
            # Every worker has ended, and some stretch was never read: say why, if one said.
            why = b"".join(p.stdout.read() for p in procs).decode(errors="replace").strip()
            raise SplitFailed(why or "a reader process ended before its stretch was read")


def worker_main() -> None:
    """A worker process: read stretches from the queue until it is empty, each part pickled to
    the job's folder as soon as it is read; an error is printed to stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the parent stops us (Ctrl-C reaches us too)
    job = json.loads(sys.argv[1])
    stretches = [tuple(s) for s in job["stretches"]]
    code = 0
    try:
        with no_gc(), Path(job["path"]).open("rb") as f:
            interned, spare = {}, []
            while True:
                token = os.read(job["queue"], 1)
                if not token:
                    break
                k = token[0]
                part = read_stretch(f, stretches[k], k, len(stretches), interned, spare=spare)
                target = Path(job["folder"], f"{k}.pickle")
                tmp = target.with_name(target.name + ".part")
                with tmp.open("wb") as out:
                    pickle.dump(part, out, protocol=pickle.HIGHEST_PROTOCOL)
                tmp.replace(target)    # whole before the parent is told
                del part
                os.write(job["done"], token)
    except Exception as e:  # noqa: BLE001 - a worker reports any failure to its parent, which reads again
        code = 1
        try:
            sys.stdout.write(f"{type(e).__name__}: {e}\n")
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            pass          # the parent has gone or given up on us
    # At once: freeing a million objects one by one at exit would keep the parent waiting.
    os._exit(code)
