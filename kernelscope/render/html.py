"""A report as static, self-contained HTML (GitHub, nbconvert, no kernel, no JavaScript): the
panels (``kernelscope.panels``) written as markup.

Every piece of recorded text (kernel names, ops, file names, findings) goes through
``html.escape``; styles are inline so that sanitizers that strip ``<style>`` keep the layout.
"""
from __future__ import annotations

from html import escape

from kernelscope.panels import Panels, report_panels
from kernelscope.panels.fixes import fixes_heading
from kernelscope.panels.kernels import STATISTICS, backend_color
from kernelscope.units import fmt_pct, fmt_us

# Kernels listed when no display option says how many.
TOP = 20
# Inline styles (notebook sanitizers and GitHub drop <style> blocks), kept short: every cell of
# every saved report carries them. Row rules sit on the <tr>, tabular digits on the <table>.
_CELL = "padding:2px 8px;"
_NUM = _CELL + "text-align:right;"
_TR = "<tr style='border-bottom:1px solid #ddd'>"
_TABLE = "border-collapse:collapse;font-variant-numeric:tabular-nums;"
_MUTED = "color:#666;"


def _e(v) -> str:
    return escape("-" if v is None else str(v), quote=True)


def report_html(rep, top: int | None = None) -> str:
    """A static HTML summary of the report: headline numbers, the ``top`` kernels with their
    share, occupancy and backend, the backend breakdown and the findings. Names are escaped.

    >>> "<script>" in report_html(rep)
    False
    """
    p = report_panels(rep)
    return (
        "<div class='kernelscope-static' style='font-family:system-ui,sans-serif;font-size:13px'>"
        + _head(p) + _findings(p) + _kernels(p, TOP if top is None else top) + _graphs(p) + _memory(p) + _ncu(p)
        + _backends(p)
        + f"<p style='{_MUTED}font-size:11px'>Static view. The interactive report (timeline, occupancy, "
          "roofline) shows in JupyterLab with kernelscope installed, with or without a kernel.</p></div>"
    )


def _head(p: Panels) -> str:
    """The title line, the headline tiles and the report's notes."""
    h, s = p.header, p.header.stats
    clock = f" ({s['wall_clock']})" if s["wall_clock"] else ""
    stats = [(f"wall time{clock}", fmt_us(s["wall_us"])), ("GPU busy", fmt_pct(s["gpu_busy"])),
             ("kernel launches", f"{s['launches']:,}"), ("kernels", f"{s['kernels']:,}"),
             ("GPU kernel time", fmt_us(s["gpu_time_us"])), ("copies + memsets", f"{s['copies']:,}")]
    # The tiles a replay can fill (analysis/replay.py), as the interactive view shows them.
    stats = [(n, v) for n, v in stats if n.split(" (")[0] in h.capabilities["tiles"]]
    tiles = " &nbsp; ".join(f"<span><b>{v}</b> <span style='{_MUTED}'>{n}</span></span>" for n, v in stats)
    devs = ", ".join(_e(d) for d in h.device_texts())
    title = (f"<b>kernelscope</b> <span style='{_MUTED}'>{_e(h.title)}"
             f"{' · ' + devs if devs else ''}</span>"
             + (" <b style='color:#a40e26'>(partial: the run stopped early)</b>" if h.partial else ""))
    notes = "".join(f"<li>{_e(n)}</li>" for n in p.notes)
    ledger = (f"<div class='ks-ledger' style='{_MUTED}margin:2px 0'>recording: {_e(h.completeness['line'])}</div>"
              if h.completeness else "")
    return (f"<div>{title}</div><div style='margin:4px 0'>{tiles}</div>" + ledger
            + (f"<ul style='{_MUTED}margin:2px 0'>{notes}</ul>" if notes else ""))


def _kernels(p: Panels, top: int) -> str:
    """The costliest kernels: statistics, share bar, occupancy, measured counters, top stall."""
    t = p.kernel_table
    s = t.top(top)
    rows = [_kernel_row(t, r) for r in s.to_dict("records")]
    head = "".join(f"<th style='{_CELL}text-align:left'>{h}</th>" for h in
                   ("kernel", "backend", "launches", *[label for _, label in STATISTICS], "share",
                    "occupancy", *[d.short for d in t.counter_tracks if d.unit == "%"],
                    *(["top stall"] if t.stall_source else [])))
    table = (f"<table style='{_TABLE}margin:6px 0'><thead>{_TR}{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>" if rows else "<p>No GPU kernels were recorded.</p>")
    if t.distinct > len(s):
        table += f"<p style='{_MUTED}'>… and {t.distinct - len(s)} more kernels (rep.summary() has them all)</p>"
    if t.counters is not None:
        names = ", ".join(d.short for d in t.counter_tracks if d.unit == "%")
        every = f" every {t.counter_interval_us:.0f} us" if t.counter_interval_us else ""
        table += (f"<p style='{_MUTED}'>{names}: measured by {_e(t.counter_source)}{every}, GPU-wide, "
                  "time-weighted per kernel.</p>")
    if t.stall_source:
        table += f"<p style='{_MUTED}'>Top stall: {_e(t.stall_source)}.</p>"
    return table


