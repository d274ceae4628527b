"""A report as plain text, for terminals and ``text/plain``."""
from __future__ import annotations

from ..units import fmt_us

__all__ = ["fmt_us", "report_text"]


def _clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def report_text(rep, top: int = 10) -> str:
    """The report's headline, top kernels and findings as text.

    >>> print(report_text(ks.load("launch_bound.pt.trace.json.gz")))   # doctest: +SKIP
    """
    k = rep.kernels
    m = rep.meta
    lines = []
    title = "kernelscope report" + (" (PARTIAL: the run stopped early)" if rep.partial else "")
    lines.append(title)
    src = m.get("source")
    if src:
        lines.append(f"  source: {src}")
    devs = rep.devices
    if len(devs):
        lines.append("  devices: " + ", ".join(
            f"{r.name} (sm_{r.compute_major}{r.compute_minor}, {r.num_sms} SMs)" for r in devs.itertuples()))
    lines.append(f"  wall time: {fmt_us(rep.wall_time_us)}   kernels: {len(k)} launches of "
                 f"{k['name'].nunique()} kernels   GPU kernel time: {fmt_us(rep.gpu_time_us)}"
                 f"   copies: {len(rep.copies)}")
    for note in rep.notes:
        lines.append(f"  note: {note}")
    if len(k):
        s = rep.summary().head(top)
        lines.append("")
        lines.append(f"  {'kernel':<48} {'backend':<10} {'launches':>8} {'total':>10} {'mean':>10} {'share':>6}")
        for r in s.itertuples():
            lines.append(f"  {_clip(r.short_name, 48):<48} {_clip(r.backend, 10):<10} {r.launches:>8} "
                         f"{fmt_us(r.total_us):>10} {fmt_us(r.mean_us):>10} {r.share:>6.1%}")
        more = k["name"].nunique() - len(s)
        if more > 0:
            lines.append(f"  … and {more} more kernels (rep.summary() has them all)")
    findings = rep.findings
    if findings:
        lines.append("")
        lines.append("  findings (most costly first):")
        for f in findings[:5]:
            lines.append(f"  [{f.severity}] {f.title}")
    return "\n".join(lines)
