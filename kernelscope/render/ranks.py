"""A multi-rank report (``ks.load_ranks``) as text, static HTML and the browser's view model.

The view model has the single-rank report's shape (a JSON header plus one typed-array buffer,
``kernelscope.view.report``) with ``header["kind"] == "ranks"``: the lanes (merged busy
intervals per rank and kind) travel in the buffer, the small tables as records in the header.
``js/src/view/ranks.js`` draws it.
"""
from __future__ import annotations

from html import escape

from kernelscope.errors import printable
from kernelscope.render.text import clip, fmt_us
from kernelscope.units import fmt_bytes, fmt_pct

# Kernels listed per rank in the view (the costliest); rep.summary() has them all.
KERNELS_PER_RANK = 30
# Where each figure of the view comes from (shown as column titles).
SOURCES = {
    "compute_us": "union of the rank's non-NCCL kernel intervals, measured by CUPTI",
    "comm_us": "union of the rank's collectives (NCCL kernels by CUPTI, or host spans of gloo/MPI calls)",
    "exposed_comm_us": "communication while no compute ran on the rank (computed by kernelscope)",
    "work_us": "step time less exposed communication (computed by kernelscope)",
    "lag_us": "the slowest rank's work less the median of the others' (computed by kernelscope)",
    "busbw_gbps": "bus bandwidth, nccl-tests' definition, of the last-arriving rank's time (computed)",
    "link_gbps": "datasheet NVLink rate, one direction (ranks on one host)",
}


def _gbps(x) -> str:
    return "-" if x is None or x != x else f"{x:.2f} GB/s"


def ranks_text(rep, top: int = 8) -> str:
    """The multi-rank report as text: ranks, stragglers, collectives and findings.

    >>> print(ranks_text(ranks))
    kernelscope ranks report: 2 ranks (world size 2, gloo)
      rank host         device         steps       step    compute       comm    exposed hidden
         0 -            NVIDIA H200        3  102.96 ms    3.34 ms  293.14 ms  291.23 ms     1%
         1 -            NVIDIA H200        3  103.12 ms  166.11 ms  291.69 ms  131.99 ms    55%
    <BLANKLINE>
      slowest rank per step (most work = least waiting):
    ...
    """
    r = rep.ranks
    backends = ", ".join(sorted({str(b) for b in r["backend"].dropna()})) or "backend not recorded"
    lines = [f"kernelscope ranks report: {len(r)} ranks (world size {rep.world_size}, {backends})"]
    lines.append(f"  {'rank':>4} {'host':<12} {'device':<14} {'steps':>5} {'step':>10} {'compute':>10} "
                 f"{'comm':>10} {'exposed':>10} {'hidden':>6}")
    lines.extend(f"  {x.rank:>4} {clip(x.host or '-', 12):<12} {clip(x.device or '-', 14):<14} {x.steps:>5} "
                 f"{fmt_us(x.step_us):>10} {fmt_us(x.compute_us):>10} {fmt_us(x.comm_us):>10} "
                 f"{fmt_us(x.exposed_comm_us):>10} {fmt_pct(x.hidden_share, 0):>6}"
                 for x in r.head(64).itertuples())
    if len(r) > 64:
        lines.append(f"  … and {len(r) - 64} more ranks (rep.ranks)")
    s = rep.stragglers
    if len(s):
        lines.append("")
        lines.append("  slowest rank per step (most work = least waiting):")
        lines.extend(f"  {clip(x.step, 20):<20} rank {x.slowest_rank:<4} by {fmt_us(x.lag_us):>10} "
                     f"({fmt_pct(x.lag_share, 0)} of the step)" for x in s.head(top).itertuples())
    c = rep.comm_summary()
    if len(c):
        lines.append("")
        lines.append(f"  {'collective':<22} {'algo':<10} {'calls':>6} {'per call':>10} {'time/rank':>10} "
                     f"{'busbw':>12} {'of link':>7}")
        for x in c.head(top).itertuples():
            algo = "/".join(v for v in (x.algorithm, x.protocol) if v and v != "-") or "-"
            lines.append(f"  {clip(f'{x.backend} {x.kind} {x.dtype}', 22):<22} {clip(algo, 10):<10} "
                         f"{x.calls:>6.0f} {fmt_bytes(x.bytes_per_call):>10} {fmt_us(x.time_us):>10} "
                         f"{_gbps(x.busbw_gbps):>12} {fmt_pct(x.busbw_of_link, 0):>7}")
    if rep.findings:
        lines.append("")
        lines.append("  findings (most costly first):")
        lines.extend(f"  [{f.severity}] {f.title}" for f in rep.findings[:5])
    lines.extend(f"  note: {n}" for n in rep.notes)
    return printable("\n".join(lines))    # kernel and file names may carry terminal escapes


