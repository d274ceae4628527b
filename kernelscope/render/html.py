"""A report as static, self-contained HTML (GitHub, nbconvert, no kernel)."""
from __future__ import annotations

from html import escape

from .text import fmt_us


def report_html(rep, top: int = 20) -> str:
    """A static HTML summary of the report; every name is escaped.

    >>> "<script>" in report_html(rep)     # doctest: +SKIP
    False
    """
    k = rep.kernels
    rows = []
    for r in rep.summary().head(top).itertuples():
        rows.append(
            f"<tr><td title='{escape(str(r.name), quote=True)}'>{escape(str(r.short_name))}</td>"
            f"<td>{escape(str(r.backend))}</td><td style='text-align:right'>{r.launches}</td>"
            f"<td style='text-align:right'>{fmt_us(r.total_us)}</td>"
            f"<td style='text-align:right'>{fmt_us(r.mean_us)}</td>"
            f"<td style='text-align:right'>{r.share:.1%}</td></tr>")
    head = (f"<b>kernelscope</b>{' <b>(partial)</b>' if rep.partial else ''}: "
            f"{len(k)} launches, {k['name'].nunique()} kernels, GPU kernel time {fmt_us(rep.gpu_time_us)}, "
            f"wall {fmt_us(rep.wall_time_us)}")
    findings = "".join(f"<li>[{escape(str(f.severity))}] {escape(str(f.title))}</li>" for f in rep.findings[:5])
    return (
        "<div class='kernelscope-static'>"
        f"<p>{head}</p>"
        "<table><thead><tr><th>kernel</th><th>backend</th><th>launches</th><th>total</th><th>mean</th>"
        f"<th>share</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{'<ul>' + findings + '</ul>' if findings else ''}</div>"
    )
