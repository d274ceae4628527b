"""A comparison of two runs (:class:`kernelscope.reports.comparison.Comparison`) as text and HTML:
the totals and every kernel with the 95% interval of its change and its verdict, and the first
run's "what to fix first" list re-measured (``c.advice``)."""
from __future__ import annotations

from html import escape

import numpy as np

from kernelscope.analysis.diff import MATCHES, STATUSES
from kernelscope.analysis.noise import NO_REPEATS_WHY, ONE_SIDE_WHY, VERDICTS
from kernelscope.analysis.remeasure import VERDICTS as ADVICE_VERDICTS
from kernelscope.errors import printable
from kernelscope.units import fmt_us

# What a cell shows where a kernel did not run on that side (a new or gone kernel).
ABSENT = "–"


def fmt_change(us) -> str:
    """A change in time, signed: ``+1.20 ms``, ``-4.5 us``, ``±0.0 us``.

    >>> fmt_change(1200.0), fmt_change(-4.5)
    ('+1.20 ms', '-4.5 us')
    """
    if us is None or us != us:
        return ABSENT
    return ("+" if us > 0 else "-" if us < 0 else "±") + fmt_us(abs(us))


def fmt_ratio(r) -> str:
    """A ratio of after to before as ``x0.19``; ``–`` where there is none."""
    if r is None or r != r or r == np.inf:
        return ABSENT
    return f"x{r:.2f}"


def kernel_ratio(r) -> str:
    """A kernel row's ratio: new and gone kernels have none, their status says it."""
    return ABSENT if r.status in ("new", "gone") else fmt_ratio(r.ratio)


def fmt_launches(r) -> str:
    """A kernel row's launches per run, before → after, ``–`` on a side it did not run."""
    b = ABSENT if r.status == "new" else f"{r.launches_before:g}"
    a = ABSENT if r.status == "gone" else f"{r.launches_after:g}"
    return f"{b} → {a}"


def metric_text(m, v) -> str:
    """An overall metric's value: a count for launches, a time otherwise."""
    if v is None or v != v:
        return ABSENT
    return f"{v:,.0f}" if m == "launches" else fmt_us(v)


def metric_change(m, v) -> str:
    if v is None or v != v:
        return ABSENT
    return f"{v:+,.0f}" if m == "launches" else fmt_change(v)


def ci_text(low, high, m=None) -> str:
    """The 95% interval of a change as ``±`` its half-width (Welch's interval is symmetric about
    the change), ``""`` where there is none; ``m`` is an overall metric's name (launches count).

    >>> ci_text(-23400.0, -22600.0), ci_text(float("nan"), float("nan")), ci_text(-2.0, 2.0, "launches")
    ('±400.0 us', '', '±2')
    """
    if low is None or high is None or low != low or high != high:
        return ""
    half = (high - low) / 2.0
    return f"±{half:,.0f}" if m == "launches" else "±" + fmt_us(half)


def any_repeats(c) -> bool:
    """Whether either run was repeated (else every verdict is "inconclusive", said once)."""
    return max(c.repeats) >= 2


def overall_verdict(c, r) -> str:
    """An overall row's verdict in words: real / within noise / inconclusive; "" where neither
    run was repeated (the noise note says it once)."""
    if not any_repeats(c):
        return ""
    return "within noise" if r.verdict == "noise" else str(r.verdict)


def overall_whys(c) -> list:
    """Why totals have no interval, once per reason: ``(reason, [their labels])``, where both
    runs were repeated (a side without repeats is said once, in the notes)."""
    if not any_repeats(c):
        return []
    out = {}
    for r in c.overall.itertuples():
        # A side without repeats is said once, in the notes.
        if r.why and r.why not in (ONE_SIDE_WHY, NO_REPEATS_WHY):
            out.setdefault(str(r.why), []).append(str(r.label))
    return list(out.items())


def advice_rows(c) -> list:
    """The re-measured items as display rows: the numbers formatted, "–" where there are none.

    >>> advice_rows(c)[0]["verdict_text"]
    'fixed'
    """
    rows = []
    for r in c.advice.itertuples():
        change = "within noise" if r.change == "noise" else r.change
        rows.append({
            "rank": int(r.rank), "title": str(r.title), "kind": str(r.kind), "measure": str(r.measure),
            "predicted_text": fmt_us(r.predicted_us) if r.predicted_us == r.predicted_us else ABSENT,
            "realized_text": _signed(r.realized_us),
            "ratio_text": fmt_ratio(r.ratio), "after_text": fmt_us(r.after_cost_us) if r.after_cost_us else ABSENT,
            "verdict": str(r.verdict), "verdict_text": str(r.verdict), "change": str(r.change),
            "change_text": f"change {change}", "note": str(r.note),
        })
    return rows