_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;"
_NUM = _CELL + "text-align:right;font-variant-numeric:tabular-nums;"
_MUTED = "color:#666;"


def _e(v) -> str:
    return escape("-" if v is None else str(v), quote=True)


def _table(head, rows) -> str:
    th = "".join(f"<th style='{_CELL}text-align:left' title='{_e(t)}'>{_e(h)}</th>" for h, t in head)
    body = "".join("<tr>" + "".join(f"<td style='{_NUM if num else _CELL}'>{_e(v)}</td>" for v, num in row) + "</tr>"
                   for row in rows)
    return f"<table style='border-collapse:collapse;margin:6px 0'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def ranks_html(rep) -> str:
    """The multi-rank report as static HTML (GitHub, nbconvert); every recorded text escaped.

    >>> "<script>" in ranks_html(ranks)
    False
    """
    r = rep.ranks
    ranks = _table([("rank", ""), ("host", ""), ("device", ""), ("steps", ""), ("step", "median step time"),
                    ("compute", SOURCES["compute_us"]), ("comm", SOURCES["comm_us"]),
                    ("exposed", SOURCES["exposed_comm_us"]), ("hidden", "share of communication compute hides")],
                   [[(x.rank, True), (x.host, False), (x.device, False), (x.steps, True), (fmt_us(x.step_us), True),
                     (fmt_us(x.compute_us), True), (fmt_us(x.comm_us), True), (fmt_us(x.exposed_comm_us), True),
                     (fmt_pct(x.hidden_share, 0), True)] for x in r.head(64).itertuples()])
    s = rep.stragglers
    strag = _table([("step", ""), ("slowest rank", "the rank with the most work"), ("lag", SOURCES["lag_us"]),
                    ("of step", ""), ("fastest rank", "")],
                   [[(x.step, False), (x.slowest_rank, True), (fmt_us(x.lag_us), True), (fmt_pct(x.lag_share, 0), True),
                     (x.fastest_rank, True)] for x in s.head(20).itertuples()]) if len(s) else ""
    c = rep.comm_summary()
    comm = _table([("collective", ""), ("algorithm", "from the NCCL kernel name"), ("calls", "per rank"),
                   ("bytes/call", ""), ("time/rank", ""), ("bus bw", SOURCES["busbw_gbps"]),
                   ("link", SOURCES["link_gbps"]), ("of link", "")],
                  [[(f"{x.backend} {x.kind} {x.dtype}", False),
                    ("/".join(v for v in (x.algorithm, x.protocol) if v and v != "-") or "-", False),
                    (f"{x.calls:.0f}", True), (fmt_bytes(x.bytes_per_call), True), (fmt_us(x.time_us), True),
                    (_gbps(x.busbw_gbps), True), (_gbps(x.link_gbps), True), (fmt_pct(x.busbw_of_link, 0), True)]
                   for x in c.head(20).itertuples()]) if len(c) else "<p>No collectives recorded.</p>"
    li = "".join(f"<li><b>[{_e(f.severity)}]</b> {_e(f.title)}<div style='{_MUTED}font-size:12px'>{_e(f.detail)}</div></li>"
                 for f in rep.findings[:5])
    notes = "".join(f"<li>{_e(n)}</li>" for n in rep.notes)
    return ("<div class='kernelscope-static kernelscope-ranks' style='font-family:system-ui,sans-serif;font-size:13px'>"
            f"<div><b>kernelscope</b> <span style='{_MUTED}'>{len(r)} ranks · world size {_e(rep.world_size)}</span></div>"
            + (f"<ul style='{_MUTED}margin:2px 0'>{notes}</ul>" if notes else "")
            + (f"<ol style='padding-left:20px;margin:6px 0'>{li}</ol>" if li else "")
            + ranks + strag + comm
            + f"<p style='{_MUTED}font-size:11px'>Static view. The interactive view (ranks as lanes, a rank "
              "selector) shows in JupyterLab with kernelscope installed.</p></div>")


