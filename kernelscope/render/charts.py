"""A report's charts as altair (Vega-Lite) objects, to restyle and save from Python.

    rep.chart("backends")                         # GPU time per backend
    rep.chart("kernels", top=15)                  # the costliest kernels
    rep.chart("timeline")                         # launches and copies per stream, idle gaps
    rep.chart("occupancy", kernel="nvjet_...")    # occupancy as a launch parameter varies
    rep.chart("steps")                            # a training loop's steps, TensorBoard's breakdown
    ks.compare(a, b).chart()                      # per-kernel time change
    rep.chart("backends").properties(width=600).save("backends.svg")   # PNG/SVG need vl-convert

altair is imported when a chart is asked for. In a notebook the charts show through the
Vega-Lite 5 MIME type, which JupyterLab 4, Notebook 7 and VS Code draw with the Vega they bundle,
offline (see :func:`_use_offline_renderer`). The report view in the browser draws its own charts
(``js/src/view/charts.js``); these are for Python users.
"""
from __future__ import annotations

import sys

import pandas as pd

from kernelscope.jsonable import num
from kernelscope.panels import report_panels

KINDS = ("backends", "kernels", "timeline", "occupancy", "steps", "memory")
# The Vega-Lite JupyterLab 4 renders (its vega5-extension knows v3 to v5, not altair 6's v6).
VEGALITE5_MIME = "application/vnd.vegalite.v5+json"
VEGALITE5_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
RENDERER = "kernelscope"
# A timeline draws at most this many marks per lane: launches closer than the chart's resolution
# are drawn as one segment (Vega-Lite inlines every row in the notebook).
TIMELINE_MARKS_PER_LANE = 1500
_MARK = {"kernelscope": True}   # usermeta of our charts, how the renderer tells them apart


def report_chart(rep, kind: str, *, kernel: str | None = None, top: int = 20):
    """One chart of a report (``kind`` one of :data:`KINDS`) as an altair chart.

    >>> report_chart(ks.load("mlp_train.pt.trace.json.gz"), "backends")
    alt.Chart(...)
    >>> report_chart(ks.load("training/lm_steps.pt.trace.json.gz"), "memory")
    alt.LayerChart(...)
    """
    if kind not in KINDS:
        raise ValueError(f"unknown chart {kind!r}: choose one of {', '.join(KINDS)}")
    if kernel is not None and kind != "occupancy":
        raise ValueError("kernel= is for the occupancy chart")
    alt = _altair()
    chart = {"backends": _backends, "kernels": _kernels, "timeline": _timeline,  # type: ignore[dict-item]
             "occupancy": _occupancy, "steps": _steps, "memory": _memory}[kind](alt, rep, kernel=kernel, top=top)
    return chart.properties(usermeta=_MARK)


def comparison_chart(cmp, *, top: int = 20):
    """Per-kernel change in GPU time between two runs (a :class:`~kernelscope.analysis.diff.Comparison`),
    the largest changes first, coloured by what changed; the whisker is the change's 95% interval
    where the runs were repeated.

    >>> comparison_chart(ks.compare(before, after))
    alt.LayerChart(...)
    """
    from kernelscope.render.compare import FASTER, NEUTRAL, SLOWER
    alt = _altair()
    lb, la = (str(x) for x in cmp.labels)
    k = cmp.kernels.copy()
    k = k.reindex(k["change_us"].abs().sort_values(ascending=False, na_position="last").index).head(top)
    df = pd.DataFrame({
        "kernel": k["short_name"].astype(str), "backend": k["backend"].astype(str),
        "status": k["status"].astype(str),
        "change_ms": k["change_us"].astype(float) / 1e3,
        f"{lb} (ms)": k["total_before_us"].astype(float) / 1e3, f"{la} (ms)": k["total_after_us"].astype(float) / 1e3,
        "lo": k["ci_low_us"].astype(float) / 1e3, "hi": k["ci_high_us"].astype(float) / 1e3,
    })
    palette = {"slower": SLOWER, "faster": FASTER, "new": SLOWER, "gone": FASTER,
               "within noise": NEUTRAL, "inconclusive": "#c7c7c7", "same": NEUTRAL}
    statuses = [s for s in palette if s in set(df["status"])] or list(palette)
    colors = [palette[s] for s in statuses]
    order = df["kernel"].tolist()
    y = alt.Y("kernel:N", sort=order, title=None, axis=alt.Axis(labelLimit=260))
    bars = alt.Chart(df).mark_bar().encode(
        x=alt.X("change_ms:Q", title=f"change in GPU time per run, {lb} → {la} (ms, CUPTI)"), y=y,
        color=alt.Color("status:N", scale=alt.Scale(domain=statuses, range=colors), title="change"),
        tooltip=["kernel", "backend", "status", alt.Tooltip(f"{lb} (ms):Q", format=".4f"),
                 alt.Tooltip(f"{la} (ms):Q", format=".4f"), alt.Tooltip("change_ms:Q", format="+.4f"),
                 alt.Tooltip("lo:Q", format="+.4f", title="95% interval from (ms)"),
                 alt.Tooltip("hi:Q", format="+.4f", title="95% interval to (ms)")])
    noise = alt.Chart(df).transform_filter("isValid(datum.lo)").mark_rule(color="#888").encode(
        x="lo:Q", x2="hi:Q", y=y)
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#888", strokeDash=[3, 3]).encode(x="x:Q")
    title = f"Largest per-kernel changes ({min(top, len(cmp.kernels))} of {len(cmp.kernels)} kernels)"
    return alt.layer(bars, noise, zero).properties(title=title, width=460, usermeta=_MARK)


