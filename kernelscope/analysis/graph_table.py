"""The per-graph table (``rep.graphs``): each replayed CUDA graph, its replays and its capture."""
from __future__ import annotations

import pandas as pd

from kernelscope.analysis.graph_match import trace_captures, watch_captures

GRAPH_COLUMNS = ["graph", "captured", "replays", "kernels_per_replay", "replay_us", "kernel_us_per_replay",
                 "total_us", "capture_us", "attributed", "ops", "unmatched"]


def graph_table(trace, kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per CUDA graph the recording replayed: where it was captured (in the recording,
    or before it, as the graph watch saw), its replays, kernels per replay, the GPU time a
    replay spans (median, first kernel start to last kernel end) and its kernels' time, the
    capture's own cost (the capturing thread's time from the capture's start to its end, and for
    the watch's records to the instantiated graph), the share of its kernels given the op that
    captured them, its top captured ops, and why any kernel is unmatched.

    >>> g = ks.load("graphs/manual_in_region.pt.trace.json.gz")   # captured and replayed 3 times
    >>> graph_table(g.trace, g.kernels)[["graph", "replays", "kernels_per_replay", "attributed", "ops"]]
           graph  replays  kernels_per_replay  attributed                                      ops
    0  capture 1        3                   9         1.0  aten::addmm ×9, aten::add_ ×6, aten:...
    """
    if "graph" not in kernels.columns:
        return pd.DataFrame(columns=GRAPH_COLUMNS)
    cost = {c.label: (c.capture_us, "before the recording (graph watch)" if not c.in_region
                      else "in the recording (graph watch)")
            for c in watch_captures(trace.meta)}
    cost.update({c.label: (c.capture_us, "in the recording") for c in trace_captures(trace)})
    g = kernels[kernels["graph_launch"].fillna(False).astype(bool)].copy()
    if not len(g):
        return pd.DataFrame(columns=GRAPH_COLUMNS)
    n_per = g.groupby("correlation")["name"].transform("size")
    g["label"] = g["graph"].where(g["graph"].notna(), "unattributed graph (" + n_per.astype(str) + " kernels)")
    g["end_us"] = g["start_us"] + g["duration_us"]
    rows = []
    for label, part in g.groupby("label", sort=False):
        per = part.groupby("correlation").agg(first=("start_us", "min"), last=("end_us", "max"),
                                              n=("name", "size"), busy=("duration_us", "sum"))
        ops = part.loc[part["graph_unmatched"].isna(), "op"].dropna().value_counts().head(3)
        why = part["graph_unmatched"].dropna()
        c_us, where = cost.get(label, (None, "unknown: not attributed"))
        rows.append({"graph": label, "captured": where, "replays": len(per),
                     "kernels_per_replay": int(per["n"].median()),
                     "replay_us": float((per["last"] - per["first"]).median()),
                     "kernel_us_per_replay": float(per["busy"].median()),
                     "total_us": float(part["duration_us"].sum()), "capture_us": c_us,
                     "attributed": float(part["graph_unmatched"].isna().mean()) if label in cost else 0.0,
                     "ops": ", ".join(f"{o} ×{n}" for o, n in ops.items()),
                     "unmatched": why.iloc[0] if len(why) else None})
    out = pd.DataFrame(rows, columns=GRAPH_COLUMNS)
    return out.sort_values("total_us", ascending=False, ignore_index=True)