def _signed(us) -> str:
    """A realized gain: plain where it saved time, with a minus where it lost some."""
    if us is None or us != us:
        return ABSENT
    return ("-" if us < 0 else "") + fmt_us(abs(us))


def _clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def comparison_text(c, top: int = 15) -> str:
    """The comparison as plain text (``text/plain``): the totals, the first run's advice
    re-measured, the kernels (largest change first) and the backends. The 95% interval (``±``)
    and the verdicts show where a run was repeated; without repeats the noise line says once
    that no change can be told from noise.

    >>> print(comparison_text(c))
    kernelscope comparison: launch_bound.pt.trace.json.gz -> graphs.pt.trace.json.gz
      GPU kernel time       1.84 ms ->    2.20 ms     +362.8 us   x1.20
      copy/memset time       0.0 us ->     0.0 us       ±0.0 us       –
      GPU busy (union)      1.84 ms ->    2.20 ms     +362.8 us   x1.20
      GPU active window    25.77 ms ->    2.37 ms     -23.40 ms   x0.09
      wall time            28.49 ms ->    5.50 ms     -22.99 ms   x0.19
    ...
    """
    lb, la = c.labels
    rep = any_repeats(c)
    lines = [f"kernelscope comparison: {lb} -> {la}" + _runs_note(c)]
    for r in c.overall.itertuples():
        ci = f" {ci_text(r.ci_low, r.ci_high, r.metric):>10}" if rep else ""
        verdict = overall_verdict(c, r)
        lines.append((f"  {r.label:<18} {metric_text(r.metric, r.before):>10} -> "
                      f"{metric_text(r.metric, r.after):>10}   {metric_change(r.metric, r.change):>11}{ci} "
                      f"{fmt_ratio(r.ratio):>7}" + (f"  {verdict}" if verdict else "")).rstrip())
    lines.extend(f"  inconclusive ({', '.join(labels)}): {why}" for why, labels in overall_whys(c))
    lines.append(f"  noise: {c.noise_note}")
    lines.extend(f"  note: {n}" for n in c.notes)
    lines.extend(_advice_text(c))
    k = c.kernels
    if len(k):
        ci_head = f" {'±95%':>10}" if rep else ""
        lines.append("")
        lines.append(f"  {'kernel (largest change first)':<44} {'backend':<10} {'launches':>13} "
                     f"{_clip(lb, 10):>10} {_clip(la, 10):>10} {'change':>11}{ci_head} {'ratio':>7}  status")
        lines.extend(f"  {_clip(r.short_name, 44):<44} {_clip(r.backend, 10):<10} {fmt_launches(r):>13} "
                     f"{side_text(r, 0):>10} {side_text(r, 1):>10} {fmt_change(r.change_us):>11}"
                     + (f" {ci_text(r.ci_low_us, r.ci_high_us):>10}" if rep else "")
                     + f" {kernel_ratio(r):>7}  {r.status}"
                     + (" [≈]" if r.match == "short_name+backend" else "")
                     for r in k.head(top).itertuples())
        if len(k) > top:
            lines.append(f"  … and {len(k) - top} more (comparison.kernels has them all)")
        counts = k["status"].value_counts()
        lines.append("  " + ", ".join(f"{int(counts[s])} {s}" for s in STATUSES if s in counts))
        if (k["match"] == "short_name+backend").any():
            lines.append(f"  [≈] {MATCHES['short_name+backend']}; –: did not run on that side")
    if len(c.backends):
        lines.append("")
        lines.append(f"  {'backend':<12} {_clip(lb, 10):>10} {_clip(la, 10):>10} {'change':>11} {'ratio':>7}")
        lines.extend(f"  {_clip(r.backend, 12):<12} {fmt_us(r.total_before_us):>10} "
                     f"{fmt_us(r.total_after_us):>10} {fmt_change(r.change_us):>11} {fmt_ratio(r.ratio):>7}"
                     for r in c.backends.itertuples())
    return printable("\n".join(lines))    # kernel and file names may carry terminal escapes


ADVICE_TITLE = "What the first run said to fix, re-measured"
ADVICE_HEAD = ("per run; predicted: its time at stake; realized: what the measure gained; now: the same "
               "finding's cost in the second run")


