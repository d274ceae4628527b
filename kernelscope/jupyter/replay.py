"""``%%kernelprofile --ncu``: the Nsight Compute report of one cell's kernels, without
restarting the kernel.

ncu cannot attach to the running kernel, so the cell is replayed in a new process under ncu
(:mod:`kernelscope.capture.ncu_run`): the earlier cells this cell needs
(:mod:`kernelscope.jupyter.cell_deps`, from their code; or those ``--setup`` names), turned into
plain Python here with IPython's own transformers, then this cell inside an NVTX range that ncu
profiles alone. Which cells run again, with how long each took when it ran, is said first. The
report merges onto the live profile of the cell; what ran again, how long it took and where
the replay differed from the live run is said in words. Every failure leaves the live report
shown.
"""
from __future__ import annotations

import re
import sys
import time
import weakref
from pathlib import Path

_LOGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OUR_LINE = re.compile(r"^\s*%(load_ext|reload_ext)\s+kernelscope\b|^\s*%kernelprofile\b")
# ``-o NAME`` of a %%kernelprofile / %kernelprofile start line: a Report only this kernel holds.
_OUTPUT = re.compile(r"^\s*%%?kernelprofile\b.*?(?:\s-o|\s--output)(?:\s+|=)([A-Za-z_]\w*)", re.M)
LONG_CELL_S = 60.0   # a cell that ran longer (a training loop) is replayed only when asked


class CellLog:
    """The cells of the session as they ran: execution count -> (raw source, succeeded, seconds)."""

    def __init__(self, shell):
        self.shell = shell
        self.cells: dict = {}
        self.since = int(getattr(shell, "execution_count", 1) or 1)   # counts before this: not seen
        self._t0 = None

    def pre_run_cell(self, info=None):
        self._t0 = time.perf_counter()

    def post_run_cell(self, result):
        count = getattr(result, "execution_count", None)
        info = getattr(result, "info", None)
        t0, self._t0 = self._t0, None
        if count is None or info is None:
            return       # not stored in history (run_cell(store_history=False)): not a notebook cell
        seconds = None if t0 is None else time.perf_counter() - t0
        self.cells[int(count)] = (info.raw_cell, bool(result.success), seconds)


def track_cells(shell) -> CellLog:
    """Start keeping the session's cells and how long each ran (``%load_ext kernelscope`` calls
    this), once per shell.

    >>> log = track_cells(get_ipython())          # doctest: +SKIP
    """
    log = _LOGS.get(shell)
    if log is None:
        log = _LOGS[shell] = CellLog(shell)
        shell.events.register("pre_run_cell", log.pre_run_cell)
        shell.events.register("post_run_cell", log.post_run_cell)
    return log


def untrack_cells(shell):
    log = _LOGS.pop(shell, None)
    if log is not None:
        for event, fn in (("pre_run_cell", log.pre_run_cell), ("post_run_cell", log.post_run_cell)):
            try:
                shell.events.unregister(event, fn)
            except ValueError:
                pass


# Without a current cell to clip at, a range longer than any session's history is a typo.
MAX_SETUP_CELLS = 100_000


def parse_setup(spec: str, below: int | None = None) -> list[int]:
    """Cell numbers (``In[n]``) from ``--setup``: "1,3-5", or "none"; with ``below``, only those
    before that cell (a range is clipped before it is listed: ``1-999999999`` made a list of 22 GB).

    >>> parse_setup("1,3-5"), parse_setup("none"), parse_setup("2-999999999", below=5)
    ([1, 3, 4, 5], [], [2, 3, 4])
    """
    spec = (spec or "").strip().lower()
    if spec in ("none", "", "-"):
        return []
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise ValueError(f"--setup takes cell numbers such as 1,3-5 (or none), not {spec!r}")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if below is not None:
            b = min(b, below - 1)
        elif b - a > MAX_SETUP_CELLS:
            raise ValueError(f"--setup names more than {MAX_SETUP_CELLS:,} cells ({part.strip()})")
        out.extend(range(a, b + 1))
    return sorted(set(out))


