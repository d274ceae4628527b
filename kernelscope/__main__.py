"""Command line: ``python -m kernelscope demo`` or ``python -m kernelscope show TRACE``."""
from __future__ import annotations

import argparse
import sys
from importlib import resources

DEMO_TRACE = "mlp_train.pt.trace.json.gz"


def demo_path() -> str:
    """Path of the bundled real H200 recording (an MLP training step)."""
    return str(resources.files("kernelscope") / "data" / DEMO_TRACE)


def main(argv=None) -> int:
    from . import TraceError, load

    p = argparse.ArgumentParser(prog="python -m kernelscope", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="print the report of a bundled H200 recording (MLP training step)")
    show = sub.add_parser("show", help="print the report of a trace or report file")
    show.add_argument("path")
    show.add_argument("--top", type=int, default=10, help="kernels to list (default 10)")
    args = p.parse_args(argv)
    path = demo_path() if args.cmd == "demo" else args.path
    try:
        rep = load(path)
    except TraceError as e:
        print(f"kernelscope: {e}", file=sys.stderr)
        return 2
    from .render.text import report_text
    if args.cmd == "demo":
        print(f"Demo: a real recording of one MLP training step on an NVIDIA H200 ({DEMO_TRACE}).")
    print(report_text(rep, top=getattr(args, "top", 10)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