# -- the charts --------------------------------------------------------------------------------
def colors(values) -> tuple[list, list]:
    """(domain, range) of a colour scale for ``values``: each backend, copy direction and idle
    cause in the colour the report view draws it with (the one vocabulary,
    :func:`kernelscope.view.vocabulary.vocabulary`), so a chart and the widget agree. Values the
    vocabulary has no colour for get the ``other`` backend's grey.

    >>> colors(["cuBLAS", "HtoD", "idle: host", "ATen"])
    (['ATen', 'HtoD', 'cuBLAS', 'idle: host'], ['#edc948', '#d37295', '#4e79a7', '#b22222'])
    """
    from kernelscope.panels.kernels import palette
    table = palette()
    domain = sorted({str(v) for v in values})
    return domain, [table.get(v, table["other"]) for v in domain]


def _scale(alt, values):
    domain, range_ = colors(values)
    return alt.Scale(domain=domain, range=range_)


def _backends(alt, rep, **_):
    b = pd.DataFrame(report_panels(rep).backends,
                     columns=["device", "backend", "launches", "gpu_time_us", "share"]).astype({"gpu_time_us": float})
    b = b[b["gpu_time_us"].fillna(0) > 0].copy()
    b["gpu_time_ms"] = b["gpu_time_us"] / 1e3
    several = b["device"].nunique() > 1
    chart = alt.Chart(b).mark_bar().encode(
        x=alt.X("gpu_time_ms:Q", title="GPU time (ms, CUPTI)"),
        y=alt.Y("backend:N", sort="-x", title=None),
        color=alt.Color("backend:N", legend=None, scale=_scale(alt, b["backend"])),
        tooltip=["device", "backend", "launches", alt.Tooltip("gpu_time_ms:Q", format=".3f", title="GPU time (ms)"),
                 alt.Tooltip("share:Q", format=".1%")])
    if several:
        chart = chart.encode(row=alt.Row("device:N", title=None))
    return chart.properties(title="GPU time by backend", width=420)


def _kernels(alt, rep, *, top, **_):
    table = report_panels(rep).kernel_table
    s = table.top(top)
    df = pd.DataFrame({
        "kernel": s["short_name"].astype(str), "name": s["name"].astype(str), "backend": s["backend"].astype(str),
        "launches": s["launches"].astype(int), "total_ms": s["total_us"] / 1e3, "mean_us": s["mean_us"],
        "share": s["share"],
        "occupancy": [num(table.facts.get(n, {}).get("theoretical_occupancy")) for n in s["name"]],
    })
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("total_ms:Q", title="total GPU time (ms, CUPTI)"),
        y=alt.Y("kernel:N", sort="-x", title=None, axis=alt.Axis(labelLimit=260)),
        color=alt.Color("backend:N", scale=_scale(alt, df["backend"])),
        tooltip=["name", "backend", "launches", alt.Tooltip("total_ms:Q", format=".3f"),
                 alt.Tooltip("mean_us:Q", format=".1f", title="mean (us)"), alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("occupancy:Q", format=".0%", title="theoretical occupancy (computed)")],
    ).properties(title=f"Costliest kernels ({len(df)} of {table.distinct})", width=460)


def _steps(alt, rep, **_):
    """Each step's time as stacked bars of TensorBoard's breakdown (panels/steps.py)."""
    st = report_panels(rep).steps
    if not st:
        raise ValueError("the report has no steps (no ProfilerStep#N ranges: record with a torch.profiler "
                         "schedule and prof.step(), or %%kernelprofile --steps N)")
    labels = [q["label"] for q in st["parts"]]
    df = pd.DataFrame([{"step": r["index"], "name": r["step"], "part": q["label"], "order": i,
                        "ms": (r[q["key"] + "_us"] or 0.0) / 1e3, "step_ms": r["step_us"] / 1e3, "kind": r["kind"]}
                       for r in st["rows"] for i, q in enumerate(st["parts"])])
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("step:O", title="step (ProfilerStep#N)"), y=alt.Y("sum(ms):Q", title="step time (ms)"),
        color=alt.Color("part:N", sort=labels, scale=alt.Scale(domain=labels, range=[q["colour"] for q in st["parts"]])),
        order=alt.Order("order:Q"),
        tooltip=["name", "part", alt.Tooltip("ms:Q", format=".3f", title="ms"),
                 alt.Tooltip("step_ms:Q", format=".3f", title="step (ms)"), "kind"],
    ).properties(title=f"Steps: {st['lines'][0]}"[:120], width=max(300, min(900, 14 * len(st["rows"]))))


