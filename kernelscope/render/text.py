"""A report as plain text, for terminals and ``text/plain``."""
from __future__ import annotations

import re

from kernelscope.analysis.priorities import what_to_fix
from kernelscope.analysis.replay import capabilities
from kernelscope.units import fmt_us

__all__ = ["fmt_us", "printable", "report_text"]


def clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def report_text(rep, top: int = 10) -> str:
    """The report's headline, top kernels and findings as text.

    >>> print(report_text(ks.load("launch_bound.pt.trace.json.gz")))
    kernelscope report: launch_bound.pt.trace.json.gz
      source: launch_bound.pt.trace.json.gz
      devices: NVIDIA H200 (sm_90, 132 SMs)
      wall time (profiler span): 28.49 ms   kernels: 2,000 launches of 2 kernels   GPU kernel time: 1.84 ms   copies + memsets: 0
    <BLANKLINE>
      kernel                                           backend    launches      total       mean     median        min        max    std dev  share
    ...
    """
    k = rep.kernels
    m = rep.meta
    lines = []
    title = f"kernelscope report: {rep.title}" + (" (PARTIAL: the run stopped early)" if rep.partial else "")
    lines.append(title)
    src = m.get("source")
    if src and not str(src).startswith("<"):
        lines.append(f"  source: {src}")
    devs = rep.devices
    if len(devs):
        lines.append("  devices: " + ", ".join(
            f"{r.name} (sm_{r.compute_major}{r.compute_minor}, {r.num_sms} SMs)" for r in devs.itertuples()))
    caps = capabilities(rep.meta)
    if caps["kind"] == "replay":
        lines.append(f"  Nsight Compute replay: {len(k):,} launches of {k['name'].nunique():,} kernels   "
                     f"kernel time: {fmt_us(rep.gpu_time_us)} ({caps['durations']})")
    else:
        clock = f" ({rep.wall_time_clock})" if rep.wall_time_clock else ""
        lines.append(f"  wall time{clock}: {fmt_us(rep.wall_time_us)}   kernels: {len(k):,} launches of "
                     f"{k['name'].nunique():,} kernels   GPU kernel time: {fmt_us(rep.gpu_time_us)}"
                     f"   copies + memsets: {len(rep.copies):,}")
    for note in rep.notes:
        lines.append(f"  note: {note}")
    if len(k):
        s = rep.summary().head(top)
        lines.append("")
        # The columns of rep.summary() and of the view's kernel table (its "statistics" columns).
        lines.append(f"  {'kernel':<48} {'backend':<10} {'launches':>8} {'total':>10} {'mean':>10} {'median':>10} "
                     f"{'min':>10} {'max':>10} {'std dev':>10} {'share':>6}")
        for r in s.itertuples():
            lines.append(f"  {clip(r.short_name, 48):<48} {clip(r.backend, 10):<10} {r.launches:>8,} "
                         f"{fmt_us(r.total_us):>10} {fmt_us(r.mean_us):>10} {fmt_us(r.median_us):>10} "
                         f"{fmt_us(r.min_us):>10} {fmt_us(r.max_us):>10} {fmt_us(r.std_us):>10} {r.share:>6.1%}")
        more = k["name"].nunique() - len(s)
        if more > 0:
            lines.append(f"  … and {more} more kernels (rep.summary() has them all)")
        lines += _measured_lines(rep, s["name"].tolist()[:5])
    base_us, of = rep.time_base
    fixes = what_to_fix(rep.findings, base_us, of=of)
    if fixes:
        lines.append("")
        lines.append(f"  what to fix first (time at stake, share of {of}):" if fixes[0]["cost_us"] is not None
                     else "  findings:")
        for x in fixes:
            cost = f" {x['cost_text']}, {x['share_text']}:" if x["cost_text"] else ""
            lines.append(f"  {x['rank']}. [{x['severity']}]{cost} {x['title']}")
            if x["cause"]:
                lines.append(f"     cause: {x['cause']}")
            if x["fix"]:
                lines.append(f"     fix:   {x['fix']}")
            if x.get("note"):
                lines.append(f"     note:  {x['note']}")
        if len(rep.findings) > len(fixes):
            lines.append(f"  ({len(rep.findings)} findings in all: rep.findings)")
    return printable("\n".join(lines))


def _measured_lines(rep, names) -> list:
    """Hardware counters (PM sampling) and live warp stalls of the top kernels, when recorded."""
    k = rep.kernels
    out = []
    if "tensor_pct" in k.columns and len(getattr(rep, "metrics", ())):
        from kernelscope.analysis.counters import kernel_counters
        c = rep.meta.get("counters") or {}
        iv = c.get("interval_us")
        kc = kernel_counters(k).set_index("name")
        out += ["", f"  hardware counters ({c.get('source') or 'CUPTI PM sampling'}"
                    + (f", every {iv:.0f} us" if iv else "") + ", time-weighted per kernel):",
                f"  {'kernel':<48} {'SMs active':>10} {'tensor':>7} {'DRAM':>6} {'DRAM GB/s':>10}"]
        for n in names:
            if n not in kc.index:
                continue
            r = kc.loc[n]
            f = lambda v, u="%": "-" if v != v else f"{v:.0f}{u}"  # noqa: E731
            out.append(f"  {clip(r.get('short_name', n), 48):<48} {f(r['sm_active_pct']):>10} "
                       f"{f(r['tensor_pct']):>7} {f(r['dram_pct']):>6} {f(r['dram_gbps'], ''):>10}")
    if "top_stall" in k.columns and len(getattr(rep, "stalls", ())):
        src = ", ".join(sorted({str(x) for x in rep.stalls["source"].dropna()}))
        first = k.drop_duplicates("name").set_index("name")
        rows = [(first.loc[n, "short_name"], first.loc[n, "top_stall"]) for n in names
                if n in first.index and isinstance(first.loc[n, "top_stall"], str)]
        if rows:
            out += ["", f"  top warp stall ({src}): " + "; ".join(f"{clip(a, 40)}: {b}" for a, b in rows)]
    return out


# Control characters (C0 but tab and newline, DEL, C1): a kernel or file name carrying a terminal
# escape (ESC ] title, ESC [2J) would otherwise act on the terminal that prints the report.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""``text`` with control characters shown as U+FFFD, so that printing it cannot drive the terminal.

    >>> printable("k\x1b]0;pwned\x07 ok\n")
    'k\ufffd]0;pwned\ufffd ok\n'
    """
    return _CONTROL.sub("\ufffd", text)