def plain_body(raw: str) -> str:
    """A cell as it ran, without kernelscope's own magics: a ``%%kernelprofile`` cell's body (its
    code ran in the namespace), ``%load_ext kernelscope`` and ``%kernelprofile ...`` lines dropped.

    >>> plain_body("%%kernelprofile --top 3\\ny = f(x)\\n")
    'y = f(x)\\n'
    >>> plain_body("%load_ext kernelscope\\nimport torch")
    'import torch'
    """
    lines = raw.splitlines(keepends=True)
    if lines and lines[0].lstrip().startswith("%%kernelprofile"):
        lines = lines[1:]
    return "".join(ln for ln in lines if not _OUR_LINE.match(ln))


def replay_cells(shell, setup: str | None, current: int, cell: str = "",
                 limit_s: float | None = LONG_CELL_S) -> tuple[list, list]:
    """The cells to run before the profiled one (``cell``, its source), as plain Python, and
    notes on what was chosen: with ``setup`` the cells it names; else those the cell needs
    (:func:`kernelscope.jupyter.cell_deps.plan_replay`). Raises ValueError, saying why, where
    the replay cannot work (a needed cell ran longer than ``limit_s``).
    """
    from kernelscope.capture.ncu_run import ReplayCell
    from kernelscope.jupyter.cell_deps import Cell, plan_replay
    log = _LOGS.get(shell)
    hist = list(getattr(shell.history_manager, "input_hist_raw", []) or [])
    logged = log.cells if log else {}
    notes = []
    if setup is not None:
        counts = parse_setup(setup, below=current)
        chosen = [(n, hist[n] if n < len(hist) else logged.get(n, ("",))[0], False) for n in counts]
        cells = []
        for n, raw, _optional in chosen:
            body = plain_body(raw or "")
            if body.strip():
                cells.append(ReplayCell(f"[{n}]", shell.transform_cell(body), seconds=_seconds(logged, n)))
        return cells, notes
    seen_from = log.since if log else current
    earlier = []
    for n in range(1, current):
        if n in logged:
            raw, ok, secs = (tuple(logged[n]) + (None,))[:3]
        elif n < len(hist) and n < seen_from:
            raw, ok, secs = hist[n], None, None
        else:
            continue
        earlier.append(Cell(n, _python(shell, plain_body(raw or "")), ok=ok, seconds=secs,
                            outputs=tuple(_OUTPUT.findall(raw or ""))))
    plan = plan_replay(earlier, _python(shell, cell), limit_s=limit_s)
    needed_long = [(c, names) for c, names in plan.too_long if names]
    if needed_long:
        c, names = needed_long[0]
        wanted = sorted({x.count for x, _, _ in plan.run} | {c.count for c, _ in needed_long})
        raise ValueError(
            f"In [{c.count}] ran for {_secs(c.seconds)} when it ran and binds {', '.join(names[:4])}, which this "
            f"cell needs; kernelscope does not run a cell that long again unless asked: name the cells with "
            f"--setup {_ranges(wanted)}, or allow longer cells with --replay-limit {int(c.seconds) + 1}")
    if plan.results_used:
        notes.append(f"this cell reads {', '.join(sorted(plan.results_used)[:4])}, which kernelscope made in this "
                     "kernel (-o): the replay has no such object")
    unseen = [c.count for c, _, _ in plan.run if c.ok is None]
    if unseen:
        notes.append(f"cells {_span(unseen)} ran before kernelscope was loaded: replayed as they are "
                     "(kernelscope could not see whether they succeeded, nor how long they took)")
    for c, _ in plan.too_long:
        notes.append(f"left out In [{c.count}]: it ran for {_secs(c.seconds)} and only changes objects this cell "
                     f"uses (name it with --setup, or allow it with --replay-limit {int(c.seconds) + 1})")
    groups = {}
    for c, why in plan.left_out:
        groups.setdefault(why, []).append(c.count)
    for why, counts in groups.items():
        notes.append(f"left out {_span(counts)}: {why}")
    out = [ReplayCell(f"[{c.count}]", c.source, optional=optional, seconds=c.seconds)
           for c, optional, _ in plan.run]
    return out, notes


