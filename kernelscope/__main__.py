"""Command line: ``python -m kernelscope demo``, ``python -m kernelscope show TRACE`` or
``python -m kernelscope ncu [options] -- python train.py`` (profile a program under Nsight Compute,
write its report and print the deep dive)."""
from __future__ import annotations

import argparse
import sys
from importlib import resources

DEMO_TRACE = "mlp_train.pt.trace.json.gz"


def demo_path() -> str:
    """Path of the bundled real H200 recording (an MLP training step)."""
    return str(resources.files("kernelscope") / "data" / DEMO_TRACE)


def main(argv=None) -> int:
    from kernelscope import TraceError, load

    p = argparse.ArgumentParser(prog="python -m kernelscope", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="print the report of a bundled H200 recording (MLP training step)")
    show = sub.add_parser("show", help="print the report of a trace or report file")
    show.add_argument("path")
    show.add_argument("--top", type=int, default=10, help="kernels to list (default 10)")
    ncu = sub.add_parser("ncu", help="run a program under Nsight Compute, write its .ncu-rep and print the "
                                     "kernels' deep dive: python -m kernelscope ncu [options] -- python train.py")
    ncu.add_argument("-o", "--output", default=None, metavar="PATH",
                     help="report to write (default: the script's name with .ncu-rep, in this directory)")
    ncu.add_argument("--kernels", default=None, metavar="REGEX", help="profile only kernels whose demangled name matches")
    ncu.add_argument("--launches", type=int, default=None, metavar="N", help="profile at most N launches")
    ncu.add_argument("--set", dest="section_set", default="full", metavar="NAME",
                     help="Nsight Compute section set (default full)")
    ncu.add_argument("--nvtx-include", default=None, metavar="RANGE",
                     help="profile only inside this NVTX push/pop range (e.g. train_step)")
    ncu.add_argument("--top", type=int, default=5, help="launches to describe (default 5)")
    ncu.add_argument("--ncu-path", default=None, metavar="PATH", help="the ncu to use (default: $KERNELSCOPE_NCU, then PATH)")
    ncu.add_argument("command", nargs=argparse.REMAINDER, help="the program to profile, after --")
    args = p.parse_args(argv)
    if args.cmd == "ncu":
        return _ncu(args)
    path = demo_path() if args.cmd == "demo" else args.path
    try:
        rep = load(path)
    except TraceError as e:
        from kernelscope.render.text import printable
        print(f"kernelscope: {printable(str(e))}", file=sys.stderr)
        return 2
    from kernelscope.render.text import report_text
    if args.cmd == "demo":
        print(f"Demo: a real recording of one MLP training step on an NVIDIA H200 ({DEMO_TRACE}).")
    print(report_text(rep, top=getattr(args, "top", 10)))
    return 0


def _ncu(args) -> int:
    """``python -m kernelscope ncu -- CMD``: profile CMD under ncu, then print what it found."""
    import os
    import time
    from pathlib import Path

    from kernelscope import TraceError, load_ncu
    from kernelscope.capture.ncu_run import NcuError, find_ncu, ncu_argv, run_ncu
    from kernelscope.render.kernel import kernel_detail_text
    from kernelscope.render.text import report_text
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("kernelscope: give the program to profile after --, e.g. "
              "python -m kernelscope ncu -- python train.py", file=sys.stderr)
        return 2
    script = next((c for c in cmd[1:] if c.endswith(".py")), cmd[0])
    out = args.output or Path(script).stem + ".ncu-rep"
    out = out if out.endswith(".ncu-rep") else out + ".ncu-rep"
    try:
        exe = find_ncu(args.ncu_path)
        log = str(Path(os.path.abspath(out)).parent / f".{Path(out).name}.log")
        argv = ncu_argv(exe, out, cmd, section_set=args.section_set, kernels=args.kernels,
                        launches=args.launches, nvtx_range=args.nvtx_include, log_file=log)
        print(f"kernelscope: {' '.join(argv)}", file=sys.stderr)
        t0 = time.perf_counter()
        run = run_ncu(argv, out)
    except NcuError as e:
        msg = str(e)
        if msg == "Nsight Compute profiled no kernel":
            msg += (f": --kernels {args.kernels!r} matched none" if args.kernels else
                    f": nothing ran inside NVTX range {args.nvtx_include!r}" if args.nvtx_include else
                    ": the program launched no GPU kernel")
        print(f"kernelscope: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelscope: interrupted; ncu and the program were stopped.", file=sys.stderr)
        return 130
    sys.stdout.write(run.stdout)
    if os.path.exists(log):
        Path(log).unlink()   # ncu's own output, read by now
    try:
        rep = load_ncu(run.report_path)
    except TraceError as e:
        print(f"kernelscope: {e}", file=sys.stderr)
        return 2
    print(f"kernelscope: wrote {run.report_path} ({len(rep.ncu)} launch(es) profiled in "
          f"{time.perf_counter() - t0:.1f} s). Open it with ks.load_ncu({run.report_path!r}) in a notebook, "
          "from JupyterLab's file browser, or in Nsight Compute (ncu-ui).")
    print(report_text(rep, top=args.top))
    print(kernel_detail_text(rep, top=args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
