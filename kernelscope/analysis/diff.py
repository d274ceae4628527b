"""Comparing two runs: what got faster, what got slower, what is new.

Kernels are matched by name, then the unmatched ones by (short name, backend), so that a kernel
whose template arguments changed is still compared with itself. Times are per run: a report made
with ``%%kernelprofile --repeat N`` holds N runs, and its totals are divided by N. Run-to-run noise
comes from the repeats (``report.meta["repeats"]``): a difference is called a change only when the
ranges of the per-repeat totals do not overlap (or, with repeats on one side only, when it exceeds
that side's range). Without repeats one run cannot separate noise from change, and we say so.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from html import escape

import numpy as np
import pandas as pd

from ..render.text import fmt_us

KERNEL_COLUMNS = ["name", "short_name", "backend", "match", "names_before", "names_after",
                  "launches_before", "launches_after", "total_before_us", "total_after_us",
                  "change_us", "ratio", "noise_us", "significant", "status"]
OVERALL_METRICS = {
    "gpu_time_us": "GPU kernel time", "copy_time_us": "copy/memset time",
    "busy_us": "GPU busy (union)", "active_us": "GPU active window", "wall_us": "wall time",
    "launches": "kernel launches",
}
NO_REPEATS_NOTE = ("One run on each side cannot separate noise from change: differences of a few "
                   "percent may be noise. Profile with %%kernelprofile --repeat N to measure it.")


@dataclass
class Comparison:
    """Two runs side by side: per-kernel, per-backend and overall changes (per run).

    >>> c = ks.compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))  # doctest: +SKIP
    >>> c.kernels[["short_name", "total_before_us", "total_after_us", "ratio"]]                      # doctest: +SKIP
    """

    before: object
    after: object
    kernels: pd.DataFrame
    backends: pd.DataFrame
    overall: pd.DataFrame
    labels: tuple = ("before", "after")
    repeats: tuple = (1, 1)
    noise_note: str = ""
    notes: list = field(default_factory=list)

    @property
    def new(self) -> pd.DataFrame:
        """Kernels only in the second run.

        >>> c.new["short_name"].tolist()          # doctest: +SKIP
        """
        return self.kernels[self.kernels["status"] == "new"]

    @property
    def gone(self) -> pd.DataFrame:
        """Kernels only in the first run.

        >>> c.gone["short_name"].tolist()         # doctest: +SKIP
        """
        return self.kernels[self.kernels["status"] == "gone"]

    def metric(self, name: str) -> dict:
        """One overall row (``gpu_time_us``, ``wall_us``, ...) as a dict.

        >>> c.metric("wall_us")["ratio"]          # doctest: +SKIP
        """
        row = self.overall[self.overall["metric"] == name]
        return row.iloc[0].to_dict() if len(row) else {}

    def to_dict(self) -> dict:
        """Plain JSON-able data: labels, repeats, notes and the three tables as records.

        >>> json.dumps(c.to_dict())               # doctest: +SKIP
        """
        from .findings import _plain

        def recs(df):
            return [_plain({k: (None if _isna(v) else v) for k, v in r.items()})
                    for r in df.to_dict("records")]

        return {"labels": list(self.labels), "repeats": list(self.repeats),
                "noise_note": self.noise_note, "notes": list(self.notes),
                "overall": recs(self.overall), "backends": recs(self.backends),
                "kernels": recs(self.kernels)}

    def chart(self, top: int = 20):
        """The ``top`` largest per-kernel changes as an altair chart (see :mod:`kernelscope.render.charts`).

        >>> ks.compare(before, after).chart().save("change.svg")   # doctest: +SKIP
        """
        from ..render.charts import comparison_chart
        return comparison_chart(self, top=top)

    def __repr__(self) -> str:
        return comparison_text(self)

    def _repr_html_(self) -> str:
        return comparison_html(self)


def compare(before, after, *, labels=("before", "after")) -> Comparison:
    """Compare two runs (Reports or paths ``ks.load`` opens): per-kernel time change, new and
    gone kernels, per-backend totals, overall GPU and wall time; all per run.

    >>> c = compare("launch_bound.pt.trace.json.gz", "graphs.pt.trace.json.gz")   # doctest: +SKIP
    >>> c.metric("wall_us")["ratio"] < 1                                           # doctest: +SKIP
    True
    """
    before, after = _report(before), _report(after)
    nb, na = _n_repeats(before), _n_repeats(after)
    rb, ra = _repeat_lists(before), _repeat_lists(after)
    kernels = _match(_per_name(before, nb), _per_name(after, na), rb, ra)
    notes = []
    if rb is None and ra is None:
        noise_note = NO_REPEATS_NOTE
    else:
        sides = [f"{lab}: {n} repeats" for lab, n, r in zip(labels, (nb, na), (rb, ra)) if r is not None]
        noise_note = ("Noise from the spread of the repeats (" + ", ".join(sides) + "): a change is "
                      "called only when the per-repeat ranges do not overlap.")
        if rb is None or ra is None:
            notes.append("Only one side has repeats; its range alone stands for the noise.")
    return Comparison(before=before, after=after, kernels=kernels,
                      backends=_backends(before, after, nb, na), overall=_overall(before, after, nb, na, rb, ra),
                      labels=tuple(labels), repeats=(nb, na), noise_note=noise_note, notes=notes)


# -- building the tables -------------------------------------------------------------------------

def _report(x):
    if isinstance(x, (str, os.PathLike)):
        from ..loading import load
        return load(x)
    if not hasattr(x, "kernels") or not hasattr(x, "meta"):
        raise TypeError(f"compare() takes Reports or trace/report paths, not {type(x).__name__}")
    return x


def _n_repeats(rep) -> int:
    r = rep.meta.get("repeats")
    n = r.get("n") if isinstance(r, dict) else None
    return int(n) if isinstance(n, (int, float)) and n >= 1 else 1


def _repeat_lists(rep):
    """``{kernel name: np.array(per-repeat totals)}`` when the run has 2+ repeats, else None."""
    r = rep.meta.get("repeats")
    if not isinstance(r, dict) or _n_repeats(rep) < 2:
        return None
    per = r.get("per_kernel_total_us")
    if not isinstance(per, dict) or not per:
        return None
    return {str(k): np.asarray(v, dtype=float) for k, v in per.items() if isinstance(v, (list, tuple))}


def _per_name(rep, n) -> pd.DataFrame:
    k = rep.kernels
    if not len(k):
        return pd.DataFrame(columns=["name", "short_name", "backend", "launches", "total_us"])
    g = k.groupby("name", sort=False)
    out = pd.DataFrame({
        "short_name": g["short_name"].first() if "short_name" in k.columns else g["name"].first(),
        "backend": g["backend"].first() if "backend" in k.columns else "other",
        "launches": g.size() / n, "total_us": g["duration_us"].sum() / n,
    }).reset_index()
    return out


def _match(b: pd.DataFrame, a: pd.DataFrame, rb, ra) -> pd.DataFrame:
    rows = []
    exact = set(b["name"]) & set(a["name"])
    bi, ai = b.set_index("name"), a.set_index("name")
    for name in exact:
        x, y = bi.loc[name], ai.loc[name]
        rows.append(_row(name, y["short_name"], y["backend"], "name", [name], [name],
                         x["launches"], y["launches"], x["total_us"], y["total_us"], rb, ra))
    rest_b = b[~b["name"].isin(exact)]
    rest_a = a[~a["name"].isin(exact)]
    gb = {key: g for key, g in rest_b.groupby(["short_name", "backend"], sort=False)}
    ga = {key: g for key, g in rest_a.groupby(["short_name", "backend"], sort=False)}
    for key in gb.keys() | ga.keys():
        x, y = gb.get(key), ga.get(key)
        if x is not None and y is not None:
            match, name = "short_name+backend", key[0]
        elif y is not None:
            match, name = "new", (y["name"].iloc[0] if len(y) == 1 else key[0])
        else:
            match, name = "gone", (x["name"].iloc[0] if len(x) == 1 else key[0])
        rows.append(_row(name, key[0], key[1], match,
                         list(x["name"]) if x is not None else [], list(y["name"]) if y is not None else [],
                         x["launches"].sum() if x is not None else 0.0,
                         y["launches"].sum() if y is not None else 0.0,
                         x["total_us"].sum() if x is not None else 0.0,
                         y["total_us"].sum() if y is not None else 0.0, rb, ra))
    out = pd.DataFrame(rows, columns=KERNEL_COLUMNS)
    if len(out):
        out = out.iloc[np.argsort(-out["change_us"].abs().to_numpy(), kind="stable")].reset_index(drop=True)
    out["significant"] = out["significant"].astype("boolean")
    return out


def _row(name, short, backend, match, names_b, names_a, lb, la, tb, ta, rb, ra):
    change = ta - tb
    ratio = ta / tb if tb > 0 else (np.inf if ta > 0 else np.nan)
    sb, sa = _summed(rb, names_b), _summed(ra, names_a)
    noise, significant = _noise(tb, ta, sb, sa)
    if match in ("new", "gone"):
        status, significant = match, True
    elif significant is None:
        status = "slower" if change > 0 else "faster" if change < 0 else "same"
    elif significant:
        status = "slower" if change > 0 else "faster"
    else:
        status = "within noise"
    return {"name": name, "short_name": short, "backend": backend, "match": match,
            "names_before": names_b, "names_after": names_a, "launches_before": float(lb),
            "launches_after": float(la), "total_before_us": float(tb), "total_after_us": float(ta),
            "change_us": float(change), "ratio": float(ratio), "noise_us": noise,
            "significant": significant if significant is None else bool(significant), "status": status}


def _summed(lists, names):
    """Per-repeat totals of a group of kernel names (elementwise sum), or None if unknown."""
    if lists is None or not names:
        return None
    arrs = [lists.get(n) for n in names]
    if any(x is None for x in arrs) or len({len(x) for x in arrs}) != 1:
        return None
    return np.sum(arrs, axis=0)


def _noise(tb, ta, sb, sa):
    """(noise_us, significant) from per-repeat totals of each side (None where unknown)."""
    if sb is None and sa is None:
        return np.nan, None
    spreads = [float(np.ptp(x)) for x in (sb, sa) if x is not None and len(x)]
    noise = max(spreads) if spreads else np.nan
    if sb is not None and sa is not None:
        # Disjoint ranges: every repeat of one run beat every repeat of the other.
        return noise, bool(sa.min() > sb.max() or sa.max() < sb.min())
    return noise, bool(abs(ta - tb) > noise)


def _backends(before, after, nb, na) -> pd.DataFrame:
    from .backends import _gpu_rows

    def gpu(rep, n):
        # Kernel and copy rows only: the full breakdown's CPU half costs seconds on big traces.
        g = _gpu_rows(rep).groupby("backend", sort=False)["duration_us"]
        return pd.DataFrame({"launches": g.size() / n, "gpu_time_us": g.sum() / n})

    b = gpu(before, nb).rename(columns={"launches": "launches_before", "gpu_time_us": "total_before_us"})
    a = gpu(after, na).rename(columns={"launches": "launches_after", "gpu_time_us": "total_after_us"})
    out = b.join(a, how="outer").fillna(0.0).rename_axis("backend").reset_index()
    out["change_us"] = out["total_after_us"] - out["total_before_us"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = out["total_after_us"] / out["total_before_us"]
    out = out.iloc[np.argsort(-out["change_us"].abs().to_numpy(), kind="stable")].reset_index(drop=True)
    return out[["backend", "launches_before", "launches_after", "total_before_us", "total_after_us",
                "change_us", "ratio"]]


def _overall(before, after, nb, na, rb, ra) -> pd.DataFrame:
    def values(rep, n):
        tl = rep.timeline
        d = tl.busy[tl.busy["stream"].isna()]
        wall = rep.wall_time_us
        ev = (rep.meta.get("repeats") or {}).get("cuda_event_us") if n > 1 else None
        ev = [x for x in ev if isinstance(x, (int, float))] if isinstance(ev, list) else []
        return {
            "gpu_time_us": rep.gpu_time_us / n,
            "copy_time_us": float(rep.copies["duration_us"].sum()) / n,
            "busy_us": float(d["busy_us"].sum()) / n,
            "active_us": float(d["window_us"].sum()) / n,
            # With per-repeat CUDA events, their mean is the wall time of one run.
            "wall_us": float(np.mean(ev)) if ev else (wall / n if wall is not None else np.nan),
            "launches": len(rep.kernels) / n,
        }, (np.asarray(ev, float) if len(ev) > 1 else None)

    vb, wb = values(before, nb)
    va, wa = values(after, na)

    def gpu_lists(lists):
        if lists is None:
            return None
        arrs = [x for x in lists.values()]
        return np.sum(arrs, axis=0) if arrs and len({len(x) for x in arrs}) == 1 else None

    spread = {"gpu_time_us": (gpu_lists(rb), gpu_lists(ra)), "wall_us": (wb, wa)}
    rows = []
    for m, label in OVERALL_METRICS.items():
        x, y = vb[m], va[m]
        sb, sa = spread.get(m, (None, None))
        noise, sig = _noise(x, y, sb, sa)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = y / x if x else np.nan
        rows.append({"metric": m, "label": label, "before": x, "after": y, "change": y - x,
                     "ratio": ratio, "noise": noise, "significant": sig})
    out = pd.DataFrame(rows)
    out["significant"] = out["significant"].astype("boolean")
    return out


def _isna(v):
    try:
        return v is None or v is pd.NA or (isinstance(v, float) and v != v)
    except (TypeError, ValueError):
        return False


# -- views ---------------------------------------------------------------------------------------

def _fmt_change(us) -> str:
    return ("+" if us > 0 else "-" if us < 0 else "±") + fmt_us(abs(us))


def _fmt_ratio(r) -> str:
    if r is None or r != r:
        return "-"
    if r == np.inf:
        return "new"
    return f"x{r:.2f}"


def _kernel_ratio(r) -> str:
    # New and gone kernels have no meaningful ratio: their status says it.
    return "-" if r.status in ("new", "gone") else _fmt_ratio(r.ratio)


def _fmt_metric(m, v) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.0f}" if m == "launches" else fmt_us(v)


def _fmt_change_metric(m, v) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:+.0f}" if m == "launches" else _fmt_change(v)


def _clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def comparison_text(c: Comparison, top: int = 15) -> str:
    """The comparison as plain text (``text/plain``).

    >>> print(comparison_text(c))                           # doctest: +SKIP
    """
    lb, la = c.labels
    lines = [f"kernelscope comparison: {lb} -> {la}" + _runs_note(c)]
    for r in c.overall.itertuples():
        noise = ""
        if r.significant is not pd.NA and r.significant is not None:
            noise = f"  (noise {_fmt_metric(r.metric, r.noise)}{'' if r.significant else ': within noise'})"
        lines.append(f"  {r.label:<18} {_fmt_metric(r.metric, r.before):>10} -> "
                     f"{_fmt_metric(r.metric, r.after):>10}   {_fmt_change_metric(r.metric, r.change):>11} "
                     f"{_fmt_ratio(r.ratio):>7}{noise}")
    lines.append(f"  noise: {c.noise_note}")
    for n in c.notes:
        lines.append(f"  note: {n}")
    k = c.kernels
    if len(k):
        lines.append("")
        lines.append(f"  {'kernel (largest change first)':<44} {'backend':<10} {'launches':>13} "
                     f"{lb:>10} {la:>10} {'change':>11} {'ratio':>7}  status")
        for r in k.head(top).itertuples():
            launches = f"{r.launches_before:g}->{r.launches_after:g}"
            lines.append(f"  {_clip(r.short_name, 44):<44} {_clip(r.backend, 10):<10} {launches:>13} "
                         f"{fmt_us(r.total_before_us):>10} {fmt_us(r.total_after_us):>10} "
                         f"{_fmt_change(r.change_us):>11} {_kernel_ratio(r):>7}  {r.status}")
        if len(k) > top:
            lines.append(f"  … and {len(k) - top} more (comparison.kernels has them all)")
        counts = k["status"].value_counts()
        lines.append("  " + ", ".join(f"{int(counts[s])} {s}" for s in
                                       ("slower", "faster", "within noise", "same", "new", "gone")
                                       if s in counts))
    if len(c.backends):
        lines.append("")
        lines.append(f"  {'backend':<12} {lb:>10} {la:>10} {'change':>11} {'ratio':>7}")
        for r in c.backends.itertuples():
            lines.append(f"  {_clip(r.backend, 12):<12} {fmt_us(r.total_before_us):>10} "
                         f"{fmt_us(r.total_after_us):>10} {_fmt_change(r.change_us):>11} {_fmt_ratio(r.ratio):>7}")
    return "\n".join(lines)


def _runs_note(c) -> str:
    nb, na = c.repeats
    return "" if nb == na == 1 else f" (per run: {nb} and {na} repeats)"


_SLOWER, _FASTER, _NEUTRAL = "#d62728", "#2ca02c", "#999"


def _bar(change, scale, status) -> str:
    """A diverging bar: faster grows left of the centre line (green), slower right (red)."""
    if not scale or change != change:
        return ""
    w = min(50.0, abs(change) / scale * 50.0)
    color = _NEUTRAL if status in ("within noise", "same") else _SLOWER if change > 0 else _FASTER
    left = 50.0 - w if change < 0 else 50.0
    return ("<div style='position:relative;width:160px;height:12px;background:transparent'>"
            "<div style='position:absolute;left:50%;top:0;bottom:0;border-left:1px solid #888'></div>"
            f"<div style='position:absolute;left:{left:.2f}%;width:{w:.2f}%;top:2px;height:8px;"
            f"background:{color}'></div></div>")


def comparison_html(c: Comparison, top: int = 50) -> str:
    """The comparison as self-contained HTML; every kernel name, backend and label is escaped.

    >>> "<script>" in comparison_html(c)                    # doctest: +SKIP
    False
    """
    lb, la = (escape(str(x)) for x in c.labels)
    td = "<td style='text-align:right;padding:1px 6px'>"
    head_rows = []
    for r in c.overall.itertuples():
        sig = ""
        if r.significant is not pd.NA and r.significant is not None:
            sig = (f" <span title='run-to-run noise'>(noise {escape(_fmt_metric(r.metric, r.noise))}"
                   f"{'' if r.significant else ', within noise'})</span>")
        head_rows.append(f"<tr><td>{escape(r.label)}</td>{td}{escape(_fmt_metric(r.metric, r.before))}</td>"
                         f"{td}{escape(_fmt_metric(r.metric, r.after))}</td>"
                         f"{td}{escape(_fmt_change_metric(r.metric, r.change))}</td>"
                         f"{td}{escape(_fmt_ratio(r.ratio))}{sig}</td></tr>")
    k = c.kernels.head(top)
    scale = float(k["change_us"].abs().max()) if len(k) else 0.0
    krows = []
    for r in k.itertuples():
        names = sorted(set(r.names_before) | set(r.names_after)) or [r.name]
        title = escape("\n".join(str(n) for n in names), quote=True)
        badge = ""
        if r.status in ("new", "gone", "within noise"):
            badge = f" <b style='font-size:80%'>[{escape(r.status)}]</b>"
        elif r.match == "short_name+backend":
            badge = " <span style='font-size:80%' title='matched by short name and backend'>[≈]</span>"
        krows.append(
            f"<tr><td title='{title}'>{escape(str(r.short_name))}{badge}</td><td>{escape(str(r.backend))}</td>"
            f"{td}{r.launches_before:g} → {r.launches_after:g}</td>"
            f"{td}{escape(fmt_us(r.total_before_us))}</td>{td}{escape(fmt_us(r.total_after_us))}</td>"
            f"{td}{escape(_fmt_change(r.change_us))}</td>{td}{escape(_kernel_ratio(r))}</td>"
            f"<td>{_bar(r.change_us, scale, r.status)}</td></tr>")
    more = (f"<p>… and {len(c.kernels) - top} more kernels (comparison.kernels has them all)</p>"
            if len(c.kernels) > top else "")
    brows = "".join(
        f"<tr><td>{escape(str(r.backend))}</td>{td}{escape(fmt_us(r.total_before_us))}</td>"
        f"{td}{escape(fmt_us(r.total_after_us))}</td>{td}{escape(_fmt_change(r.change_us))}</td>"
        f"{td}{escape(_fmt_ratio(r.ratio))}</td></tr>" for r in c.backends.itertuples())
    notes = "".join(f"<p><i>{escape(n)}</i></p>" for n in [c.noise_note, *c.notes])
    th = "<th style='text-align:right;padding:1px 6px'>"
    return (
        "<div class='kernelscope-compare'>"
        f"<p><b>kernelscope comparison</b>: {lb} → {la}{escape(_runs_note(c))}</p>"
        f"<table><thead><tr><th></th>{th}{lb}</th>{th}{la}</th>{th}change</th>{th}ratio</th></tr></thead>"
        f"<tbody>{''.join(head_rows)}</tbody></table>{notes}"
        f"<table><thead><tr><th style='text-align:left'>kernel</th><th>backend</th>{th}launches</th>"
        f"{th}{lb}</th>{th}{la}</th>{th}change</th>{th}ratio</th><th>faster ← → slower</th></tr></thead>"
        f"<tbody>{''.join(krows)}</tbody></table>{more}"
        f"<table style='margin-top:10px'><thead><tr><th style='text-align:left'>backend</th>{th}{lb}</th>{th}{la}</th>"
        f"{th}change</th>{th}ratio</th></tr></thead><tbody>{brows}</tbody></table></div>")