def _python(shell, body: str) -> str:
    try:
        return shell.transform_cell(body) if body.strip() else ""
    except Exception:  # noqa: BLE001 - IPython could not transform it: analysed (and run) as it is
        return body


def _seconds(logged, n):
    entry = logged.get(n)
    return entry[2] if entry is not None and len(entry) > 2 else None


def _ranges(counts) -> str:
    """``1,3-5`` from [1, 3, 4, 5].

    >>> _ranges([1, 3, 4, 5])
    '1,3-5'
    """
    out, counts = [], sorted(counts)
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[j] + 1:
            j += 1
        out.append(str(counts[i]) if i == j else f"{counts[i]}-{counts[j]}")
        i = j + 1
    return ",".join(out)


def plan_words(setup: list) -> str:
    """The cells a replay runs before the profiled one, with how long each took when it ran.

    >>> from kernelscope.capture.ncu_run import ReplayCell
    >>> plan_words([ReplayCell("[1]", "", seconds=2.04), ReplayCell("[4]", "", optional=True)])
    'cells [1] (2.0 s), [4] (time not measured; skipped if it fails)'
    """
    if not setup:
        return "no earlier cells"
    parts = []
    for c in setup:
        took = _secs(c.seconds) if c.seconds is not None else "time not measured"
        parts.append(f"{c.label} ({took}{'; skipped if it fails' if c.optional else ''})")
    return "cells " + ", ".join(parts)


def _prepare(shell, args, cell, failure, announce):
    """(setup cells, notes) for a replay, said (``announce(setup)``, then the notes) before it
    runs; None after saying why there is none."""
    current = int(getattr(shell, "execution_count", 1) or 1)
    limit = getattr(args, "replay_limit", None)
    try:
        setup, notes = replay_cells(shell, getattr(args, "setup", None), current, cell,
                                    limit_s=LONG_CELL_S if limit is None else limit)
    except ValueError as e:
        _say(f"{failure}: {e}", warn=True)
        return None
    _say(announce(setup))
    for n in notes:
        _say(n)
    return setup, notes


def _skipped_cells(status) -> list:
    """Notes on optional cells that raised in the replay and were skipped."""
    return [f"In {c['label']} raised {c['error']} in the replay and was skipped (it binds nothing this cell needs)"
            for c in status.get("skipped_cells") or []]


def deep_dive(shell, args, cell: str, live):
    """Replay the cell under Nsight Compute and return the live report with ncu's report merged
    onto it (or ``live`` itself, after saying why, when the replay gave no report)."""
    import kernelscope as ks
    from kernelscope.capture.ncu_run import NcuError, ReplayCell, replay
    prepared = _prepare(shell, args, cell, "no Nsight Compute deep dive", lambda setup: (
        f"Nsight Compute deep dive: replaying {plan_words(setup)} in a new process, then this cell under "
        f"ncu --set {args.set} (each profiled kernel runs several times; this can take a while)..."))
    if prepared is None:
        return live
    setup, notes = prepared
    this = ReplayCell("cell", shell.transform_cell(cell))
    try:
        run = replay(setup, this, section_set=args.set, kernels=args.kernels, launches=args.launches,
                     warmup=args.warmup, cwd=str(Path.cwd()))
    except NcuError as e:
        msg = str(e)
        if msg == "Nsight Compute profiled no kernel":
            msg = _nothing_profiled(args, live)
        _say(f"no Nsight Compute deep dive: {msg}", warn=True)
        return live
    except KeyboardInterrupt:
        _say("Nsight Compute replay interrupted and stopped; the live profile below is complete.", warn=True)
        return live
    try:
        rep = ks.load_ncu(run.report_path, kernels_report=live)
    except ks.TraceError as e:
        _say(f"no Nsight Compute deep dive: the report it wrote could not be read ({e})", warn=True)
        return live
    name_cells(rep, str(Path(run.report_path).parent))
    st = run.status
    differs = replay_differences(live, rep, args)
    info = {"report_path": run.report_path, "set": args.set, "kernels": args.kernels, "launches": args.launches,
            "setup": [c.label for c in setup], "setup_seconds": st.get("setup_seconds"),
            "cell_seconds": st.get("cell_seconds"), "total_seconds": run.seconds, "profiled": len(rep.ncu),
            "skipped": st.get("skipped", []), "nvtx": st.get("nvtx"), "differences": differs}
    skipped = _skipped_cells(st)
    rep.meta["ncu_replay"] = info
    rep.meta.setdefault("notes", []).extend([f"Nsight Compute replay: {n}" for n in notes + skipped + differs])
    _say(summary(info))
    for n in skipped:
        _say(n, warn=True)
    if info["skipped"]:
        _say("skipped in the replay (no IPython there): " + "; ".join(info["skipped"][:6]))
    for d in differs:
        _say(f"warning: {d}", warn=True)
    return rep


