"""Comparing two runs: what got faster, what got slower, what is new.

Kernels are matched by name, then the unmatched ones by (short name, backend), so that a kernel
whose template arguments changed is still compared with itself. Times are per run: a report made
with ``%%kernelprofile --repeat N`` holds N runs, and its totals are divided by N. Run-to-run noise
comes from the repeats (``report.meta["repeats"]``): a difference is called a change only when the
ranges of the per-repeat totals do not overlap (or, with repeats on one side only, when it exceeds
that side's range). Without repeats one run cannot separate noise from change, and we say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelscope.analysis.names import base_short_name
from kernelscope.jsonable import jsonable

KERNEL_COLUMNS = ["name", "short_name", "backend", "match", "names_before", "names_after",
                  "launches_before", "launches_after", "total_before_us", "total_after_us",
                  "change_us", "ratio", "noise_us", "significant", "status"]
OVERALL_METRICS = {
    "gpu_time_us": "GPU kernel time", "copy_time_us": "copy/memset time",
    "busy_us": "GPU busy (union)", "active_us": "GPU active window", "wall_us": "wall time",
    "launches": "kernel launches",
}
# Without repeats no noise is measured; a change smaller than this share of the time is not
# called slower or faster (the note below says differences of a few percent may be noise).
NO_REPEATS_NOISE = 0.05
NO_REPEATS_NOTE = ("One run on each side cannot separate noise from change: differences of a few "
                   f"percent may be noise (changes under {NO_REPEATS_NOISE:.0%} read \"within noise\"). "
                   "Profile with %%kernelprofile --repeat N to measure it.")
# What each kernel row's ``status`` and ``match`` mean, in the words the views show.
STATUSES = {
    "slower": "more time in the second run (beyond the noise, where the repeats measured it)",
    "faster": "less time in the second run (beyond the noise, where the repeats measured it)",
    "within noise": ("the change is within the run-to-run noise the repeats measured (without repeats: "
                     f"under {NO_REPEATS_NOISE:.0%})"),
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

    def to_dict(self) -> dict:
        """Plain JSON-able data: labels, repeats, notes and the three tables as records.

        >>> sorted(json.loads(json.dumps(c.to_dict())))
        ['backends', 'kernels', 'labels', 'noise_note', 'notes', 'overall', 'repeats', 'shared']
        """
        def recs(df):
            return [jsonable(r) for r in df.to_dict("records")]

        return {"labels": list(self.labels), "repeats": list(self.repeats),
                "noise_note": self.noise_note, "notes": list(self.notes), "shared": jsonable(self.shared),
                "overall": recs(self.overall), "backends": recs(self.backends),
                "kernels": recs(self.kernels)}


def diff(before, after, *, labels=None) -> Diff:
    """Compare two Reports: per-kernel time change, new and gone kernels, per-backend totals,
    overall GPU and wall time; all per run. Two ranks of one job (``rep.rank(0)``,
    ``rep.rank(1)`` of ``ks.load_ranks``) are labelled by their rank, other runs
    by their titles (``rep.title``: the ``-o`` name, the cell, the file name) where those differ,
    else "before" and "after", unless ``labels`` says otherwise. When the runs share little of
    their kernel time (different workloads), the first note says so. (``ks.compare`` also opens
    paths, and shows it.)

    >>> d = diff(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))
    >>> d.metric("wall_us")["ratio"] < 1
    True
    """
    before, after = _report(before), _report(after)
    labels = labels or _rank_labels(before, after) or _title_labels(before, after) or ("before", "after")
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
    shared = _shared(kernels)
    if shared["few"]:
        notes.insert(0, f"The two runs share {shared['kernels']} of {shared['of']} kernels "
                        f"({shared['time_share']:.0%} of their kernel time): they look like different "
                        "workloads, so most rows compare different work (new or gone).")
    return Diff(before=before, after=after, kernels=kernels,
                backends=_backends(before, after, nb, na), overall=_overall(before, after, nb, na, rb, ra),
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
        # No repeats: a change of a few percent is not a verdict (x1.01 is not "slower").
        small = tb > 0 and abs(change) < NO_REPEATS_NOISE * tb
        status = "same" if change == 0 else "within noise" if small else "slower" if change > 0 else "faster"
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