def _timeline(alt, rep, **_):
    k, c = rep.kernels, rep.copies
    parts = []
    if len(k):
        parts.append(pd.DataFrame({"lane": k["device"].astype(str) + " s" + k["stream"].astype(str),
                                   "start_us": k["start_us"], "end_us": k["start_us"] + k["duration_us"],
                                   "what": k["backend"].astype(str), "name": k["short_name"].astype(str)}))
    if len(c):
        kind = c["copy_kind"] if "copy_kind" in c.columns else c["kind"]
        # the device label analysis gave the copies (analysis/devices.py), as for the kernels
        parts.append(pd.DataFrame({"lane": c["device"].astype(str) + " s" + c["stream"].astype(str),
                                   "start_us": c["start_us"], "end_us": c["start_us"] + c["duration_us"],
                                   "what": kind.fillna("copy").astype(str), "name": c["name"].astype(str)}))
    gaps = _safe_gaps(rep)
    if len(gaps):
        parts.append(pd.DataFrame({"lane": gaps["device"].astype(str) + " idle", "start_us": gaps["start_us"],
                                   "end_us": gaps["start_us"] + gaps["duration_us"],
                                   "what": "idle: " + gaps["cause"].astype(str), "name": "GPU idle"}))
    if not parts:
        df = pd.DataFrame({"lane": [], "start_ms": [], "end_ms": [], "what": [], "name": [], "launches": []})
    else:
        df = _merge_close(pd.concat(parts, ignore_index=True))
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("start_ms:Q", title="time (ms from the first activity, CUPTI)"), x2="end_ms:Q",
        y=alt.Y("lane:N", title=None),
        color=alt.Color("what:N", title="backend / copy / idle cause", scale=_scale(alt, df["what"])),
        tooltip=["lane", "name", "what", "launches", alt.Tooltip("start_ms:Q", format=".4f"),
                 alt.Tooltip("end_ms:Q", format=".4f")],
    ).properties(title="Timeline", width=640)


def _memory(alt, rep, **_):
    """Allocated and reserved over time (the memory panel's curve, the timeline lane's), with the
    peak marked; an empty chart that says why where the trace has no allocator events."""
    m = report_panels(rep).memory
    if not m:
        return alt.Chart(pd.DataFrame({"time_ms": [], "MiB": [], "what": []})).mark_line().properties(
            title="Memory: no allocator events (record with torch.profiler's profile_memory=True)", width=640)
    s = m["series"]
    t = [x / 1e3 for x in s["time_us"]]
    df = pd.concat([pd.DataFrame({"time_ms": t, "MiB": [b / 2**20 for b in s[k]], "what": m["lane"][k]})
                    for k in ("reserved", "allocated")], ignore_index=True)
    line = alt.Chart(df).mark_line(interpolate="step-after").encode(
        x=alt.X("time_ms:Q", title="time (ms from the recording's start)"),
        y=alt.Y("MiB:Q", title=f"GPU memory on {m['device']} (MiB)"),
        color=alt.Color("what:N", title=None),
        tooltip=["what", alt.Tooltip("time_ms:Q", format=".3f"), alt.Tooltip("MiB:Q", format=",.1f")])
    peak = alt.Chart(pd.DataFrame({"time_ms": [m["peak_us"] / 1e3], "MiB": [m["peak_bytes"] / 2**20],
                                   "label": [m["headline"]]}))
    dot = peak.mark_point(color="black", size=60).encode(x="time_ms:Q", y="MiB:Q", tooltip=["label"])
    return (line + dot).properties(title=f"Memory: {m['headline']}", width=640)