def stall_replay(shell, args, cell: str, live):
    """``--stalls``: replay the cells this one needs (as for ``--ncu``) in a new process, this cell under
    Triton's Proton PC sampling, and return the live report with the stall samples matched to its
    kernels (or ``live`` itself, after saying why). A new process because Proton is a CUPTI client
    of its own: it cannot start in a process where torch.profiler has run."""
    from kernelscope import Report
    from kernelscope.capture.ncu_run import ReplayCell, replay_stalls
    from kernelscope.capture.stalls import SOURCE, attach_stalls
    from kernelscope.trace.proton import read_hatchet
    prepared = _prepare(shell, args, cell, "no warp stalls", lambda setup: (
        f"Warp stalls: replaying {plan_words(setup)} in a new process, then this cell under Proton PC sampling "
        "(its side effects happen there, not in this kernel)..."))
    if prepared is None:
        return live
    setup, notes = prepared
    try:
        path, status, seconds, err = replay_stalls(setup, ReplayCell("cell", shell.transform_cell(cell)),
                                                   cwd=str(Path.cwd()))
    except KeyboardInterrupt:
        _say("Warp-stall replay interrupted and stopped; the live profile below is complete.", warn=True)
        return live
    failed = status.get("failed")
    if path is None or failed:
        why = (f"{failed['label']} raised {failed['error']}" if failed else
               "Proton wrote no profile") + (f"\n{err[-1500:]}" if err.strip() else "")
        _say(f"no warp stalls: the replay failed ({why})", warn=True)
        live.meta.setdefault("notes", []).append(f"warp stalls were not sampled: the replay failed "
                                                 f"({failed['error'] if failed else 'no Proton profile'})")
        return live
    skipped = _skipped_cells(status)
    for n in skipped:
        _say(n, warn=True)
    notes = notes + skipped
    counts = read_hatchet(path)
    info = {"source": SOURCE, "run": "a replay of the cell in a new process",
            "setup": [c.label for c in setup], "setup_seconds": status.get("setup_seconds"),
            "cell_seconds": status.get("cell_seconds"), "total_seconds": seconds,
            "skipped": status.get("skipped", [])}
    trace = live.trace
    notes += attach_stalls(trace, counts, info)
    trace.meta.setdefault("notes", []).extend(f"warp-stall replay: {n}" for n in notes)
    rep = Report(trace, ncu=live.ncu, ncu_detail=getattr(live, "ncu_detail", None))
    _say(f"Warp stalls sampled live in the replay: {len(rep.stalls)} kernels, "
         f"{_secs(seconds)} in all (this cell {_secs(status.get('cell_seconds'))}).")
    return rep


def name_cells(rep, workdir: str) -> None:
    """Hot spots in the replay's cell files, named as the notebook shows them: ``In [3], line 12``
    (``this cell, line 2`` for the profiled one) instead of ``cell_3.py:12``."""
    hs = (rep.ncu_detail or {}).get("hotspots")
    if hs is None or not len(hs):
        return
    locs = []
    for f, ln, loc in zip(hs["file"], hs["line"], hs["location"]):
        p = Path(f) if isinstance(f, str) else None
        m = re.fullmatch(r"cell_(\d+|this)\.py", p.name) if p is not None else None
        if m and p is not None and str(p.parent) == workdir and ln == ln and ln is not None:
            which = "this cell" if m.group(1) == "this" else f"In [{m.group(1)}]"
            loc = f"{which}, line {int(ln)}"
        locs.append(loc)
    hs["location"] = locs