def _advice_text(c) -> list:
    rows = advice_rows(c)
    if not rows:
        return []
    lines = ["", f"  {ADVICE_TITLE} ({ADVICE_HEAD}):",
             f"  {'#':>2}  {'item':<44} {'measure':<26} {'predicted':>10} {'realized':>10} {'ratio':>7} "
             f"{'now':>10}  verdict"]
    for r in rows:
        lines.append(f"  {r['rank']:>2}  {_clip(r['title'], 44):<44} {_clip(r['measure'], 26):<26} "
                     f"{r['predicted_text']:>10} {r['realized_text']:>10} {r['ratio_text']:>7} "
                     f"{r['after_text']:>10}  {r['verdict']}")
        if r["note"]:
            lines.append(f"      {r['note']}")
    lines.append("  " + "; ".join(f"{k}: {v}" for k, v in ADVICE_VERDICTS.items()))
    return lines


def side_text(r, side: int) -> str:
    """A kernel row's total on one side (0: before, 1: after), ``–`` where it did not run."""
    if r.status == ("new", "gone")[side]:
        return ABSENT
    return fmt_us(r.total_after_us if side else r.total_before_us)


def _runs_note(c) -> str:
    nb, na = c.repeats
    return "" if nb == na == 1 else f" (per run: {nb} and {na} repeats)"


SLOWER, FASTER, NEUTRAL = "#d62728", "#2ca02c", "#999"
# The change bars' colours, for the interactive view too.
BAR_COLORS = {"slower": SLOWER, "faster": FASTER, "neutral": NEUTRAL}
# Statuses whose bar is grey: no change to speak of. An inconclusive change keeps its direction's
# colour, faint (new and gone kernels keep theirs).
QUIET = ("within noise", "same")
FAINT = 0.4


def _bar(change, scale, status) -> str:
    """A diverging bar: faster grows left of the centre line (green), slower right (red); grey
    within noise, faint where the change is inconclusive (its direction measured, not proven)."""
    if not scale or change != change:
        return ""
    w = min(50.0, abs(change) / scale * 50.0)
    color = NEUTRAL if status in QUIET else SLOWER if change > 0 else FASTER
    faint = f";opacity:{FAINT}" if status == "inconclusive" else ""
    left = 50.0 - w if change < 0 else 50.0
    return ("<div style='position:relative;width:160px;height:12px;background:transparent'>"
            "<div style='position:absolute;left:50%;top:0;bottom:0;border-left:1px solid #888'></div>"
            f"<div style='position:absolute;left:{left:.2f}%;width:{w:.2f}%;top:2px;height:8px;"
            f"background:{color}{faint}'></div></div>")


NUM = "text-align:right;padding:1px 6px;white-space:nowrap;font-variant-numeric:tabular-nums"
LEFT = "text-align:left;padding:1px 6px"
TD, TH = f"<td style='{NUM}'>", f"<th style='{NUM}'>"


def comparison_html(c) -> str:
    """The comparison as self-contained HTML, every kernel row (no JavaScript; the interactive
    view is :mod:`kernelscope.view.compare`); every kernel name, backend and label is escaped.

    >>> "<script>" in comparison_html(c)
    False
    """
    lb, la = (escape(str(x)) for x in c.labels)
    shared = getattr(c, "shared", {}) or {}
    notes = list(c.notes)
    warn = ""
    if shared.get("few") and notes:
        warn = f"<p style='color:#a40e26'><b>{escape(notes.pop(0))}</b></p>"
    whys = [f"inconclusive ({', '.join(labels)}): {why}" for why, labels in overall_whys(c)]
    notes = "".join(f"<p><i>{escape(n)}</i></p>" for n in [*whys, c.noise_note, *notes])
    brows = "".join(
        f"<tr><td style='{LEFT}'>{escape(str(r.backend))}</td>{TD}{escape(fmt_us(r.total_before_us) if r.total_before_us else ABSENT)}</td>"
        f"{TD}{escape(fmt_us(r.total_after_us) if r.total_after_us else ABSENT)}</td>{TD}{escape(fmt_change(r.change_us))}</td>"
        f"{TD}{escape(fmt_ratio(r.ratio) if r.total_before_us and r.total_after_us else ABSENT)}</td></tr>"
        for r in c.backends.itertuples())
    return (
        "<div class='kernelscope-compare'>"
        f"<p><b>kernelscope comparison</b>: {lb} → {la}{escape(_runs_note(c))}</p>{warn}"
        f"{_overall_html(c, lb, la)}{notes}{_advice_html(c)}{_kernels_html(c, lb, la)}"
        f"<table style='margin-top:10px'><thead><tr><th style='{LEFT}'>backend</th>{TH}{lb}</th>{TH}{la}</th>"
        f"{TH}change</th>{TH}ratio</th></tr></thead><tbody>{brows}</tbody></table></div>")