def _merge_close(df: pd.DataFrame) -> pd.DataFrame:
    """Items of one lane and kind closer than the chart's resolution become one segment."""
    t0 = float(df["start_us"].min())
    span = max(float(df["end_us"].max()) - t0, 1e-9)
    res = span / TIMELINE_MARKS_PER_LANE
    df = df.sort_values(["lane", "what", "start_us"], kind="stable").reset_index(drop=True)
    reach = df.groupby(["lane", "what"])["end_us"].cummax().shift(1)
    new = (df["lane"] != df["lane"].shift(1)) | (df["what"] != df["what"].shift(1)) | (df["start_us"] - reach > res)
    seg = new.cumsum()
    g = df.groupby(seg, sort=False)
    out = pd.DataFrame({"lane": g["lane"].first(), "what": g["what"].first(), "start_us": g["start_us"].min(),
                        "end_us": g["end_us"].max(), "launches": g.size(), "name": g["name"].first()})
    out.loc[out["launches"] > 1, "name"] = out["launches"].astype(str) + " items (" + out["name"] + ", ...)"
    out["start_ms"] = (out["start_us"] - t0) / 1e3
    out["end_ms"] = (out["end_us"] - t0) / 1e3
    return out.drop(columns=["start_us", "end_us"]).reset_index(drop=True)


def _occupancy(alt, rep, *, kernel, **_):
    from kernelscope.panels.shapes import shape_details
    k = rep.kernels.reset_index(drop=True)
    if not len(k):
        raise ValueError("the report has no kernels")
    if kernel is None:
        kernel = report_panels(rep).kernel_table.summary["name"].iloc[0]     # the costliest
    rows = k.index[(k["name"] == kernel) | (k["short_name"] == kernel)]
    if not len(rows):
        rows = k.index[k["name"].astype(str).str.contains(kernel, regex=False)]
    if not len(rows):
        raise ValueError(f"no kernel named {kernel!r} in this report")
    row = int(rows[0])
    entry = shape_details(rep, int(k.at[row, "shape"]))
    name = str(k.at[row, "short_name"])
    if "curves" not in entry:
        raise ValueError(f"{name}: occupancy is unknown (launch shape or device properties not recorded)")
    panels = []
    for key, field, title, x in (("block", "threads per block", "Varying block size", entry["threads"]),
                                 ("registers", "registers per thread", "Varying register count", entry["registers"]),
                                 ("smem", "shared memory per block (bytes)", "Varying shared memory", entry["smem"])):
        pts = pd.DataFrame([p for p in entry["curves"][key] if p[1] is not None], columns=["x", "occupancy"])
        line = alt.Chart(pts).mark_line(interpolate="step-after").encode(
            x=alt.X("x:Q", title=field), y=alt.Y("occupancy:Q", axis=alt.Axis(format="%"),
                                                 scale=alt.Scale(domain=[0, 1]), title="theoretical occupancy"),
            tooltip=[alt.Tooltip("x:Q", title=field), alt.Tooltip("occupancy:Q", format=".1%")])
        here = alt.Chart(pd.DataFrame({"x": [x], "occupancy": [entry["occupancy"]]})).mark_point(
            filled=True, size=80, color="black").encode(x="x:Q", y="occupancy:Q",
                                                           tooltip=[alt.Tooltip("occupancy:Q", format=".1%", title="this launch")])
        panels.append(alt.layer(line, here).properties(title=title, width=200, height=140))
    lim = ", ".join(entry.get("limiters") or []) or "-"
    return alt.hconcat(*panels).properties(
        title=f"{name}: {entry['occupancy']:.0%} theoretical occupancy (computed, CUDA occupancy calculator; "
              f"limited by {lim})")


# -- display -----------------------------------------------------------------------------------
def _altair():
    try:
        import altair as alt
    except ImportError as e:   # a dependency; say so plainly if an install dropped it
        raise ImportError("kernelscope's charts need altair (pip install altair)") from e
    _use_offline_renderer(alt)
    return alt


def _use_offline_renderer(alt):
    """Altair's default renderer writes HTML that fetches Vega from a CDN (nothing shows offline),
    and altair 6's own MIME renderer writes Vega-Lite 6, which JupyterLab 4 does not draw. While
    the user has not chosen a renderer, ours is enabled: it shows kernelscope's charts (marked
    in ``usermeta``) as the Vega-Lite 5 MIME type and hands every other chart to altair's default,
    so they display as before. A renderer the user enabled wins, for our charts too."""
    if alt.renderers.active not in ("default", RENDERER):
        return
    if RENDERER not in alt.renderers.names():
        default = alt.renderers.get()      # altair's own default: the active one here

        def render(spec, **metadata):
            if (spec.get("usermeta") or {}).get("kernelscope") and "google.colab" not in sys.modules:
                return {VEGALITE5_MIME: {**spec, "$schema": VEGALITE5_SCHEMA}, "text/plain": "<kernelscope chart>"}, {}
            return default(spec, **metadata)

        alt.renderers.register(RENDERER, render)
    if alt.renderers.active != RENDERER:
        alt.renderers.enable(RENDERER)


def _safe_gaps(rep) -> pd.DataFrame:
    # The timeline panel is None where the analysis failed: a chart without the idle lane then.
    tl = report_panels(rep).timeline
    return tl.gaps if tl is not None else pd.DataFrame()