def summary(info: dict) -> str:
    """What ran again and how long it took, in one paragraph.

    >>> summary({"setup": ["[1]", "[2]"], "setup_seconds": 3.2, "cell_seconds": 40.0, "total_seconds": 47.5,
    ...          "profiled": 6, "set": "full", "report_path": "/tmp/x/cell.ncu-rep"})[:61]
    'Nsight Compute deep dive done: cells [1], [2] ran again first'
    """
    setup = info.get("setup") or []
    first = (f"cells {', '.join(setup)} ran again first ({_secs(info.get('setup_seconds'))})" if setup
             else "no earlier cells ran again")
    return (f"Nsight Compute deep dive done: {first}, then this cell under ncu --set {info.get('set')} "
            f"({_secs(info.get('cell_seconds'))}; {info.get('profiled')} launch(es) profiled); "
            f"{_secs(info.get('total_seconds'))} in all. Report: {info.get('report_path')}")


def replay_differences(live, merged, args) -> list[str]:
    """Where the replay's kernels differ from the live run's, in words (empty when they agree)."""
    # Compared by kernelscope's readable names: they fold Kineto's and ncu's spellings of one kernel
    # alike (ncu writes "(int)4" and "[lambda() (instance 2)]" where Kineto has "4" and "{lambda()#2}")
    # and still tell apart functors (elementwise sin from elementwise exp).
    from kernelscope.analysis.names import short_name
    live_names = [str(n) for n in live.kernels["name"].tolist()]
    rx = re.compile(args.kernels) if args.kernels else None
    expected = list(dict.fromkeys(short_name(n) for n in live_names if rx is None or rx.search(n)))
    got = list(dict.fromkeys(short_name(str(n)) for n in merged.ncu["kernel_name"].tolist()))
    everything_live = {short_name(n) for n in live_names}
    out = []
    limited = bool(args.launches) and len(merged.ncu) >= int(args.launches)
    missing = [n for n in expected if n not in set(got)]
    extra = [n for n in got if n not in everything_live]
    if missing and not limited:
        out.append(f"the replay did not launch {len(missing)} kernel(s) the live run did: "
                   + ", ".join(_short(n) for n in missing[:5]))
    if extra:
        out.append(f"the replay launched {len(extra)} kernel(s) the live run did not: "
                   + ", ".join(_short(n) for n in extra[:5]))
    if out:
        out[-1] += (" (the replay starts from a fresh process: different inputs, files, random state, "
                    "autotuning or caches change what runs; name the setup cells with --setup)")
    return out


def _nothing_profiled(args, live) -> str:
    names = sorted({str(n) for n in live.kernels["name"].tolist()})
    shown = ", ".join(_short(n) for n in names[:8]) + (" ..." if len(names) > 8 else "")
    if args.kernels:
        return (f"--kernels {args.kernels!r} matched no kernel the replayed cell launched "
                f"(the live run launched: {shown or 'none'}); ncu matches the regex against demangled names")
    if not names:
        return "the cell launched no GPU kernel (live or in the replay), so there is nothing to profile"
    return ("the replayed cell launched no kernel inside its NVTX range, though the live run launched "
            f"{len(names)} ({shown}); the earlier cells may not rebuild the state this cell needs (try --setup)")


def _short(name: str, n: int = 60) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _secs(s) -> str:
    return "-" if s is None else f"{s:.1f} s"


def _span(counts) -> str:
    return ", ".join(f"[{n}]" for n in counts)


def _say(msg: str, warn: bool = False):
    """What the replay did on stdout; what went wrong (nothing is lost: the live report shows) on stderr."""
    print(f"kernelscope: {msg}", file=sys.stderr if warn else sys.stdout, flush=True)
