"""The "CUDA graphs" block (``js/src/view/graphs.js``; the text, Markdown and static HTML sections
of ``render/``): each graph the recording replayed, and what each replayed kernel's capture said.

Everything the outputs show is here: the column labels and their tooltips, each cell as text
(``fmt_us``, ``fmt_pct``: every output writes the same), and the per-kernel fields the kernel
details and the timeline's properties pane show (``KERNEL_FIELDS``). The numbers are
``rep.graphs`` (``analysis/graph_table.py``) and the kernels' attribution columns
(``analysis/graph_match.py``).
"""
from __future__ import annotations

import pandas as pd

from kernelscope.jsonable import jsonable
from kernelscope.units import fmt_pct, fmt_us

# (key, label, tooltip) of the graphs table, in order.
GRAPH_COLUMNS = [
    ("graph", "graph", "the graph: numbered by the graph watch's captures, or by the recording's own"),
    ("captured", "captured", "where the graph was captured, and who saw it"),
    ("replays", "replays", "how many times the recording replayed it"),
    ("kernels_per_replay", "kernels / replay", "kernels one replay ran (median)"),
    ("replay_us", "time / replay", "GPU time one replay spans, first kernel start to last kernel end (median)"),
    ("kernel_us_per_replay", "kernel time / replay", "the kernels' own time in one replay (median)"),
    ("total_us", "total kernel time", "all its kernels' time in the recording"),
    ("capture_us", "capture cost", "the capture's own cost on the host: from capture start to its end "
     "(the graph watch's records also count the instantiation)"),
    ("attributed", "attributed", "share of its kernels given the op that captured them"),
    ("ops", "captured ops", "the ops that captured most of its kernels"),
    ("unmatched", "unmatched because", "why some of its kernels have no capturing op (never a guess)"),
]
# The columns that are numbers (right-aligned, sorted as numbers).
NUMERIC = ("replays", "kernels_per_replay", "replay_us", "kernel_us_per_replay", "total_us", "capture_us",
           "attributed")
# (kernel column, label, tooltip) the details of a replayed kernel show.
KERNEL_FIELDS = [
    ("graph", "graph", "the graph this kernel's replay ran"),
    ("graph_replay", "replay", "which replay of that graph (1 = first in the recording)"),
    ("graph_node", "node", "the node of the graph, in capture order"),
    ("capture_basis", "matched by", "how the kernel was matched to the op that captured it"),
    ("capture_module", "module", "the module that ran when the op was captured"),
    ("graph_unmatched", "unmatched", "why no capturing op is known"),
]
# Of those, the ones that are numbers (the payload sends them as int32, the rest as strings).
KERNEL_NUMBERS = ("graph_replay", "graph_node")
TITLE = "CUDA graphs"


def cell_text(key: str, v) -> str:
    """One cell of the graphs table as every output writes it ("-" where not known).

    >>> cell_text("replay_us", 35.7117), cell_text("attributed", 1.0), cell_text("capture_us", None)
    ('35.7 us', '100%', '-')
    """
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if key.endswith("_us") or "_us_" in key:
        return fmt_us(v)
    if key == "attributed":
        return fmt_pct(v, None)
    if key in NUMERIC:
        return f"{int(v):,}"
    return str(v) if str(v) else "-"


def graphs_panel(rep) -> dict | None:
    """The graphs block: its columns, one row per graph (its values, each as text in ``text``,
    and ``kernels``: the value of the kernels' ``graph`` column that picks its launches, None
    for a graph none of whose kernels is attributed) and the per-kernel fields; None when
    nothing was replayed.

    >>> graphs_panel(rep) is None          # the MLP step replayed no graph
    True
    >>> g = graphs_panel(ks.load("graphs/manual_in_region.pt.trace.json.gz"))
    >>> g["rows"][0]["text"]["replays"], g["rows"][0]["text"]["kernels_per_replay"], g["rows"][0]["kernels"]
    ('3', '9', 'capture 1')
    """
    t = rep.graphs
    if not len(t):
        return None
    known = set(rep.kernels["graph"].dropna().unique()) if "graph" in rep.kernels.columns else set()
    rows = []
    for r in jsonable(t.astype(object).where(t.notna(), None).to_dict("records")):
        r["text"] = {k: cell_text(k, r.get(k)) for k, _, _ in GRAPH_COLUMNS}
        r["kernels"] = r["graph"] if r["graph"] in known else None
        rows.append(r)
    return {"title": TITLE,
            "columns": [{"key": k, "label": lab, "tip": tip, "num": k in NUMERIC} for k, lab, tip in GRAPH_COLUMNS],
            "rows": rows,
            "kernel_fields": [{"key": k, "label": lab, "tip": tip} for k, lab, tip in KERNEL_FIELDS]}


def kernel_field_spec(k: pd.DataFrame) -> list:
    """The payload's launch columns for the per-kernel fields: ``(column, kind)`` of each
    :data:`KERNEL_FIELDS` column the kernels table has, none when no kernel was replayed from a
    graph (no payload weight for a report without graphs).

    >>> kernel_field_spec(rep.kernels)
    []
    """
    have = [c for c, _, _ in KERNEL_FIELDS if c in k.columns]
    if not have or not any(k[c].notna().to_numpy(dtype=bool).any() for c in ("graph", "graph_unmatched", "graph_replay")
                           if c in k.columns):
        return []
    return [(c, "i32" if c in KERNEL_NUMBERS else "str") for c in have]

