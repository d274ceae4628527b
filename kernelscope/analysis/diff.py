"""Comparing two runs: what got faster, what got slower, what is new, and whether each change
is real.

Kernels are matched by name, then the unmatched ones by (short name, backend), so that a kernel
whose template arguments changed is still compared with itself. Times are per run: a report made
with ``%%kernelprofile --repeat N`` holds N runs, and its totals are divided by N. Whether a
change is real comes from the spread the repeats measured (:mod:`kernelscope.analysis.noise`):
with 2+ repeats on both sides, every kernel row and every total gets the 95% confidence
interval of the change of per-run means (Welch's t; ``ci_low_us``/``ci_high_us``, ``ci_low``/
``ci_high`` for totals) and a ``verdict``: ``real`` (the interval excludes 0), ``noise`` (it
holds 0 and is within a negligible margin of the before time) or ``inconclusive`` (too wide, or
a side without repeats: one run each side cannot tell a change from noise). A row's ``status``
says the direction only where the verdict is real (slower, faster); otherwise "within noise" or
"inconclusive". The per-repeat values: each kernel's from ``meta["repeats"]``, each total's
from :func:`kernelscope.analysis.repeats.repeat_series`.

What the baseline's "what to fix first" list predicted, against what the second run realized,
is :attr:`Diff.advice` (:mod:`kernelscope.analysis.remeasure`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from kernelscope.analysis.names import base_short_name
from kernelscope.analysis.noise import (
    NO_REPEATS_WHY,
    NOISE_FLOOR_US,
    NOISE_MARGIN,
    NOT_SPLIT_WHY,
    ONE_SIDE_WHY,
    judge,
)
from kernelscope.analysis.repeats import kernel_lists, n_repeats, repeat_series
from kernelscope.jsonable import jsonable

KERNEL_COLUMNS = ["name", "short_name", "backend", "match", "names_before", "names_after",
                  "launches_before", "launches_after", "total_before_us", "total_after_us",
                  "change_us", "ci_low_us", "ci_high_us", "ratio", "verdict", "status"]
OVERALL_COLUMNS = ["metric", "label", "before", "after", "change", "ci_low", "ci_high", "ratio",
                   "verdict", "why"]
OVERALL_METRICS = {
    "gpu_time_us": "GPU kernel time", "copy_time_us": "copy/memset time",
    "busy_us": "GPU busy (union)", "active_us": "GPU active window", "wall_us": "wall time",
    "launches": "kernel launches",
}
NO_REPEATS_NOTE = ("One run each side cannot tell a change from noise: every change is inconclusive. "
                   "Profile both with %%kernelprofile --repeat N (N >= 2; 5 or more gives a useful "
                   "interval) to measure the noise.")
# What each kernel row's ``status`` and ``match`` mean, in the words the views show.
STATUSES = {
    "slower": "more time in the second run: the 95% interval of the change is above 0",
    "faster": "less time in the second run: the 95% interval of the change is below 0",
    "within noise": (f"the 95% interval of the change holds 0 and lies within {NOISE_MARGIN:.0%} of "
                     f"the first run's time (or {NOISE_FLOOR_US:g} us): too small to matter"),
    "inconclusive": ("cannot be told from noise: the 95% interval holds 0 but is wide, or the runs "
                     "have no repeats (--repeat N) to measure the noise"),
    "same": "exactly the same time in both runs",
    "new": "only in the second run",
    "gone": "only in the first run",
}
MATCHES = {
    "name": "the same kernel name in both runs",
    # Marked "≈" in the views.
    "short_name+backend": ("no kernel of the same name: matched by readable name and backend "
                           "(its template arguments or suffix changed)"),
    "new": "only in the second run", "gone": "only in the first run",
}
# Two runs whose kernels (by time) are mostly unmatched ran different work: below this share of
# their kernel time in kernels both ran, a comparison says so first.
SHARED_MIN_SHARE = 0.5


@dataclass(repr=False)
class Diff:
    """Two runs side by side: per-kernel, per-backend and overall changes (per run). The data
    of a :class:`kernelscope.reports.comparison.Comparison`, which adds the text and HTML views.

    >>> d = diff(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))
    >>> d.kernels[["short_name", "total_before_us", "total_after_us", "ratio"]]
                            short_name  total_before_us  total_after_us   ratio
    0  elementwise add (vectorized x4)          922.825        1104.812  1.1972
    1  elementwise Mul (vectorized x4)          914.831        1095.665  1.1977
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
    # Kernels both runs ran: {"kernels", "of" (distinct kernels in either run), "time_share"
    # (their share of both runs' kernel time), "few" (below SHARED_MIN_SHARE)}.
    shared: dict = field(default_factory=dict)

    @property
    def new(self) -> pd.DataFrame:
        """Kernels only in the second run.

        >>> c.new["short_name"].tolist()
        []
        """
        return self.kernels[self.kernels["status"] == "new"]

    @property
    def gone(self) -> pd.DataFrame:
        """Kernels only in the first run.

        >>> c.gone["short_name"].tolist()
        []
        """
        return self.kernels[self.kernels["status"] == "gone"]

    def metric(self, name: str) -> dict:
        """One overall row (``gpu_time_us``, ``wall_us``, ...) as a dict.

        >>> c.metric("wall_us")["ratio"]
        0.19290045871587938
        """
        row = self.overall[self.overall["metric"] == name]
        return row.iloc[0].to_dict() if len(row) else {}

    @cached_property
    def advice(self) -> pd.DataFrame:
        """The re-measure step: for each item of the first run's "what to fix first" list, fixed /
        partly / not, with the time it predicted against the time the second run gained
        (:func:`kernelscope.analysis.remeasure.advice`).

        >>> c.advice[["rank", "kind", "predicted_us", "realized_us", "verdict"]]
           rank          kind  predicted_us  realized_us verdict
        0     1  launch_bound     7943.1048   22992.4326   fixed
        """
        from kernelscope.analysis.remeasure import advice
        return advice(self)

    def to_dict(self) -> dict:
        """Plain JSON-able data: labels, repeats, notes, the three tables and the advice as records.

        >>> sorted(json.loads(json.dumps(c.to_dict())))
        ['advice', 'backends', 'kernels', 'labels', 'noise_note', 'notes', 'overall', 'repeats', 'shared']
        """
        def recs(df):
            return [jsonable(r) for r in df.to_dict("records")]

        return {"labels": list(self.labels), "repeats": list(self.repeats),
                "noise_note": self.noise_note, "notes": list(self.notes), "shared": jsonable(self.shared),
                "overall": recs(self.overall), "backends": recs(self.backends),
                "kernels": recs(self.kernels), "advice": recs(self.advice)}


