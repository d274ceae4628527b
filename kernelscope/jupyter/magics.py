"""``%%kernelprofile`` and ``%kernelprofile``: profile notebook cells with kernelscope.

The cell body runs in the user namespace like any cell (its last expression is shown as the
cell's result), inside :class:`kernelscope.capture.profile`; the Report displays after it.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import linecache
import re
import sys

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from kernelscope.units import fmt_us

SORT_KEYS = ("total", "mean", "max", "launches", "name")


@magics_class
class KernelProfileMagics(Magics):
    """Registers ``%%kernelprofile`` (cell) and ``%kernelprofile start|stop|last`` (line).

    >>> get_ipython().register_magics(KernelProfileMagics)   # doctest: +SKIP
    """

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self.last = None        # the last Report
        self.last_options: dict = {}   # the display options it was shown with (--top, --sort)
        self.baselines = {}     # name -> Report, from --baseline NAME
        self._session = None    # (profile, args) of a `%kernelprofile start`

    @magic_arguments()
    @argument("action", nargs="?", choices=("start", "stop", "last", "baselines"),
              help="Line magic only: `start` begins a recording that spans several cells, `stop` "
                   "ends it and shows the report, `last` shows the last report again, "
                   "`baselines` lists stored baselines.")
    @argument("-h", "--help", action="store_true",
              help="Show this help; the cell does not run.")
    @argument("--top", type=int, default=None, metavar="N",
              help="Show the N kernels that took the most time (the rest stay in the report).")
    @argument("--sort", choices=SORT_KEYS, default=None,
              help="Order of the kernel table: total time (default), mean time, max time, "
                   "launch count or name.")
    @argument("-o", "--output", dest="output", default=None, metavar="NAME",
              help="Store the Report in the notebook namespace as NAME.")
    @argument("--save", default=None, metavar="PATH",
              help="Save the Report to PATH (kernelscope JSON; gzip if PATH ends in .gz); "
                   "open it later with ks.load(PATH).")
    @argument("--trace", default=None, metavar="PATH",
              help="Also write torch.profiler's raw Chrome trace to PATH (.json or .json.gz), "
                   "to open in Perfetto or with ks.load(PATH).")
    @argument("--warmup", type=int, default=None, metavar="K",
              help="Run the cell K times unrecorded first (compilation, autotuning, caches); with --steps, "
                   "the schedule's warm-up steps (profiler on, results dropped; default 1).")
    @argument("--steps", type=int, default=None, metavar="N",
              help="The cell is one step of a loop: run it --wait + --warmup + N times under a "
                   "torch.profiler schedule and record N steps (rep.steps: time and breakdown per step).")
    @argument("--wait", type=int, default=None, metavar="W",
              help="With --steps: steps run first with the profiler off (default 1).")
    @argument("--repeat", type=int, default=1, metavar="N",
              help="Record the cell N times and keep per-kernel statistics over the N runs "
                   "(report.meta['repeats']). The cell's code runs K+N times: side effects too.")
    @argument("--stack", action="store_true",
              help="Record Python stacks so that each kernel maps to the cell line that "
                   "launched it (kernels' `source` column). Costs some overhead.")
    @argument("--memory", action="store_true",
              help="Also record torch's allocator (torch.profiler's profile_memory; costs per op): "
                   "rep.memory, the peak, what held it by op and line, allocated and reserved over time, "
                   "growth per step. Where torch.cuda.memory._record_memory_history() is on, its snapshot "
                   "at the end gives each allocation its exact line.")
    @argument("--lean", action="store_true",
              help="Record CUDA activity only: lowest overhead, but no CPU ops, so no "
                   "attribution of kernels to the ops that launched them.")
    @argument("--metrics", nargs="?", const="default", default=None, metavar="NAMES",
              help="Also sample hardware counters GPU-wide while the cell runs (CUPTI PM sampling, "
                   "no kernel replay): SM active, tensor pipe and DRAM use per kernel, and a "
                   "utilization strip under the timeline. NAMES: comma-separated CUPTI metrics "
                   "instead of the defaults. Needs kernelscope[counters]; may lock GPU clocks.")
    @argument("--interval-us", dest="interval_us", type=float, default=None, metavar="US",
              help="PM sampling interval in microseconds (default 20).")
    @argument("--stalls", action="store_true",
              help="Then replay the cells this one needs in a new process (as --ncu does), this cell under "
                   "Triton's Proton PC sampling, for warp-stall reasons per kernel (report.stalls, "
                   "sampled live). The cell's side effects happen there too. Needs triton.")
    @argument("--no-display", dest="no_display", action="store_true",
              help="Do not display the report (use -o or `%%kernelprofile last`).")
    @argument("--baseline", default=None, metavar="NAME",
              help="Store this run as the baseline NAME for a later --compare NAME. When NAME is "
                   "already stored, re-measure instead: compare this run with it (each item of the "
                   "baseline's what-to-fix list: fixed / partly / not, predicted against realized) "
                   "and keep the original baseline, so that every fix is measured against the same "
                   "before; store a new baseline under a new name. Use --repeat N on both runs to "
                   "tell a change from noise.")
    @argument("--compare", default=None, metavar="NAME",
              help="Profile the cell and show how it compares with baseline NAME (a stored "
                   "baseline, or a Report in the namespace under that name), with the baseline's "
                   "what-to-fix items re-measured.")
    @argument("--ncu", action="store_true",
              help="Also get Nsight Compute's report of the cell's kernels (roofline, memory, stall "
                   "reasons, source hot spots, its advice), keeping this kernel's state: a new process "
                   "under ncu replays the earlier cells this one needs (see --setup), then this cell, profiling "
                   "only this cell. Needs ncu (on PATH or $KERNELSCOPE_NCU).")
    @argument("--kernels", default=None, metavar="REGEX",
              help="With --ncu: profile only kernels whose (demangled) name matches REGEX.")
    @argument("--launches", type=int, default=None, metavar="N",
              help="With --ncu: profile at most N kernel launches.")
    @argument("--set", dest="set", default=None, metavar="NAME",
              help="With --ncu: Nsight Compute's section set (default full; basic is faster but has no "
                   "stall sampling or source view).")
    @argument("--setup", default=None, metavar="CELLS",
              help="With --ncu or --stalls: the cells to replay first, by number (e.g. 1,3-5, or none), "
                   "instead of the earlier cells this cell needs (those binding or changing the names it "
                   "uses, found from their code).")
    @argument("--replay-limit", dest="replay_limit", type=float, default=None, metavar="SECONDS",
              help="With --ncu or --stalls: replay needed cells that ran up to SECONDS when they ran "
                   "(default 60; longer ones, such as a training loop, only with --setup).")
    @line_cell_magic
    def kernelprofile(self, line, cell=None):
        """Profile a cell's GPU kernels, copies and CPU ops; show the kernelscope report after.

        Cell:  %%kernelprofile [--top N] [--sort KEY] [-o NAME] [--save PATH] [--trace PATH] [--warmup K]
               [--repeat N] [--steps N [--wait W]] [--stack] [--memory] [--lean] [--metrics [NAMES]] [--interval-us US] [--stalls]
               [--no-display] [--baseline NAME] [--compare NAME]
               [--ncu [--kernels REGEX] [--launches N] [--set NAME]] [--setup CELLS] [--replay-limit S]
        Line:  %kernelprofile start [options]  /  %kernelprofile stop  /  %kernelprofile last
               /  %kernelprofile baselines
        Re-measure: `--baseline NAME` stores the run; run the fixed cell with the same
        `--baseline NAME` (or `--compare NAME`) to see, for each item of the baseline's list,
        fixed / partly / not, predicted against realized. The baseline stays the first run;
        a new name stores a new one. Add `--repeat N` (N >= 2, both runs) for confidence
        intervals: without repeats no change can be told from noise.
        """
        __tracebackhide__ = True  # noqa: F841 - hides this frame in IPython/pytest tracebacks
        args = parse_argstring(self.kernelprofile, line)
        if args.help:
            print(self.kernelprofile.__doc__)
            return None
        if cell is None:
            return self._line(args)
        if args.action:
            raise UsageError(f"`{args.action}` is for the line magic: %kernelprofile {args.action}")
        return self._cell(args, cell)

    # -- cell ---------------------------------------------------------------------------------
    def _cell(self, args, cell):
        __tracebackhide__ = True  # noqa: F841
        _check(args)
        _check_output(args.output, self.shell)
        from kernelscope.capture import profile
        run = self._compile(cell)
        stalls_off = None
        if args.stalls:
            from kernelscope.capture.stalls import unavailable
            stalls_off = unavailable()
        runs, schedule = _runs(args)
        if runs > 1:
            print(f"kernelscope: the cell runs {runs} times ({_plan(args)}); its side effects repeat too.",
                  file=sys.stderr)
        for _ in range(0 if args.steps else args.warmup):
            run(last=False)
        prof = profile(lean=args.lean, with_stack=args.stack, name=self._cell_name or "<cell>",
                       lines_of=self._cell_name if args.stack else None, trace_path=args.trace,
                       metrics=_metrics(args.metrics), interval_us=args.interval_us,
                       title=_title(args.output, self._count()), schedule=schedule, memory=args.memory)
        error = None
        _start(prof)
        try:
            if args.steps:
                for i in range(runs):
                    run(last=i == runs - 1)
                    prof.step()
            elif args.repeat > 1:
                for i in range(args.repeat):
                    with prof.repeat(i):
                        run(last=i == args.repeat - 1)
            else:
                run(last=True)
        except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt too: stop cleanly, show what ran, re-raise
            error = e
        try:
            report = prof.stop(partial=error is not None, error=error)
        except BaseException:
            # The profiler is off again (stop() sees to that); a lost CUDA context is the user's to know.
            _say_if_context_lost()
            if error is not None:
                raise error from None
            raise
        if error is not None:
            _say_if_context_lost()
        if "repeats" in report.meta:
            report.meta["repeats"]["warmup"] = args.warmup
        if args.warmup == 0 and first_run(cell, _history(self.shell, cell)):
            # What runs once (compiles, module loading, library handles) is in this recording.
            report.meta["first_run"] = True
            report.meta.setdefault("notes", []).append(FIRST_RUN_NOTE)
        if self._cell_name:
            report.meta["cell"] = {"file": self._cell_name, "first_line": self._cell_first_line,
                                   "execution_count": self._count()}
        if stalls_off:
            report.meta.setdefault("notes", []).append(stalls_off)
        elif args.stalls and error is None:
            from kernelscope.jupyter.replay import stall_replay
            report = stall_replay(self.shell, args, cell, report)
        elif args.stalls:
            print("kernelscope: the cell raised, so no warp-stall replay ran.", file=sys.stderr)
        if args.ncu and error is None:
            from kernelscope.jupyter.replay import deep_dive
            report = deep_dive(self.shell, args, cell, report)
        elif args.ncu:
            print("kernelscope: the cell raised, so no Nsight Compute replay ran.", file=sys.stderr)
        self._finish(report, args)
        if error is not None:
            raise error.with_traceback(error.__traceback__)

    def _compile(self, cell):
        """A function running the cell body in the user namespace.

        The body is compiled under the running cell's own file name, with line numbers shifted
        past the ``%%kernelprofile`` line, so that stacks (``--stack``) and tracebacks point at
        the lines the user sees in the cell.
        """
        shell = self.shell
        name, first = _outer_cell()
        source = shell.transform_cell(cell)
        tree = ast.parse(source)
        if name is None:
            name = shell.compile.cache(cell, shell.execution_count, raw_code=cell)
            first = 1
        else:
            ast.increment_lineno(tree, first - 1)
            # Let tracebacks show the cell's lines, not IPython's one-line transformed call.
            old = linecache.cache.get(name)
            head = list(old[2][:first - 1]) if old else []
            lines = head + ["\n"] * (first - 1 - len(head)) + [ln + "\n" for ln in cell.splitlines()]
            linecache.cache[name] = (sum(map(len, lines)), None, lines, name)
        self._cell_name, self._cell_first_line = name, first
        body, last = tree.body, None
        if body and isinstance(body[-1], ast.Expr):
            body, last = body[:-1], body[-1]
        flags = shell.compile.flags
        code_body = compile(ast.Module(body=body, type_ignores=[]), name, "exec", flags, True)
        code_last = code_quiet = None
        if last is not None:
            # "single" mode shows the value through the shell's displayhook, as Out[n].
            code_last = compile(ast.Interactive(body=[last]), name, "single", flags, True)
            code_quiet = compile(ast.Module(body=[last], type_ignores=[]), name, "exec", flags, True)
        g, ns = shell.user_global_ns, shell.user_ns

        def run(last=True):
            __tracebackhide__ = True  # noqa: F841
            exec(code_body, g, ns)
            if code_last is not None:
                exec(code_last if last else code_quiet, g, ns)
        return run

    # -- line ---------------------------------------------------------------------------------
    def _line(self, args):
        __tracebackhide__ = True  # noqa: F841
        if args.action in (None, "start"):
            if args.action is None:
                raise UsageError("%kernelprofile needs `start`, `stop` or `last`; "
                                 "use %%kernelprofile on a cell to profile that cell")
            if args.repeat != 1 or args.warmup or args.stalls or args.steps:
                raise UsageError("--repeat, --warmup, --steps and --stalls are for %%kernelprofile on a cell")
            if args.ncu:
                raise UsageError("--ncu is for %%kernelprofile on a cell (it replays that cell under Nsight Compute)")
            _check(args)
            _check_output(args.output, self.shell)
            from kernelscope.capture import profile
            if self._session is not None:
                raise UsageError("a recording started with `%kernelprofile start` is already "
                                 "running; end it with `%kernelprofile stop`")
            from kernelscope.capture.lines import is_cell_file
            prof = profile(lean=args.lean, with_stack=args.stack, name="<%kernelprofile start>",
                           lines_of=is_cell_file if args.stack else None, trace_path=args.trace,
                           metrics=_metrics(args.metrics), interval_us=args.interval_us,
                           title=_title(args.output, self._count()), memory=args.memory)
            _start(prof)
            self._session = (prof, args)
            self._session_cells = self._count()
            print("kernelscope: recording; run your cells, then `%kernelprofile stop`.")
            return
        if args.action == "stop":
            if self._session is None:
                raise UsageError("no recording is running; start one with `%kernelprofile start`")
            prof, start_args = self._session
            self._session = None
            report = prof.stop()
            for k in ("top", "sort", "output", "save", "baseline", "compare"):
                if getattr(args, k) is None:
                    setattr(args, k, getattr(start_args, k))
            # The cells the recording spanned: In [3]–[5].
            a, b = self._session_cells, self._count()
            span = None if a is None or b is None else f"In [{a}]" if a == b else f"In [{a}]–[{b}]"
            report.meta["title"] = _title(args.output, None, span) or report.meta.get("title")
            args.no_display = args.no_display or start_args.no_display
            self._finish(report, args)
            return
        if args.action == "last":
            if self.last is None:
                raise UsageError("no report yet: profile a cell with %%kernelprofile first")
            _display(self.last.display(**self.last_options))
            return
        if args.action == "baselines":
            for name, rep in self.baselines.items():
                n = (rep.meta.get("repeats") or {}).get("n") or 1
                runs = f", {n} repeats" if n > 1 else ", 1 run (no repeats)"
                print(f"{name}: {len(rep.kernels) / n:g} kernel launches, "
                      f"{fmt_us(rep.gpu_time_us / n)} kernel time per run{runs}"
                      + (f" ({rep.title})" if getattr(rep, "title", None) else ""))
            if not self.baselines:
                print("no baselines yet: use %%kernelprofile --baseline NAME")
            return

    # -- shared ---------------------------------------------------------------------------------
    def _finish(self, report, args):
        self.last = report
        self.last_options = {"top": args.top, "sort": args.sort}
        if args.output:
            self.shell.user_ns[args.output] = report
        if args.save:
            try:
                report.save(args.save)
            except OSError as e:
                # Said, not raised: the report is still shown, and a cell's own exception still
                # follows (a save error must not replace it).
                why = f"the report could not be saved to {args.save} ({e.strerror or e})"
                report.meta.setdefault("notes", []).append(why)
                print(f"kernelscope: {why}", file=sys.stderr)
        remeasure = bool(args.baseline) and args.baseline in self.baselines
        if args.baseline and not remeasure:
            self.baselines[args.baseline] = report
        if report.meta.get("no_gpu"):
            print("kernelscope: no GPU found (torch.cuda.is_available() is False); "
                  "recorded CPU ops only.")
        if report.partial:
            what = report.meta.get("error") or "stopped early"
            print(f"kernelscope: partial report: the cell did not finish ({what}).", file=sys.stderr)
        comparison = self._compare(report, args.compare or (args.baseline if remeasure else None))
        if remeasure and comparison is not None:
            print(f"kernelscope: re-measured against baseline {args.baseline!r}, which stays as it was "
                  "(every fix is measured against the same before); to measure from this run on, "
                  "store it under a new name: --baseline NEW_NAME (`%kernelprofile baselines` lists them).")
        if args.no_display:
            return
        _display(comparison if comparison is not None else report.display(top=args.top, sort=args.sort))

    def _compare(self, report, name):
        """The Comparison of ``report`` with the baseline ``name`` (a stored one, else a Report in
        the namespace), or None (said) where there is none."""
        if not name:
            return None
        before = self.baselines.get(name)
        if before is None:
            before = self.shell.user_ns.get(name)
        if before is None or not hasattr(before, "kernels"):
            print(f"kernelscope: no baseline named {name!r} "
                  f"(stored: {', '.join(self.baselines) or 'none'}); showing the report only.",
                  file=sys.stderr)
            return None
        import kernelscope as ks
        report.meta["compared_with"] = name
        return ks.compare(before, report)

    def _count(self):
        """The number of the cell now running (its ``In [N]``), None outside a numbered cell."""
        from kernelscope.capture.lines import cell_number
        return cell_number(self.shell)

    _cell_name = None
    _cell_first_line = 1
    _session_cells = None


class UsageError(Exception):
    """Wrong use of the magic; IPython shows just the message."""


try:  # IPython's own UsageError prints without a traceback
    from IPython.core.error import UsageError  # type: ignore[assignment]  # noqa: F811
except ImportError:  # pragma: no cover
    pass


FIRST_RUN_NOTE = ("first run: this cell's code has not run before in this kernel, so what runs once "
                  "(compiles, module loading, cuBLAS/cuDNN setup, allocator growth) is in the recording; "
                  "run the cell again, or use --warmup 1, for the steady state")


def first_run(cell: str, history) -> bool:
    r"""Whether a cell's code runs for the first time in this kernel: no earlier input (a plain
    cell, or an earlier %%kernelprofile of it) holds its code. Lines are compared stripped and
    without blanks, so an indent or an added empty line does not make it new.

    >>> first_run("y = f(x)\n", ["x = 1", "%%kernelprofile\ny = f(x)"])
    False
    >>> first_run("y = f(x)\n", ["x = 1"])
    True
    """
    body = _code_lines(cell)
    if not body:
        return False
    n = len(body)
    for past in history:
        lines = _code_lines(past)
        if any(lines[i:i + n] == body for i in range(len(lines) - n + 1)):
            return False
    return True


def _code_lines(text) -> list:
    return [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]


def _history(shell, cell) -> list:
    """The inputs run before this one in the kernel: IPython's ``In``, without the current input
    when it is stored there (a kernel stores each cell before running it)."""
    ins = list(getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or [])
    if ins and not first_run(cell, ins[-1:]):
        ins = ins[:-1]
    return ins


def _start(prof):
    """Start recording; a busy profiler is the user's to stop (a lost CUDA context, the kernel's
    to restart), so show just the message."""
    from kernelscope.capture import ProfilerBusyError
    from kernelscope.capture.recorder import CudaContextLost
    try:
        prof.start()
    except (ProfilerBusyError, CudaContextLost) as e:
        raise UsageError(f"kernelscope: {e}") from None


def _say_if_context_lost():
    """After a cell failed: where a sticky CUDA error broke this process's CUDA context, say that
    only a restart helps (the cell's own error follows)."""
    from kernelscope.capture.recorder import RESTART, cuda_context_lost
    lost = cuda_context_lost()
    if lost:
        print(f"kernelscope: the CUDA context of this kernel is lost ({lost}); the profiler was stopped. "
              f"{RESTART[0].upper()}{RESTART[1:]}.", file=sys.stderr)


def _title(output, count, cells=None):
    """A report's title: the ``-o`` name and the cell (``fp32 · In [5]``), or the cell alone."""
    cells = cells or (f"In [{count}]" if count is not None else None)
    return " · ".join(x for x in (output, cells) if x) or None


def _metrics(value):
    """--metrics as ks.profile's ``metrics``: True for the defaults, else the names given."""
    if value is None:
        return None
    return True if value == "default" else [m.strip() for m in value.split(",") if m.strip()]


# IPython's own names: its output cache (_, __, _5), input history (_i, _ii, _i5) and their
# tables. Rebinding one breaks every later cell (``-o __builtins__`` did).
_IPYTHON_NAME = re.compile(r"_+|_\d+|_i+|_i\d+|_[iod]h|__\w*__")


def _check_output(name, shell) -> None:
    """Refuse an ``-o NAME`` that is not a plain identifier or that IPython relies on.

    >>> _check_output("rep", None)
    >>> _check_output("__builtins__", None)
    Traceback (most recent call last):
        ...
    IPython.core.error.UsageError: -o __builtins__: IPython or Python relies on this name; choose another, such as rep
    """
    if name is None:
        return
    hidden = getattr(shell, "user_ns_hidden", None) or {}
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"-o {name!r}: the report's name must be a Python identifier, such as rep")
    if _IPYTHON_NAME.fullmatch(name) or name in hidden or name in dir(builtins):
        raise UsageError(f"-o {name}: IPython or Python relies on this name; choose another, such as rep")


