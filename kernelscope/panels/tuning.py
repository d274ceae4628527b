"""The "Tuning" block of a kernel's details (``js/src/view/tuning.js``): what produced each kernel,
the knobs its launches ran with, and every tuning of it with its candidates, fastest first.

Everything the browser shows is here: column labels and their tooltips, the winner, where each
number came from. The candidates of one tuning are capped at :data:`MAX_ROWS` (fastest first; the
payload says how many there were): ``rep.autotune`` keeps every one.
"""
from __future__ import annotations

import pandas as pd

from kernelscope.analysis.backends import distinct_rows
from kernelscope.analysis.distinct import identities
from kernelscope.jsonable import jsonable

MAX_ROWS = 50          # candidates of one tuning sent to the browser
MAX_KNOBS = 12         # distinct knob sets of one kernel's launches
MAX_LAYERS = 6         # TensorRT layers named for one kernel
# (key, label, tooltip) of the candidates table, in order.
CANDIDATE_COLUMNS = [
    ("config", "config", "the configuration as its producer writes it"),
    ("num_warps", "warps", "num_warps"),
    ("num_stages", "stages", "num_stages (software pipelining depth)"),
    ("p50_ms", "p50 ms", "median time the tuner measured"),
    ("p20_ms", "p20 ms", "20th percentile the tuner measured"),
    ("p80_ms", "p80 ms", "80th percentile the tuner measured"),
    ("vs_best", "vs best", "p50 over the winner's"),
    ("registers", "regs", "registers per thread (ptxas, as Triton reports them)"),
    ("spills", "spills", "registers spilled to local memory (Triton's n_spills: bytes / 4)"),
    ("shared_mem_bytes", "smem", "shared memory per block, bytes"),
    ("theoretical_occupancy", "occupancy", "theoretical occupancy (kernelscope's calculator on this GPU)"),
    ("occupancy_limiter", "limited by", "what caps the resident blocks per SM"),
    ("launches", "launches", "launches in this region that ran it (its compiled variant identified on the launch; "
     "an Inductor choice: the launches inside its benchmark's range, and a winner's compiled kernel); "
     "click to show them in the kernel table"),
    ("benchmark_launches", "by the tuner", "how many of those launches were the tuner's own benchmark (empty: this "
     "recording does not mark them)"),
    ("resources_source", "regs from", "where the registers, spills and shared memory were read"),
    ("note", "note", "what the capture could not tell"),
]
MAX_LINKED = 5000      # launches of one candidate a click can show
KNOB_COLUMNS = [
    ("config", "config", "the configuration as its producer writes it"),
    ("num_warps", "warps", "num_warps"),
    ("num_stages", "stages", "num_stages"),
    ("spills", "spills", "registers spilled to local memory"),
    ("launches", "launches", "launches with these knobs"),
    ("config_source", "from", "where the knobs were read"),
]


def _records(df: pd.DataFrame, cols) -> list:
    df = df[[c for c in cols if c in df.columns]]
    return jsonable(df.astype(object).where(df.notna(), None).to_dict("records"))


def _layer_text(g) -> str | None:
    """The TensorRT layers one kernel's launches ran, as the view says it (None without an
    engine's inspector JSON, or where no layer's tactic is this kernel)."""
    if "trt_layers" not in g.columns or not (g["trt_layers"].fillna(0) > 0).any():
        return None
    r = g.iloc[0]
    kind = f" ({r['trt_layer_type']})" if isinstance(r["trt_layer_type"], str) else ""
    named = list(dict.fromkeys(x for x in g["trt_layer"] if isinstance(x, str)))
    parts = []
    if len(named) == 1:
        parts.append(named[0] + kind)
    elif named:
        shown = ", ".join(named[:MAX_LAYERS]) + (f" and {len(named) - MAX_LAYERS} more" if len(named) > MAX_LAYERS else "")
        parts.append(f"{len(named)} layers{kind}, each launch's from the engine's layer order: {shown}")
    unnamed = int(g["trt_layer"].isna().sum())
    if unnamed:
        parts.append(f"{'' if not named else f'{unnamed} launches: '}one of {int(r['trt_layers'])} layers{kind} "
                     "that share this tactic (which one ran is not in the kernel name)")
    return "; ".join(parts)


def _links(g: pd.DataFrame, where) -> list:
    """Per candidate: the view's kernel-table rows of the launches that ran it (``where`` maps a
    row of rep.kernels to the view's row, -1 outside the window; None: the same rows) and the
    words that say what the table then shows."""
    out = []
    for r in g.to_dict("records"):
        rows = r.get("kernel_rows") or []
        if where is not None:
            rows = [int(where[i]) for i in rows if 0 <= i < len(where) and where[i] >= 0]
        bench = r.get("benchmark_launches")
        who = "the winner" if r.get("winner") else "a candidate"
        label = (f"that ran {r['config']} ({who} of {r['kernel']}"
                 + ("" if bench is None or bench is pd.NA else f"; {int(bench)} of them the tuner's own") + ")")
        out.append({"launch_rows": rows[:MAX_LINKED], "launch_label": label} if rows else
                   {"launch_rows": None, "launch_label": None})
    return out


