"""The multi-rank view's payload (``js/src/view/ranks.js``): per-rank lanes and kernel tables."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.backend_rules import BACKENDS
from kernelscope.jsonable import num
from kernelscope.panels.base import records, safe
from kernelscope.panels.fixes import findings_panel
from kernelscope.render.ranks import KERNELS_PER_RANK, SOURCES
from kernelscope.view.codec import VIEW_VERSION, pack_tables
from kernelscope.view.vocabulary import vocabulary

LANE_COLUMNS = [("rank", "i32"), ("kind", "str"), ("start_us", "f64"), ("end_us", "f64")]
# The lanes' kinds as the view draws them: one band each per rank (colours: NCCL's and memcpy's
# backend colours for communication and copies, from the one backend vocabulary; compute, a
# union of every other backend, has its own).
LANE_KINDS = [
    {"kind": "compute", "label": "compute", "color": "#5778a4",
     "title": "kernels other than NCCL's (union), measured by CUPTI"},
    {"kind": "comm", "label": "communication", "color": BACKENDS["NCCL"],
     "title": "NCCL kernels (CUPTI) or host spans of gloo/MPI calls (union)"},
    {"kind": "copy", "label": "copies", "color": BACKENDS["memcpy"], "title": "memcpy and memset (union), measured by CUPTI"},
]


def ranks_view_model(rep) -> tuple[dict, bytes]:
    """The multi-rank report as (JSON header, binary buffer) for the browser.

    >>> header, buf = ranks_view_model(ranks)
    >>> header["kind"], header["tables"]["lanes"]["rows"] > 0
    ('ranks', True)
    """
    parts = []
    for rank, kinds in rep.lanes.items():
        for kind, (s, e) in kinds.items():
            if len(s):
                parts.append(pd.DataFrame({"rank": rank, "kind": kind, "start_us": np.asarray(s, float),
                                           "end_us": np.asarray(e, float)}))
    lanes = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({c: [] for c, _ in LANE_COLUMNS})
    tables, buf = pack_tables([("lanes", lanes, LANE_COLUMNS)])
    k = rep.summary()
    keep = ["rank", "short_name", "name", "backend", "launches", "total_us", "mean_us", "share"]
    top = k.groupby("rank", sort=False).head(KERNELS_PER_RANK)[[c for c in keep if c in k.columns]] if len(k) else k
    header = {
        "version": VIEW_VERSION, "kind": "ranks", "vocabulary": vocabulary(), "title": f"{len(rep.ranks)} ranks",
        "world_size": rep.world_size, "notes": [str(n) for n in rep.notes],
        "ranks": records(rep.ranks), "steps": records(rep.steps), "stragglers": records(rep.stragglers),
        "comm": records(rep.comm_summary()), "kernels": records(top), "kernels_per_rank": KERNELS_PER_RANK,
        "findings": safe(lambda: findings_panel(rep), []), "sources": SOURCES, "lane_kinds": LANE_KINDS,
        "span": [num(lanes["start_us"].min()) if len(lanes) else 0.0, num(lanes["end_us"].max()) if len(lanes) else 1.0],
        "tables": tables, "nbytes": len(buf),
    }
    return header, buf
