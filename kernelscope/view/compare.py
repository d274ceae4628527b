"""The interactive view of a comparison (``ks.compare``): its payload for the browser.

The same MIME type and packing as a report (:mod:`kernelscope.view.report`), with
``header["kind"] == "compare"``; ``js/src/view/compare.js`` draws it. Every row carries its raw
numbers (for sorting) and its display text (formatted here: "–" where a kernel did not run on a
side), the sides are named by the reports' titles, and what each status, verdict and the "≈"
match mean travels in the header, so the browser holds no copy of those words. Each kernel row
and total carries the 95% interval of its change (``ci_text``, "±..." where the runs were
repeated); ``advice`` holds the first run's "what to fix first" items re-measured.
"""
from __future__ import annotations

from kernelscope.analysis.diff import MATCHES, STATUSES
from kernelscope.analysis.noise import VERDICTS
from kernelscope.analysis.remeasure import VERDICTS as ADVICE_VERDICTS
from kernelscope.jsonable import jsonable, num
from kernelscope.render.compare import (
    ABSENT,
    ADVICE_HEAD,
    ADVICE_TITLE,
    BAR_COLORS,
    FAINT,
    QUIET,
    advice_rows,
    any_repeats,
    ci_text,
    fmt_change,
    fmt_launches,
    fmt_ratio,
    kernel_ratio,
    metric_change,
    metric_text,
    overall_verdict,
    overall_whys,
)
from kernelscope.units import fmt_us
from kernelscope.view.codec import VIEW_VERSION
from kernelscope.view.vocabulary import vocabulary


def compare_view_model(c) -> tuple[dict, bytes]:
    """A Comparison as (JSON header, empty column buffer), for :func:`~kernelscope.view.codec.pack`.

    >>> header, _ = compare_view_model(c)
    >>> header["kind"], header["labels"]
    ('compare', ['launch_bound.pt.trace.json.gz', 'graphs.pt.trace.json.gz'])
    """
    lb, la = (str(x) for x in c.labels)
    kernels = []
    for r in c.kernels.itertuples():
        names = sorted({str(n) for n in (*r.names_before, *r.names_after)}) or [str(r.name)]
        on_b, on_a = r.status != "new", r.status != "gone"
        kernels.append({
            "name": str(r.name), "short_name": str(r.short_name), "backend": str(r.backend),
            "names": names, "match": str(r.match), "status": str(r.status),
            "launches_before": num(r.launches_before) if on_b else None,
            "launches_after": num(r.launches_after) if on_a else None,
            "total_before_us": num(r.total_before_us) if on_b else None,
            "total_after_us": num(r.total_after_us) if on_a else None,
            "change_us": num(r.change_us), "ratio": num(r.ratio) if on_a and on_b else None,
            "ci_low_us": num(r.ci_low_us), "ci_high_us": num(r.ci_high_us), "verdict": str(r.verdict),
            "ci_text": ci_text(r.ci_low_us, r.ci_high_us),
            "launches_text": fmt_launches(r), "before_text": fmt_us(r.total_before_us) if on_b else ABSENT,
            "after_text": fmt_us(r.total_after_us) if on_a else ABSENT,
            "change_text": fmt_change(r.change_us), "ratio_text": kernel_ratio(r),
        })
    overall = [{"metric": str(r.metric), "label": str(r.label), "before": num(r.before), "after": num(r.after),
                "change": num(r.change), "ratio": num(r.ratio),
                "before_text": metric_text(r.metric, r.before), "after_text": metric_text(r.metric, r.after),
                "change_text": metric_change(r.metric, r.change), "ratio_text": fmt_ratio(r.ratio),
                "ci_low": num(r.ci_low), "ci_high": num(r.ci_high), "verdict": str(r.verdict),
                "noise_text": " ".join(x for x in (ci_text(r.ci_low, r.ci_high, r.metric), overall_verdict(c, r)) if x)}
               for r in c.overall.itertuples()]
    backends = [{"backend": str(r.backend), "total_before_us": num(r.total_before_us),
                 "total_after_us": num(r.total_after_us), "change_us": num(r.change_us), "ratio": num(r.ratio),
                 "before_text": fmt_us(r.total_before_us) if r.total_before_us else ABSENT,
                 "after_text": fmt_us(r.total_after_us) if r.total_after_us else ABSENT,
                 "change_text": fmt_change(r.change_us),
                 "ratio_text": fmt_ratio(r.ratio) if r.total_before_us and r.total_after_us else ABSENT}
                for r in c.backends.itertuples()]
    nb, na = c.repeats
    shared = jsonable(getattr(c, "shared", {}) or {})
    header = {
        "version": VIEW_VERSION, "kind": "compare", "vocabulary": vocabulary(),
        "title": f"{lb} → {la}", "labels": [lb, la], "repeats": [int(nb), int(na)],
        "runs_note": "" if nb == na == 1 else f"per run: {nb} and {na} repeats",
        "noise_note": str(c.noise_note),
        "notes": [f"inconclusive ({', '.join(labels)}): {why}" for why, labels in overall_whys(c)]
        + [str(n) for n in c.notes],
        "shared": shared,
        # The first note when the runs share few kernels; the view shows it as a warning.
        "warning": str(c.notes[0]) if shared.get("few") and c.notes else None,
        "statuses": dict(STATUSES), "matches": dict(MATCHES), "bar_colors": dict(BAR_COLORS),
        "quiet": list(QUIET), "faint": FAINT, "absent": ABSENT, "repeated": any_repeats(c),
        "verdicts": dict(VERDICTS), "advice": advice_rows(c), "advice_title": ADVICE_TITLE,
        "advice_head": ADVICE_HEAD,
        "advice_verdicts": dict(ADVICE_VERDICTS),
        "overall": overall, "kernels": kernels, "backends": backends,
        "tables": {}, "nbytes": 0,
    }
    return header, b""
