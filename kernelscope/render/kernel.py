"""The kernel deep dive (:mod:`kernelscope.analysis.kernel_detail`) as text and static HTML."""
from __future__ import annotations

from kernelscope.analysis.kernel_detail import MEASURED, kernel_detail
from kernelscope.units import fmt_pct, fmt_us


# -- text -----------------------------------------------------------------------------------------
def kernel_detail_text(rep, top: int = 5) -> str:
    """The deep dive of the ``top`` longest profiled launches as text (the CLI prints it).

    >>> print(kernel_detail_text(ncu))
    <BLANKLINE>
      strided_kernel  (295.3 us, launch 1, measured by Nsight Compute)
        speed of light: memory-bound: memory throughput is at 69% of peak, compute at 3%
        occupancy: achieved 83.6% of theoretical 100.0% (limited by registers+warps)
        roofline: FP32 0.06 TFLOP/s of 66.81; memory-bound (speed of light: memory at 69% of peak, L2 the
        busiest at 94%). At DRAM: 0.0171 FLOP/byte, left of the ridge (13.9), 69.1% of the attainable FP32 roof.
        memory: DRAM 69.1% of peak, L1 hit 0.0%, L2 hit 17.9%, global load 32.0 sectors/request
    ...
    """
    d = kernel_detail(rep)
    if not d:
        return ""
    lines = []
    for e in list(d["launches"].values())[:top]:
        lines.append("")
        lines.append(f"  {e['kernel_name'][:110]}  ({fmt_us(e['duration_us'])}, launch {e['id']}, {MEASURED})")
        sol = e["sol"]
        if sol.get("verdict"):
            lines.append(f"    speed of light: {sol['verdict']}")
        occ = e["occupancy"]
        if occ.get("achieved") is not None:
            theo = occ.get("theoretical", occ.get("theoretical_ncu"))
            lines.append(f"    occupancy: achieved {fmt_pct(occ['achieved'])} of theoretical {fmt_pct(theo)}"
                         + (f" (limited by {occ['limiter']})" if occ.get("limiter") else ""))
        roof = e["roofline"]
        if roof:
            dram = next((p for p in roof["points"] if p["level"] == "dram"), None)
            if dram and dram["flops_per_s"]:
                lines.append(f"    roofline: {roof['label']} {dram['flops_per_s'] / 1e12:.2f} TFLOP/s of "
                             f"{(roof['peak_flops_per_s'] or 0) / 1e12:.2f}; {roof.get('verdict') or ''}")
        mem = e["memory"]
        lines.append(f"    memory: DRAM {_one_decimal(mem['dram_pct'])}% of peak, L1 hit {_one_decimal(mem['l1_hit_pct'])}%, "
                     f"L2 hit {_one_decimal(mem['l2_hit_pct'])}%, global load {_one_decimal(mem.get('load_sectors_per_request'))} "
                     f"sectors/request")
        if mem.get("verdict"):
            lines.append(f"    {mem['verdict']}")
        bars = e["stalls"]["bars"][:3]
        if bars:
            lines.append("    stalls: " + ", ".join(f"{b['reason']} {b['share']:.0%}" for b in bars)
                         + f" (top: {bars[0]['title']}; usually fixed by: {bars[0]['fix']})")
        for h in e["hotspots"][:3]:
            text = f"  {h['text'].strip()[:70]}" if h.get("text") else ""
            lines.append(f"    hot spot {h['location']}: {fmt_pct(h['share'])} of samples, mostly "
                         f"{h['top_stall'] or '-'}{text}")
        for a in e["advice"][:3]:
            sp = f" (est. speedup {a['speedup_pct']:.0f}%{', local' if a['speedup_type'] == 'local' else ''})" \
                if a.get("speedup_pct") else ""
            lines.append(f"    Nsight Compute: {a['title'] or a['rule']}{sp}")
    if d.get("note"):
        lines.append(f"  ({d['note']})")
    return "\n".join(lines)


def _one_decimal(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def kernel_detail_html(rep, top: int = 8, detail: dict | None = None) -> str:
    """The deep dive's headline per profiled launch as static HTML (no JavaScript; every recorded
    text escaped): what bounds it, occupancy, top stall with its fix, the hottest line, the
    coalescing verdict. ``detail``: the report's deep dive (its panel), when at hand.

    >>> "<script>" in kernel_detail_html(rep)
    False
    """
    from html import escape

    d = kernel_detail(rep) if detail is None else detail
    if not d:
        return ""
    cell = "padding:2px 8px;border-bottom:1px solid #ddd;vertical-align:top;"
    e = lambda v: escape("-" if v is None else str(v), quote=True)   # noqa: E731
    rows = []
    for x in list(d["launches"].values())[:top]:
        occ = x["occupancy"]
        theo = occ.get("theoretical", occ.get("theoretical_ncu"))
        bars = x["stalls"]["bars"]
        stall = f"{bars[0]['reason']} {bars[0]['share']:.0%}: {bars[0]['fix']}" if bars else "-"
        hot = x["hotspots"][0] if x["hotspots"] else None
        hot_s = f"{hot['location']} ({hot['share']:.0%}) {(hot.get('text') or '').strip()}" if hot else "-"
        rows.append(
            f"<tr><td style='{cell}' title='{e(x['kernel_name'])}'>{e(x['kernel_name'][:60])}</td>"
            f"<td style='{cell}'>{e(fmt_us(x['duration_us']))}</td><td style='{cell}'>{e(x['sol'].get('verdict'))}</td>"
            f"<td style='{cell}'>{e(fmt_pct(occ.get('achieved')))} of {e(fmt_pct(theo))}</td>"
            f"<td style='{cell}'>{e(stall)}</td><td style='{cell}'>{e(hot_s)}</td>"
            f"<td style='{cell}'>{e(x['memory'].get('verdict') or '')}</td></tr>")
    head = "".join(f"<th style='{cell}text-align:left'>{h}</th>" for h in
                   ("kernel", "duration", "speed of light", "achieved / theoretical occupancy", "top stall",
                    "hottest line", "memory access"))
    return (f"<p style='margin:8px 0 2px'><b>Nsight Compute deep dive</b> <span style='color:#666'>({MEASURED}; "
            f"select a kernel in the interactive view for the roofline, SASS and advice)</span></p>"
            f"<table style='border-collapse:collapse;font-size:12px'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")