def _check(args):
    ncu_only = [f"--{k}" for k in ("kernels", "launches", "set") if getattr(args, k, None) is not None]
    if ncu_only and not args.ncu:
        raise UsageError(f"{', '.join(ncu_only)} only apply with --ncu")
    replay_only = [f"--{k.replace('_', '-')}" for k in ("setup", "replay_limit") if getattr(args, k, None) is not None]
    if replay_only and not (args.ncu or args.stalls):
        raise UsageError(f"{', '.join(replay_only)} only apply with --ncu or --stalls (they choose the cells "
                         "replayed before this one)")
    if args.replay_limit is not None and not args.replay_limit >= 0:
        raise UsageError("--replay-limit is a number of seconds (0 or more)")
    if args.ncu:
        args.set = args.set or "full"
        if args.launches is not None and args.launches < 1:
            raise UsageError("--launches must be at least 1")
        if args.kernels:
            try:
                re.compile(args.kernels)
            except re.error as e:
                raise UsageError(f"--kernels {args.kernels!r} is not a regular expression ({e})") from None
    if args.stack and args.lean:
        raise UsageError("--stack needs CPU activity to place kernels on lines, which --lean "
                         "turns off; use one or the other")
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    if args.steps is not None and (args.steps < 1 or args.repeat != 1):
        raise UsageError("--steps must be at least 1, and is not for --repeat")
    if args.wait is not None and (args.steps is None or args.wait < 0):
        raise UsageError("--wait is --steps' steps with the profiler off: 0 or more, with --steps")
    from kernelscope.capture.schedule import DEFAULT_WAIT, DEFAULT_WARMUP
    args.warmup = (DEFAULT_WARMUP if args.steps else 0) if args.warmup is None else args.warmup
    args.wait = DEFAULT_WAIT if args.steps and args.wait is None else (args.wait or 0)
    if args.warmup < 0:
        raise UsageError("--warmup must be 0 or more")
    if args.top is not None and args.top < 1:
        raise UsageError("--top must be at least 1")
    if args.interval_us is not None and not args.interval_us >= 1:
        raise UsageError("--interval-us must be at least 1 (microseconds)")
    if args.interval_us is not None and args.metrics is None:
        raise UsageError("--interval-us sets the PM sampling interval: use it with --metrics")