def diff(before, after, *, labels=None) -> Diff:
    """Compare two Reports: per-kernel time change, new and gone kernels, per-backend totals,
    overall GPU and wall time; all per run, each change with its 95% interval and verdict where
    the runs were repeated. Two ranks of one job (``rep.rank(0)``,
    ``rep.rank(1)`` of ``ks.load_ranks``) are labelled by their rank, other runs
    by their titles (``rep.title``: the ``-o`` name, the cell, the file name) where those differ,
    else "before" and "after", unless ``labels`` says otherwise. When the runs share little of
    their kernel time (different workloads), the first note says so. (``ks.compare`` also opens
    paths, and shows it.)

    >>> d = diff(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))
    >>> d.metric("wall_us")["ratio"] < 1, d.metric("wall_us")["verdict"]
    (True, 'inconclusive')
    """
    before, after = _report(before), _report(after)
    labels = labels or _rank_labels(before, after) or _title_labels(before, after) or ("before", "after")
    nb, na = n_repeats(before.meta), n_repeats(after.meta)
    rb, ra = kernel_lists(before.meta), kernel_lists(after.meta)
    kernels = _match(_per_name(before, nb), _per_name(after, na), rb, ra)
    notes = []
    if nb < 2 and na < 2:
        noise_note = NO_REPEATS_NOTE
    else:
        sides = [f"{lab}: {n} repeats" for lab, n in zip(labels, (nb, na)) if n >= 2]
        noise_note = ("95% confidence intervals of each change (Welch's t) from the spread of the "
                      "repeats (" + ", ".join(sides) + "): real where the interval excludes 0, "
                      f"within noise where it lies within {NOISE_MARGIN:.0%} of the first run's time, "
                      "else inconclusive.")
        if nb < 2 or na < 2:
            notes.append(f"Only {labels[0] if nb >= 2 else labels[1]} has repeats, so the other side's "
                         "spread is unknown: every change is inconclusive. Record both with --repeat N.")
    shared = _shared(kernels)
    if shared["few"]:
        notes.insert(0, f"The two runs share {shared['kernels']} of {shared['of']} kernels "
                        f"({shared['time_share']:.0%} of their kernel time): they look like different "
                        "workloads, so most rows compare different work (new or gone).")
    return Diff(before=before, after=after, kernels=kernels,
                backends=_backends(before, after, nb, na), overall=_overall(before, after, nb, na),
                labels=tuple(labels), repeats=(nb, na), noise_note=noise_note, notes=notes, shared=shared)


