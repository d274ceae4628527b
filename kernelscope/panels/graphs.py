"""The "CUDA graphs" block (``js/src/view/graphs.js``): each graph the recording replayed, and
what each replayed kernel's capture said.

Everything the browser shows is here: the column labels and their tooltips, and the per-kernel
fields the kernel details show (``KERNEL_FIELDS``). The numbers are ``rep.graphs``
(``analysis/graphs.py: graph_table``) and the kernels' attribution columns
(``analysis/graph_match.py``).
"""
from __future__ import annotations

from kernelscope.jsonable import jsonable

# (key, label, tooltip) of the graphs table, in order.
GRAPH_COLUMNS = [
    ("graph", "graph", "the graph: numbered by the graph watch's captures, or by the recording's own"),
    ("captured", "captured", "where the graph was captured, and who saw it"),
    ("replays", "replays", "how many times the recording replayed it"),
    ("kernels_per_replay", "kernels / replay", "kernels one replay ran (median)"),
    ("replay_us", "µs / replay", "GPU time one replay spans, first kernel start to last kernel end (median)"),
    ("kernel_us_per_replay", "kernel µs / replay", "the kernels' own time in one replay (median)"),
    ("total_us", "total µs", "all its kernels' time in the recording"),
    ("capture_us", "capture µs", "the capture's own cost on the host: from capture start to its end "
     "(the graph watch's records also count the instantiation)"),
    ("attributed", "attributed", "share of its kernels given the op that captured them"),
    ("ops", "captured ops", "the ops that captured most of its kernels"),
    ("unmatched", "unmatched because", "why some of its kernels have no capturing op (never a guess)"),
]
# (kernel column, label, tooltip) the details of a replayed kernel show.
KERNEL_FIELDS = [
    ("graph", "graph", "the graph this kernel's replay ran"),
    ("graph_replay", "replay", "which replay of that graph (1 = first in the recording)"),
    ("graph_node", "node", "the node of the graph, in capture order"),
    ("capture_basis", "matched by", "how the kernel was matched to the op that captured it"),
    ("capture_module", "module", "the module that ran when the op was captured"),
    ("graph_unmatched", "unmatched", "why no capturing op is known"),
]


def graphs_panel(rep) -> dict | None:
    """The graphs block: its columns and one row per graph (None when nothing was replayed).

    >>> graphs_panel(rep) is None          # the MLP step replayed no graph
    True
    """
    t = rep.graphs
    if not len(t):
        return None
    rows = t.astype(object).where(t.notna(), None).to_dict("records")
    return {"columns": [{"key": k, "label": lab, "tip": tip} for k, lab, tip in GRAPH_COLUMNS],
            "rows": jsonable(rows),
            "kernel_fields": [{"key": k, "label": lab, "tip": tip} for k, lab, tip in KERNEL_FIELDS]}