def _overall_html(c, lb, la) -> str:
    rep = any_repeats(c)
    rows = []
    for r in c.overall.itertuples():
        extra = ""
        if rep:
            v = overall_verdict(c, r)
            extra = (f"{TD}{escape(ci_text(r.ci_low, r.ci_high, r.metric))}</td>"
                     f"<td style='{LEFT}' title='{escape(VERDICTS.get(r.verdict, ''), quote=True)}'>{escape(v)}</td>")
        rows.append(f"<tr><td style='{LEFT}'>{escape(r.label)}</td>{TD}{escape(metric_text(r.metric, r.before))}</td>"
                    f"{TD}{escape(metric_text(r.metric, r.after))}</td>"
                    f"{TD}{escape(metric_change(r.metric, r.change))}</td>{extra}"
                    f"{TD}{escape(fmt_ratio(r.ratio))}</td></tr>")
    head = (f"{TH}±95%</th><th style='{LEFT}'>verdict</th>" if rep else "")
    return (f"<table><thead><tr><th></th>{TH}{lb}</th>{TH}{la}</th>{TH}change</th>{head}{TH}ratio</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _advice_html(c) -> str:
    rows = advice_rows(c)
    if not rows:
        return ""
    body = "".join(
        f"<tr><td style='{NUM}'>{r['rank']}</td><td style='{LEFT}' title='{escape(r['kind'], quote=True)}'>"
        f"{escape(_clip(r['title'], 90))}</td><td style='{LEFT}'>{escape(r['measure'])}</td>"
        f"{TD}{escape(r['predicted_text'])}</td>{TD}{escape(r['realized_text'])}</td>{TD}{escape(r['ratio_text'])}</td>"
        f"{TD}{escape(r['after_text'])}</td><td style='{LEFT}' title='{escape(ADVICE_VERDICTS[r['verdict']], quote=True)}'>"
        f"<b>{escape(r['verdict'])}</b></td><td style='{LEFT};font-size:90%'>{escape(r['note'])}</td></tr>"
        for r in rows)
    return (f"<p style='margin-top:10px'><b>{escape(ADVICE_TITLE)}</b> "
            f"<span style='font-size:90%'>({escape(ADVICE_HEAD)})</span></p>"
            f"<table class='kernelscope-advice'><thead><tr>{TH}#</th><th style='{LEFT}'>item</th>"
            f"<th style='{LEFT}'>measure</th>{TH}predicted</th>{TH}realized</th>{TH}ratio</th>{TH}now</th>"
            f"<th style='{LEFT}'>verdict</th><th style='{LEFT}'>note</th></tr></thead><tbody>{body}</tbody></table>")


def _kernels_html(c, lb, la) -> str:
    rep = any_repeats(c)
    k = c.kernels
    scale = float(k["change_us"].abs().max()) if len(k) else 0.0
    krows = []
    for r in k.itertuples():
        names = sorted(set(r.names_before) | set(r.names_after)) or [r.name]
        title = escape("\n".join(str(n) for n in names), quote=True)
        badge = ""
        if r.match == "short_name+backend":
            badge = f" <span style='font-size:80%' title='≈: {escape(MATCHES[r.match], quote=True)}'>[≈]</span>"
        ci = f"{TD}{escape(ci_text(r.ci_low_us, r.ci_high_us))}</td>" if rep else ""
        krows.append(
            f"<tr><td style='{LEFT}' title='{title}'>{escape(str(r.short_name))}{badge}</td>"
            f"<td style='{LEFT}'>{escape(str(r.backend))}</td>"
            f"{TD}{escape(fmt_launches(r))}</td>"
            f"{TD}{escape(side_text(r, 0))}</td>{TD}{escape(side_text(r, 1))}</td>"
            f"{TD}{escape(fmt_change(r.change_us))}</td>{ci}{TD}{escape(kernel_ratio(r))}</td>"
            f"<td style='{LEFT}' title='{escape(STATUSES.get(r.status, ''), quote=True)}'>{escape(r.status)}</td>"
            f"<td>{_bar(r.change_us, scale, r.status)}</td></tr>")
    legend = ("<p style='font-size:90%'>[≈] " + escape(MATCHES["short_name+backend"])
              + "; [new] " + escape(STATUSES["new"]) + "; [gone] " + escape(STATUSES["gone"])
              + "; – : did not run on that side.</p>")
    return (f"<table class='kernelscope-kernels'><thead><tr><th style='{LEFT}'>kernel</th><th style='{LEFT}'>backend</th>{TH}launches</th>"
            f"{TH}{lb}</th>{TH}{la}</th>{TH}change</th>{TH + '±95%</th>' if rep else ''}{TH}ratio</th>"
            f"<th style='{LEFT}'>status</th><th>faster ← → slower</th></tr></thead>"
            f"<tbody>{''.join(krows)}</tbody></table>{legend}")
