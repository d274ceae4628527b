"""A comparison of two runs (:class:`kernelscope.comparison.Comparison`) as text and HTML."""
from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from ..units import fmt_us


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


def comparison_text(c, top: int = 15) -> str:
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


def comparison_html(c, top: int = 50) -> str:
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
