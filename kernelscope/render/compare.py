"""A comparison of two runs (:class:`kernelscope.reports.comparison.Comparison`) as text and HTML."""
from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from kernelscope.analysis.diff import MATCHES, STATUSES
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


def _clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def comparison_text(c, top: int = 15) -> str:
    """The comparison as plain text (``text/plain``).

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
    lines = [f"kernelscope comparison: {lb} -> {la}" + _runs_note(c)]
    for r in c.overall.itertuples():
        noise = ""
        if r.significant is not pd.NA and r.significant is not None:
            noise = f"  (noise {metric_text(r.metric, r.noise)}{'' if r.significant else ': within noise'})"
        lines.append(f"  {r.label:<18} {metric_text(r.metric, r.before):>10} -> "
                     f"{metric_text(r.metric, r.after):>10}   {metric_change(r.metric, r.change):>11} "
                     f"{fmt_ratio(r.ratio):>7}{noise}")
    lines.append(f"  noise: {c.noise_note}")
    lines.extend(f"  note: {n}" for n in c.notes)
    k = c.kernels
    if len(k):
        lines.append("")
        lines.append(f"  {'kernel (largest change first)':<44} {'backend':<10} {'launches':>13} "
                     f"{_clip(lb, 10):>10} {_clip(la, 10):>10} {'change':>11} {'ratio':>7}  status")
        lines.extend(f"  {_clip(r.short_name, 44):<44} {_clip(r.backend, 10):<10} {fmt_launches(r):>13} "
                     f"{side_text(r, 0):>10} {side_text(r, 1):>10} "
                     f"{fmt_change(r.change_us):>11} {kernel_ratio(r):>7}  {r.status}"
                     + (" [≈]" if r.match == "short_name+backend" else "")
                     for r in k.head(top).itertuples())
        if len(k) > top:
            lines.append(f"  … and {len(k) - top} more (comparison.kernels has them all)")
        counts = k["status"].value_counts()
        lines.append("  " + ", ".join(f"{int(counts[s])} {s}" for s in
                                       ("slower", "faster", "within noise", "same", "new", "gone")
                                       if s in counts))
        if (k["match"] == "short_name+backend").any():
            lines.append(f"  [≈] {MATCHES['short_name+backend']}; –: did not run on that side")
    if len(c.backends):
        lines.append("")
        lines.append(f"  {'backend':<12} {_clip(lb, 10):>10} {_clip(la, 10):>10} {'change':>11} {'ratio':>7}")
        lines.extend(f"  {_clip(r.backend, 12):<12} {fmt_us(r.total_before_us):>10} "
                     f"{fmt_us(r.total_after_us):>10} {fmt_change(r.change_us):>11} {fmt_ratio(r.ratio):>7}"
                     for r in c.backends.itertuples())
    return "\n".join(lines)


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


def _bar(change, scale, status) -> str:
    """A diverging bar: faster grows left of the centre line (green), slower right (red)."""
    if not scale or change != change:
        return ""
    w = min(50.0, abs(change) / scale * 50.0)
    color = NEUTRAL if status in ("within noise", "same") else SLOWER if change > 0 else FASTER
    left = 50.0 - w if change < 0 else 50.0
    return ("<div style='position:relative;width:160px;height:12px;background:transparent'>"
            "<div style='position:absolute;left:50%;top:0;bottom:0;border-left:1px solid #888'></div>"
            f"<div style='position:absolute;left:{left:.2f}%;width:{w:.2f}%;top:2px;height:8px;"
            f"background:{color}'></div></div>")


def comparison_html(c) -> str:
    """The comparison as self-contained HTML, every kernel row (no JavaScript; the interactive
    view is :mod:`kernelscope.view.compare`); every kernel name, backend and label is escaped.

    >>> "<script>" in comparison_html(c)
    False
    """
    lb, la = (escape(str(x)) for x in c.labels)
    num = "text-align:right;padding:1px 6px;white-space:nowrap;font-variant-numeric:tabular-nums"
    td, th = f"<td style='{num}'>", f"<th style='{num}'>"
    left = "text-align:left;padding:1px 6px"
    head_rows = []
    for r in c.overall.itertuples():
        sig = ""
        if r.significant is not pd.NA and r.significant is not None:
            sig = (f" <span title='run-to-run noise'>(noise {escape(metric_text(r.metric, r.noise))}"
                   f"{'' if r.significant else ', within noise'})</span>")
        head_rows.append(f"<tr><td style='{left}'>{escape(r.label)}</td>{td}{escape(metric_text(r.metric, r.before))}</td>"
                         f"{td}{escape(metric_text(r.metric, r.after))}</td>"
                         f"{td}{escape(metric_change(r.metric, r.change))}</td>"
                         f"{td}{escape(fmt_ratio(r.ratio))}{sig}</td></tr>")
    k = c.kernels
    scale = float(k["change_us"].abs().max()) if len(k) else 0.0
    krows = []
    for r in k.itertuples():
        names = sorted(set(r.names_before) | set(r.names_after)) or [r.name]
        title = escape("\n".join(str(n) for n in names), quote=True)
        badge = ""
        if r.status in ("new", "gone", "within noise"):
            badge = (f" <b style='font-size:80%' title='{escape(STATUSES[r.status], quote=True)}'>"
                     f"[{escape(r.status)}]</b>")
        elif r.match == "short_name+backend":
            badge = f" <span style='font-size:80%' title='≈: {escape(MATCHES[r.match], quote=True)}'>[≈]</span>"
        krows.append(
            f"<tr><td style='{left}' title='{title}'>{escape(str(r.short_name))}{badge}</td>"
            f"<td style='{left}'>{escape(str(r.backend))}</td>"
            f"{td}{escape(fmt_launches(r))}</td>"
            f"{td}{escape(side_text(r, 0))}</td>{td}{escape(side_text(r, 1))}</td>"
            f"{td}{escape(fmt_change(r.change_us))}</td>{td}{escape(kernel_ratio(r))}</td>"
            f"<td>{_bar(r.change_us, scale, r.status)}</td></tr>")
    brows = "".join(
        f"<tr><td style='{left}'>{escape(str(r.backend))}</td>{td}{escape(fmt_us(r.total_before_us) if r.total_before_us else ABSENT)}</td>"
        f"{td}{escape(fmt_us(r.total_after_us) if r.total_after_us else ABSENT)}</td>{td}{escape(fmt_change(r.change_us))}</td>"
        f"{td}{escape(fmt_ratio(r.ratio) if r.total_before_us and r.total_after_us else ABSENT)}</td></tr>"
        for r in c.backends.itertuples())
    shared = getattr(c, "shared", {}) or {}
    notes = list(c.notes)
    warn = ""
    if shared.get("few") and notes:
        warn = f"<p style='color:#a40e26'><b>{escape(notes.pop(0))}</b></p>"
    notes = "".join(f"<p><i>{escape(n)}</i></p>" for n in [c.noise_note, *notes])
    legend = ("<p style='font-size:90%'>[≈] " + escape(MATCHES["short_name+backend"])
              + "; [new] " + escape(STATUSES["new"]) + "; [gone] " + escape(STATUSES["gone"])
              + "; – : did not run on that side.</p>")
    return (
        "<div class='kernelscope-compare'>"
        f"<p><b>kernelscope comparison</b>: {lb} → {la}{escape(_runs_note(c))}</p>{warn}"
        f"<table><thead><tr><th></th>{th}{lb}</th>{th}{la}</th>{th}change</th>{th}ratio</th></tr></thead>"
        f"<tbody>{''.join(head_rows)}</tbody></table>{notes}"
        f"<table><thead><tr><th style='{left}'>kernel</th><th style='{left}'>backend</th>{th}launches</th>"
        f"{th}{lb}</th>{th}{la}</th>{th}change</th>{th}ratio</th><th>faster ← → slower</th></tr></thead>"
        f"<tbody>{''.join(krows)}</tbody></table>{legend}"
        f"<table style='margin-top:10px'><thead><tr><th style='{left}'>backend</th>{th}{lb}</th>{th}{la}</th>"
        f"{th}change</th>{th}ratio</th></tr></thead><tbody>{brows}</tbody></table></div>")