# The kernels columns tuning_kernels reads.
_READ = {"name", "producer", "decoded", "source_ops", "kernel_source", "config", "num_warps", "num_stages", "spills",
         "config_source", "trt_layers", "trt_layer", "trt_layer_type"}


def _differs(a: pd.Series, b: pd.Series):
    """``a != b``, compared once per distinct pair of objects where both are object columns (a
    million launches hold a few pairs of producer and backend)."""
    if a.dtype != object or b.dtype != object or len(a) < 1024:
        return a != b
    codes, first = distinct_rows([identities(a.to_numpy()), identities(b.to_numpy())])
    pairs = a.iloc[first].reset_index(drop=True) != b.iloc[first].reset_index(drop=True)
    return pd.Series(pairs.to_numpy()[codes], index=a.index)


def tuning_kernels(rep) -> dict:
    """``tuning_payload``'s ``"kernels"``: per kernel name its producer and the knob sets its
    launches ran with, over the whole report (whichever window the view shows), JSON-ready, so
    that the view computes it once per report.

    >>> tuning_kernels(ks.load("tuning/triton_tuning.ksreport.json.gz"))["matmul_kernel"]["producer"]
    'Triton'
    """
    k = rep.kernels
    kernels = {}
    if len(k) and "producer" in k.columns:
        # Only kernels whose producer says something the backend column does not, or with knobs.
        has = k["config"].notna() | k["num_warps"].notna() | k["config_source"].notna() | k["decoded"].notna() | \
            _differs(k["producer"], k["backend"])
        if "trt_layers" in k.columns:
            has = has | (k["trt_layers"] > 0).fillna(False)
        # Only the columns read below, of the rows kept (a launch row has ~60 columns).
        sub = k[[c for c in k.columns if c in _READ]][has]
        for name, g in sub.groupby("name", sort=False):
            knobs = (g.assign(launches=1).groupby(["config", "num_warps", "num_stages", "spills", "config_source"],
                                                  dropna=False, sort=False)["launches"].sum()
                     .reset_index().sort_values("launches", ascending=False, kind="stable"))
            kernels[str(name)] = {
                "producer": g["producer"].iloc[0], "decoded": g["decoded"].dropna().iloc[0] if g["decoded"].notna().any() else None,
                "source_ops": g["source_ops"].dropna().iloc[0] if g["source_ops"].notna().any() else None,
                "kernel_source": g["kernel_source"].dropna().iloc[0] if g["kernel_source"].notna().any() else None,
                "knobs": _records(knobs.head(MAX_KNOBS), [c for c, _, _ in KNOB_COLUMNS]),
                "knob_sets": int(len(knobs)),
            }
            layer = _layer_text(g)
            if layer:       # more (label, text) rows of the kernel's facts
                kernels[str(name)]["facts"] = [["TensorRT layer", layer]]
    return jsonable(kernels)


def tuning_payload(rep, where=None, kernels: dict | None = None) -> dict:
    """``{"kernels": {name: {producer, decoded, knobs}}, "tunings": [...], "columns": ...}`` for the
    view: per kernel name its producer and the knob sets its launches ran with; per tuning its
    kernel, tuner, shape key, candidates (at most :data:`MAX_ROWS`, fastest first) and counts;
    each candidate's ``launch_rows`` (the view's kernel-table rows that ran it; ``where``: the
    view's row of each rep.kernels row when it shows a window) and ``launch_label``.
    ``kernels``: :func:`tuning_kernels` of ``rep``, when already computed.

    >>> tuning_payload(ks.load("tests/data/tuning/triton_tuning.ksreport.json.gz"))["tunings"][0]["kernel"]  # doctest: +SKIP
    'matmul_kernel'
    """
    kernels = tuning_kernels(rep) if kernels is None else kernels
    tunings = []
    at = rep.autotune
    for t, g in (at.groupby("tuning", sort=True) if len(at) else []):
        first = g.iloc[0]
        tunings.append({
            "tuning": int(t), "kernel": str(first["kernel"]), "producer": first["producer"], "tuner": first["tuner"],
            "shape_key": first["shape_key"], "op": first["op"], "cached": bool(g["cached"].all()),
            # Inductor's choices are named after its templates, not the kernel that ran: the view
            # shows them beside the kernels whose CPU op is the one they chose for.
            "match_op": f"aten::{first['op']}" if first["tuner"] == "inductor max-autotune" and first["op"] else None,
            # ... and beside the compiled kernel that runs its winner (capture/tuning/inductor.py ties them).
            "match_kernels": sorted({n for c in (g["compiled_kernel"] if "compiled_kernel" in g.columns else [])
                                     if isinstance(c, str) for n in c.split(", ")}),
            "candidates": int(len(g)), "shown": int(min(len(g), MAX_ROWS)),
            "rows": [dict(r, **link) for r, link in zip(
                _records(g.head(MAX_ROWS), [c for c, _, _ in CANDIDATE_COLUMNS] + ["winner", "choice"]),
                _links(g.head(MAX_ROWS), where))],
        })
    return jsonable({"kernels": kernels, "tunings": tunings,
                     "columns": {"candidates": CANDIDATE_COLUMNS, "knobs": KNOB_COLUMNS},
                     "watched": (rep.meta.get("tuning") or {}).get("watched") if isinstance(rep.meta.get("tuning"), dict) else None})