# -- building the tables -------------------------------------------------------------------------

def _report(x):
    if not hasattr(x, "kernels") or not hasattr(x, "meta"):
        raise TypeError(f"compare() takes Reports or trace/report paths, not {type(x).__name__}")
    return x


def _rank_labels(before, after):
    """("rank 0", "rank 1") for two different ranks of a distributed run, else None."""
    ranks = [(r.meta.get("distributed") or {}).get("rank") if isinstance(r.meta.get("distributed"), dict) else None
             for r in (before, after)]
    if None in ranks or ranks[0] == ranks[1]:
        return None
    return tuple(f"rank {r}" for r in ranks)


def _title_labels(before, after):
    """The two reports' titles, when both have one and they differ."""
    tb, ta = (getattr(r, "title", None) for r in (before, after))
    if not (isinstance(tb, str) and isinstance(ta, str)) or not tb or not ta or tb == ta:
        return None
    return tb, ta


def _shared(kernels: pd.DataFrame) -> dict:
    """How much of the two runs' kernels (by count and by time) both ran."""
    if not len(kernels):
        return {"kernels": 0, "of": 0, "time_share": float("nan"), "few": False}
    both = kernels["match"].isin(["name", "short_name+backend"])
    t = kernels["total_before_us"] + kernels["total_after_us"]
    total = float(t.sum())
    share = float(t[both].sum()) / total if total > 0 else float("nan")
    return {"kernels": int(both.sum()), "of": int(len(kernels)), "time_share": share,
            "few": bool(share == share and share < SHARED_MIN_SHARE)}


def _per_name(rep, n) -> pd.DataFrame:
    k = rep.kernels
    if not len(k):
        return pd.DataFrame(columns=["name", "short_name", "backend", "launches", "total_us"])
    g = k.groupby("name", sort=False)
    return pd.DataFrame({
        "short_name": g["short_name"].first() if "short_name" in k.columns else g["name"].first(),
        "backend": g["backend"].first() if "backend" in k.columns else "other",
        "launches": g.size() / n, "total_us": g["duration_us"].sum() / n,
    }).reset_index()


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
    # Matched by readable name without what tells namesakes apart within one report ("[NNT]",
    # "#2": those words depend on the report's other kernels); a kernel only one side ran keeps
    # its own row, under its own readable name.
    gb = {key: g for key, g in rest_b.groupby([rest_b["short_name"].map(base_short_name), rest_b["backend"]], sort=False)}
    ga = {key: g for key, g in rest_a.groupby([rest_a["short_name"].map(base_short_name), rest_a["backend"]], sort=False)}
    for key in gb.keys() | ga.keys():
        x, y = gb.get(key), ga.get(key)
        if x is not None and y is not None:
            parts = [("short_name+backend", key[0], key[0], x, y)]
        elif y is not None:
            parts = [("new", (g["name"].iloc[0] if len(g) == 1 else s), s, None, g)
                     for s, g in y.groupby("short_name", sort=False)]
        else:
            assert x is not None         # every key is one side's at least
            parts = [("gone", (g["name"].iloc[0] if len(g) == 1 else s), s, g, None)
                     for s, g in x.groupby("short_name", sort=False)]
        for match, name, short, x, y in parts:
            rows.append(_row(name, short, key[1], match,
                             list(x["name"]) if x is not None else [], list(y["name"]) if y is not None else [],
                             x["launches"].sum() if x is not None else 0.0,
                             y["launches"].sum() if y is not None else 0.0,
                             x["total_us"].sum() if x is not None else 0.0,
                             y["total_us"].sum() if y is not None else 0.0, rb, ra))
    out = pd.DataFrame(rows, columns=KERNEL_COLUMNS)
    if len(out):
        out = out.iloc[np.argsort(-out["change_us"].abs().to_numpy(), kind="stable")].reset_index(drop=True)
    return out