def _kernel_row(t, r: dict) -> str:
    f = t.facts.get(r["name"], {})
    o = f.get("theoretical_occupancy")
    occ, lim = (fmt_pct(o, 0), f.get("occupancy_limiter") or "") if o is not None and o == o else ("-", "")
    # the share bar in the kernel's backend colour, as the widget draws it
    bar = (f"<span style='display:inline-block;height:8px;width:{max(1, round(r['share'] * 60))}px;"
           f"background:{backend_color(r['backend'])}'></span>")
    return (f"{_TR}<td style='{_CELL}' title='{_e(r['name'])}'>{_e(r['short_name'])}</td>"
            f"<td style='{_CELL}'>{_e(r['backend'])}</td><td style='{_NUM}'>{r['launches']:,}</td>"
            + "".join(f"<td style='{_NUM}'>{fmt_us(r[c])}</td>" for c, _ in STATISTICS)
            + f"<td style='{_NUM}'>{bar} {fmt_pct(r['share'])}</td>"
            f"<td style='{_NUM}' title='{_e(lim)}'>{occ}</td>"
            + "".join(f"<td style='{_NUM}'>{fmt_pct(t.counter(r['name'], d.column), 0, scale=100)}</td>"
                      for d in t.counter_tracks if d.unit == "%")
            + (f"<td style='{_CELL}'>{_e(f.get('top_stall'))}</td>" if t.stall_source else "")
            + "</tr>")


def _graphs(p: Panels) -> str:
    """The CUDA graphs replayed (labels, tooltips and cells: panels/graphs.py), escaped."""
    g = p.graphs
    if not g:
        return ""
    cols = g["columns"]
    head = "".join(f"<th style='{_CELL}text-align:left' title='{_e(c['tip'])}'>{_e(c['label'])}</th>" for c in cols)
    rows = "".join(_TR + "".join(f"<td style='{_NUM if c['num'] else _CELL}'>{_e(r['text'][c['key']])}</td>"
                                 for c in cols) + "</tr>" for r in g["rows"])
    return (f"<div class='ks-graphs' style='margin-top:6px'><b>{_e(g['title'])}</b>"
            f"<table style='{_TABLE}margin:2px 0 6px'><thead>{_TR}{head}</tr></thead><tbody>{rows}</tbody></table></div>")


def _memory(p: Panels) -> str:
    """The memory section (panels/memory.py): the peak, what held it, steps, leak, fragmentation, escaped.

    >>> "what held the peak" in _memory(report_panels(ks.load("training/lm_steps.pt.trace.json.gz")))
    True
    """
    m = p.memory
    if not m:
        return ""
    li = "".join(f"<li>{_e(h['text'])}</li>" for h in m["held"])
    more = "".join(f"<div style='font-size:12px'><span style='{_MUTED}'>{label}</span> {_e(m[key])}</div>"
                   for label, key in (("Steps", "steps"), ("Leak", "leak"), ("Fragmentation", "fragmentation"))
                   if m.get(key))
    return (f"<div class='ks-memory' style='margin-top:6px'><b>Memory</b> {_e(m['headline'])}"
            f"<div style='font-size:12px'>what held the peak:</div><ul style='margin:2px 0 4px'>{li}</ul>{more}"
            f"<div style='{_MUTED}font-size:11px'>from {_e(m['where_from'])}</div></div>")


def _ncu(p: Panels) -> str:
    from kernelscope.render.kernel import kernel_detail_html
    try:
        return kernel_detail_html(p.rep, detail=p.kernel_detail)
    except (KeyError, TypeError, ValueError, IndexError):   # a damaged deep dive: the static view shows the rest
        return ""


def _findings(p: Panels) -> str:
    """What to fix first: the first screen's list (analysis/priorities.py), as the view shows it."""
    items = p.fixes
    if not items:
        return ""
    muted = f"<span style='{_MUTED}'>"
    li = "".join(
        f"<li><b>[{_e(x['severity'])}]</b>"
        + (f" <b>{_e(x['cost_text'])}</b> {muted}{_e(x['share_text'])}</span>" if x["cost_text"] else "")
        + f" {_e(x['title'])}"
        + "".join(f"<div style='font-size:12px'>{muted}{label}</span> {_e(x[key])}</div>"
                  for label, key in (("Cause", "cause"), ("Fix", "fix"), ("Note", "note")) if x.get(key))
        + "</li>" for x in items)
    return (f"<div style='margin-top:6px'><b>{fixes_heading(items)}</b></div>"
            f"<ol style='padding-left:20px;margin:2px 0 6px'>{li}</ol>")


def _backends(p: Panels) -> str:
    b = p.backends
    if not b:
        return ""
    rows = "".join(
        f"{_TR}<td style='{_CELL}'>{_e(r.get('device'))}</td><td style='{_CELL}'>{_e(r.get('backend'))}</td>"
        f"<td style='{_NUM}'>{r.get('launches'):,}</td><td style='{_NUM}'>{fmt_us(r.get('gpu_time_us'))}</td>"
        f"<td style='{_NUM}'>{fmt_pct(r.get('share'))}</td><td style='{_NUM}'>{fmt_pct(r.get('kernel_share'))}</td></tr>"
        for r in b)
    head = "".join(f"<th style='{_CELL}text-align:left'>{h}</th>" for h in
                   ("device", "backend", "launches", "GPU time", "share of GPU time", "share of kernel time"))
    return (f"<details><summary>Backends</summary><table style='{_TABLE}'>"
            f"<thead>{_TR}{head}</tr></thead><tbody>{rows}</tbody></table></details>")
