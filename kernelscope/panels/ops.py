"""The CPU ops panel: per op name its host time and the GPU time of its kernels."""
from __future__ import annotations

from kernelscope.panels.base import records

# CPU ops listed in the view (by total time); the rest stay in rep.ops.
TOP_OPS = 200


def ops_panel(rep) -> tuple[list, int]:
    """The CPU ops table of the view: per op name, host time (inclusive and self) and the GPU
    time of its kernels, self and inclusive (``Report.op_summary``), costliest first; and how
    many op names there are (the table's rows: one per name).

    >>> rows, n = ops_panel(rep)
    >>> n, rows[0]["name"]
    (60, 'aten::div')
    """
    if not len(rep.ops):
        return [], 0
    table = rep.op_summary
    return records(table.head(TOP_OPS)), int(len(table))