def _runs(args) -> tuple:
    """How many times the recorded part runs the cell, and the schedule (with --steps)."""
    if not args.steps:
        return args.warmup + args.repeat, None
    from kernelscope.capture.schedule import steps_schedule
    return args.wait + args.warmup + args.steps, steps_schedule(args.wait, args.warmup, args.steps)


def _plan(args) -> str:
    if args.steps:
        return f"{args.wait} with the profiler off, {args.warmup} warm-up, {args.steps} recorded steps"
    return ", ".join(([f"{args.warmup} warm-up"] if args.warmup else []) + [f"{args.repeat} recorded"])


def _display(obj):
    from IPython.display import display
    display(obj)


def _outer_cell():
    """File name of the cell now running and the line its ``%%kernelprofile`` body starts on.

    IPython runs a cell magic as ``get_ipython().run_cell_magic(...)`` inside the cell's own
    code object, so the cell's frame is on the stack; its file name is what stacks and
    tracebacks use for that cell (``/tmp/ipykernel_*/N.py`` or ``<ipython-input-N-...>``).
    """
    f = sys._getframe(1)
    while f is not None:
        co = f.f_code
        if co.co_name == "<module>" and "run_cell_magic" in co.co_names:
            # The magic line is the cell's first non-blank line; the body starts after it.
            return co.co_filename, f.f_lineno + 1
        f = f.f_back
    return None, 1
