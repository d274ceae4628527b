"""A report as static, self-contained HTML (GitHub, nbconvert, no kernel, no JavaScript).

Every piece of recorded text (kernel names, ops, file names, findings) goes through
``html.escape``; styles are inline so that sanitizers that strip ``<style>`` keep the layout.
"""
from __future__ import annotations

from html import escape

from kernelscope.analysis.backend_rules import BACKENDS
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.analysis.replay import capabilities
from kernelscope.units import fmt_us

# Inline styles (notebook sanitizers and GitHub drop <style> blocks), kept short: every cell of
# every saved report carries them. Row rules sit on the <tr>, tabular digits on the <table>.
_CELL = "padding:2px 8px;"
_NUM = _CELL + "text-align:right;"
_TR = "<tr style='border-bottom:1px solid #ddd'>"
_TABLE = "border-collapse:collapse;font-variant-numeric:tabular-nums;"
_MUTED = "color:#666;"


def _e(v) -> str:
    return escape("-" if v is None else str(v), quote=True)


def _pct100(x) -> str:
    return "-" if x is None or x != x else f"{x:.0f}%"


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:.1%}"


def report_html(rep, top: int = 20) -> str:
    """A static HTML summary of the report: headline numbers, the top kernels with their
    share, occupancy and backend, the backend breakdown and the findings. Names are escaped.

    >>> "<script>" in report_html(rep)
    False
    """
    k = rep.kernels
    s = rep.summary().head(top)
    first = k.drop_duplicates("name").set_index("name") if len(k) else None
    busy = _busy(rep)
    measured = [c for c in ("sm_active_pct", "tensor_pct", "dram_pct") if c in k.columns] if len(rep.metrics) else []
    kc = None
    if measured:
        from kernelscope.analysis.counters import kernel_counters
        kc = kernel_counters(k).set_index("name")
    stall = "top_stall" in k.columns and len(rep.stalls) > 0
    rows = []
    for r in s.itertuples():
        occ, lim = "-", ""
        if first is not None and r.name in first.index:
            f = first.loc[r.name]
            o = f.get("theoretical_occupancy")
            if o is not None and o == o:
                occ = f"{o:.0%}"
                lim = f.get("occupancy_limiter") or ""
        # the share bar in the kernel's backend colour, as the widget draws it
        colour = BACKENDS.get(str(r.backend), BACKENDS["other"])
        bar = f"<span style='display:inline-block;height:8px;width:{max(1, round(r.share * 60))}px;background:{colour}'></span>"
        rows.append(
            f"{_TR}<td style='{_CELL}' title='{_e(r.name)}'>{_e(r.short_name)}</td>"
            f"<td style='{_CELL}'>{_e(r.backend)}</td><td style='{_NUM}'>{r.launches:,}</td>"
            f"<td style='{_NUM}'>{fmt_us(r.total_us)}</td><td style='{_NUM}'>{fmt_us(r.mean_us)}</td>"
            + "".join(f"<td style='{_NUM}'>{fmt_us(v)}</td>" for v in (r.median_us, r.min_us, r.max_us, r.std_us))
            + f"<td style='{_NUM}'>{bar} {_pct(r.share)}</td>"
            f"<td style='{_NUM}' title='{_e(lim)}'>{occ}</td>"
            + "".join(f"<td style='{_NUM}'>{_pct100(kc.loc[r.name, c] if kc is not None and r.name in kc.index else None)}</td>"
                      for c in measured)
            + (f"<td style='{_CELL}'>{_e(first.loc[r.name].get('top_stall') if first is not None and r.name in first.index else None)}</td>"
               if stall else "")
            + "</tr>")
    more = k["name"].nunique() - len(s) if len(k) else 0
    labels = {"sm_active_pct": "SMs active", "tensor_pct": "tensor", "dram_pct": "DRAM"}
    head = "".join(f"<th style='{_CELL}text-align:left'>{h}</th>" for h in
                   ("kernel", "backend", "launches", "total", "mean", "median", "min", "max", "std dev", "share", "occupancy",
                    *[labels[c] for c in measured], *(["top stall"] if stall else [])))
    table = (f"<table style='{_TABLE}margin:6px 0'><thead>{_TR}{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>" if rows else "<p>No GPU kernels were recorded.</p>")
    if more > 0:
        table += f"<p style='{_MUTED}'>… and {more} more kernels (rep.summary() has them all)</p>"
    if measured:
        c = rep.meta.get("counters") or {}
        table += (f"<p style='{_MUTED}'>SMs active, tensor and DRAM: measured by {_e(c.get('source') or 'CUPTI PM sampling')}"
                  + (f" every {c['interval_us']:.0f} us" if isinstance(c.get("interval_us"), (int, float)) else "")
                  + ", GPU-wide, time-weighted per kernel.</p>")
    if stall:
        table += (f"<p style='{_MUTED}'>Top stall: {_e(', '.join(sorted({str(x) for x in rep.stalls['source'].dropna()})))}."
                  "</p>")

    clock = f" ({rep.wall_time_clock})" if rep.wall_time_clock else ""
    caps = capabilities(rep.meta)
    stats = [(f"wall time{clock}", fmt_us(rep.wall_time_us)), ("GPU busy", _pct(busy)),
             ("kernel launches", f"{len(k):,}"),
             ("kernels", f"{k['name'].nunique():,}" if len(k) else "0"), ("GPU kernel time", fmt_us(rep.gpu_time_us)),
             ("copies + memsets", f"{len(rep.copies):,}")]
    # The tiles a replay can fill (analysis/replay.py), as the interactive view shows them.
    stats = [(n, v) for n, v in stats if n.split(" (")[0] in caps["tiles"]]
    tiles = " &nbsp; ".join(f"<span><b>{v}</b> <span style='{_MUTED}'>{n}</span></span>" for n, v in stats)
    devs = ", ".join(f"{_e(d.name)} (sm_{_e(d.compute_major)}{_e(d.compute_minor)}, {_e(d.num_sms)} SMs)"
                     for d in rep.devices.itertuples())
    title = (f"<b>kernelscope</b> <span style='{_MUTED}'>{_e(rep.title)}"
             f"{' · ' + devs if devs else ''}</span>"
             + (" <b style='color:#a40e26'>(partial: the run stopped early)</b>" if rep.partial else ""))
    notes = "".join(f"<li>{_e(n)}</li>" for n in rep.notes)
    findings = _findings(rep)
    backends = _backends(rep)
    return (
        "<div class='kernelscope-static' style='font-family:system-ui,sans-serif;font-size:13px'>"
        f"<div>{title}</div><div style='margin:4px 0'>{tiles}</div>"
        + (f"<ul style='{_MUTED}margin:2px 0'>{notes}</ul>" if notes else "")
        + findings + table + _ncu(rep) + backends
        + f"<p style='{_MUTED}font-size:11px'>Static view. The interactive report (timeline, occupancy, "
          "roofline) shows in JupyterLab with kernelscope installed, with or without a kernel.</p></div>"
    )