def _row(name, short, backend, match, names_b, names_a, lb, la, tb, ta, rb, ra):
    change = ta - tb
    ratio = ta / tb if tb > 0 else (np.inf if ta > 0 else np.nan)
    low, high, verdict, _ = judge(_summed(rb, names_b), _summed(ra, names_a), tb)
    return {"name": name, "short_name": short, "backend": backend, "match": match,
            "names_before": names_b, "names_after": names_a, "launches_before": float(lb),
            "launches_after": float(la), "total_before_us": float(tb), "total_after_us": float(ta),
            "change_us": float(change), "ci_low_us": float(low), "ci_high_us": float(high),
            "ratio": float(ratio), "verdict": verdict, "status": _status(match, change, low, high, verdict)}


def _status(match, change, low, high, verdict) -> str:
    """The words a row shows: its direction only where the change is real."""
    if match in ("new", "gone"):
        return match
    if verdict == "real":
        # The interval's side, not the totals' difference: they can differ where some launches
        # fell outside every repeat's window.
        return "slower" if low + high > 0 else "faster"
    if verdict == "noise":
        return "within noise"
    return "same" if change == 0 and low != low else "inconclusive"


def _summed(lists, names):
    """Per-repeat totals of a group of kernel names (elementwise sum), zeros on a side where none
    of them ran, or None where a side has no per-repeat totals (or misses one of the names)."""
    if lists is None:
        return None
    width = {len(x) for x in lists.values()}
    if len(width) != 1:
        return None
    arrs = [lists.get(n) for n in names]
    if any(x is None for x in arrs):
        return None
    return np.sum(arrs, axis=0) if arrs else np.zeros(width.pop())


def _backends(before, after, nb, na) -> pd.DataFrame:
    from kernelscope.analysis.backends import gpu_rows

    def gpu(rep, n):
        # Kernel and copy rows only: the full breakdown's CPU half costs seconds on big traces.
        g = gpu_rows(rep).groupby("backend", sort=False)["duration_us"]
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


def _overall(before, after, nb, na) -> pd.DataFrame:
    """The totals per run: the mean of the per-repeat values where the repeats give them (so the
    change is the interval's centre), else the recording's total divided by its repeats."""
    def values(rep, n):
        tl = rep.timeline
        d = tl.busy[tl.busy["stream"].isna()]
        wall = rep.wall_time_us
        return {
            "gpu_time_us": rep.gpu_time_us / n,
            "copy_time_us": float(rep.copies["duration_us"].sum()) / n,
            "busy_us": float(d["busy_us"].sum()) / n,
            "active_us": float(d["window_us"].sum()) / n,
            "wall_us": wall / n if wall is not None else np.nan,
            "launches": len(rep.kernels) / n,
        }

    vb, va = values(before, nb), values(after, na)
    sb, sa = repeat_series(before), repeat_series(after)
    rows = []
    for m, label in OVERALL_METRICS.items():
        b, a = sb.get(m), sa.get(m)
        x = float(np.mean(b)) if b is not None else vb[m]
        y = float(np.mean(a)) if a is not None else va[m]
        low, high, verdict, why = judge(b, a, x)
        if why:
            why = (NOT_SPLIT_WHY if nb >= 2 and na >= 2 else ONE_SIDE_WHY if max(nb, na) >= 2
                   else NO_REPEATS_WHY)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = y / x if x else np.nan
        rows.append({"metric": m, "label": label, "before": x, "after": y, "change": y - x,
                     "ci_low": float(low), "ci_high": float(high), "ratio": ratio, "verdict": verdict,
                     "why": why})
    return pd.DataFrame(rows, columns=OVERALL_COLUMNS)