def _ncu(rep) -> str:
    try:
        from kernelscope.render.kernel import kernel_detail_html
        return kernel_detail_html(rep)
    except Exception:  # noqa: BLE001 - a static view shows what it can
        return ""


def _busy(rep):
    try:
        from kernelscope.analysis.timeline import gpu_busy_share
        return gpu_busy_share(rep.timeline.device())
    except Exception:  # noqa: BLE001 - a static view shows "-" rather than fail
        return None


def _findings(rep) -> str:
    """What to fix first: the first screen's list (analysis/priorities.py), as the view shows it."""
    try:
        base_us, of = rep.time_base
        items = what_to_fix(rep.findings, base_us, of=of)
    except Exception:  # noqa: BLE001
        return ""
    if not items:
        return ""
    li = "".join(
        f"<li><b>[{_e(x['severity'])}]</b>"
        + (f" <b>{_e(x['cost_text'])}</b> <span style='{_MUTED}'>{_e(x['share_text'])}</span>" if x["cost_text"] else "")
        + f" {_e(x['title'])}"
        + (f"<div style='font-size:12px'><span style='{_MUTED}'>Cause</span> {_e(x['cause'])}</div>" if x["cause"] else "")
        + (f"<div style='font-size:12px'><span style='{_MUTED}'>Fix</span> {_e(x['fix'])}</div>" if x["fix"] else "")
        + (f"<div style='font-size:12px'><span style='{_MUTED}'>Note</span> {_e(x['note'])}</div>" if x.get("note") else "")
        + "</li>" for x in items)
    head = "What to fix first" if items[0]["cost_us"] is not None else "Findings"
    return f"<div style='margin-top:6px'><b>{head}</b></div><ol style='padding-left:20px;margin:2px 0 6px'>{li}</ol>"


def _backends(rep) -> str:
    try:
        b = rep.backends
    except Exception:  # noqa: BLE001
        return ""
    if not len(b):
        return ""
    rows = "".join(
        f"{_TR}<td style='{_CELL}'>{_e(r.get('device'))}</td><td style='{_CELL}'>{_e(r.get('backend'))}</td>"
        f"<td style='{_NUM}'>{r.get('launches'):,}</td><td style='{_NUM}'>{fmt_us(r.get('gpu_time_us'))}</td>"
        f"<td style='{_NUM}'>{_pct(r.get('share'))}</td><td style='{_NUM}'>{_pct(r.get('kernel_share'))}</td></tr>"
        for r in b.to_dict("records"))
    head = "".join(f"<th style='{_CELL}text-align:left'>{h}</th>" for h in
                   ("device", "backend", "launches", "GPU time", "share of GPU time", "share of kernel time"))
    return (f"<details><summary>Backends</summary><table style='{_TABLE}'>"
            f"<thead>{_TR}{head}</tr></thead><tbody>{rows}</tbody></table></details>")
