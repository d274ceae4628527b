"""The first screen of a report as data and as Markdown, for an agent, a script or a chat: the
headline, what to fix first and the costliest kernels, from the same panels every view formats."""
from __future__ import annotations

import re

from kernelscope.panels import report_panels
from kernelscope.panels.fixes import fixes_heading
from kernelscope.render.text import printable
from kernelscope.units import fmt_pct, fmt_us

# Kernels listed when no display option says how many.
TOP = 5
# What a fix item keeps of the view's (its evidence link, merged titles and ranks stay in the view).
_FIX_FIELDS = ("rank", "severity", "title", "cost_us", "share_of_wall", "cause", "fix", "note")


def first_screen(rep, top: int = TOP) -> dict:
    """The first screen as plain, JSON-ready data: the headline figures, what to fix first (each
    item's time at stake in us and as a share, cause and fix) and the ``top`` costliest kernels.

    >>> s = first_screen(rep)
    >>> s["headline"]["launches"], s["fixes"][0]["severity"], s["kernels"][0]["short_name"]
    (74, 'high', 'foreach mul (multi-tensor)')
    >>> json.loads(json.dumps(s)) == s
    True
    """
    p = report_panels(rep)
    h, s = p.header, p.header.stats
    kernels = []
    for r in p.kernel_table.top(top).to_dict("records"):
        facts = p.kernel_table.facts.get(r["name"], {})
        occ = facts.get("theoretical_occupancy")
        kernels.append({"name": str(r["name"]), "short_name": str(r["short_name"]), "backend": str(r["backend"]),
                        "launches": int(r["launches"]), "total_us": float(r["total_us"]),
                        "mean_us": float(r["mean_us"]), "share": float(r["share"]),
                        "theoretical_occupancy": None if occ is None or occ != occ else float(occ),
                        "occupancy_limiter": facts.get("occupancy_limiter") or None})
    return {"title": h.title, "devices": h.device_texts(), "partial": h.partial,
            "headline": {k: s[k] for k in ("wall_us", "wall_clock", "gpu_time_us", "gpu_busy", "launches",
                                            "kernels", "copies", "ops")},
            "fixes_of": p.time_of, "fixes": [{k: x.get(k) for k in _FIX_FIELDS} for x in p.fixes],
            "findings": len(p.findings), "kernels": kernels, "kernels_in_all": p.kernel_table.distinct,
            "completeness": h.completeness, "notes": p.notes, "memory": _memory(p.memory)}


def _memory(m: dict | None) -> dict | None:
    """The memory panel's figures and words, without the lane's curve."""
    if not m:
        return None
    return {k: m[k] for k in ("device", "headline", "peak_bytes", "reserved_at_peak", "before_bytes", "steps",
                              "leak", "fragmentation", "where_from")} | {
        "held": [{k: h[k] for k in ("op", "source", "bytes", "blocks", "share", "text")} for h in m["held"]]}


def report_markdown(rep, top: int = TOP) -> str:
    r"""The first screen as Markdown: the headline, what to fix first, the ``top`` costliest
    kernels. Recorded text (kernel names, file names, findings) cannot break the table or the
    list: Markdown's table and emphasis characters are escaped, control characters replaced.

    >>> print(report_markdown(rep, top=2))
    # kernelscope: mlp\_train.pt.trace.json.gz
    <BLANKLINE>
    NVIDIA H200 (sm\_90, 132 SMs) · wall time (profiler span) 10.81 ms · GPU busy 9.5% · 74 kernel launches
    of 25 kernels · GPU kernel time 737.5 us · 6 copies + memsets
    <BLANKLINE>
    Recording: 74 kernel launches, 4 copies, 2 memsets, 88 runtime calls, 454 CPU ops; every launch has its GPU
    record; profiler's drop counts: not told by this source
    <BLANKLINE>
    ## What to fix first (time at stake, share of wall time)
    <BLANKLINE>
    1. **[high] 4.83 ms, 45% of wall time**: Host-bound: the GPU idles 90% of the wall time, mostly waiting on host work between launches
    ...
    ## Costliest kernels (2 of 25)
    <BLANKLINE>
    | kernel | backend | launches | total | mean | share | occupancy |
    |---|---|--:|--:|--:|--:|--:|
    | foreach mul (multi-tensor) | ATen | 4 | 98.4 us | 24.6 us | 13.3% | 100% (registers+warps) |
    | foreach addcdiv (multi-tensor) | ATen | 2 | 83.6 us | 41.8 us | 11.3% | 100% (registers+warps) |
    """
    s = first_screen(rep, top)
    h = s["headline"]
    clock = f" ({h['wall_clock']})" if h["wall_clock"] else ""
    line = [*map(_md, s["devices"]), f"wall time{clock} {fmt_us(h['wall_us'])}", f"GPU busy {fmt_pct(h['gpu_busy'])}",
            f"{h['launches']:,} kernel launches of {h['kernels']:,} kernels", f"GPU kernel time {fmt_us(h['gpu_time_us'])}",
            f"{h['copies']:,} copies + memsets"]
    out = [f"# kernelscope: {_md(s['title'])}" + (" (partial: the run stopped early)" if s["partial"] else ""), "",
           " · ".join(line)]
    if s["completeness"]:
        out += ["", f"Recording: {_md(s['completeness']['line'])}"]
    out += [f"> note: {_md(n)}" for n in s["notes"]]
    p = report_panels(rep)
    out += _fix_lines(s) + _kernel_lines(s) + _graph_lines(p.graphs) + _step_lines(p.steps) + memory_markdown(s["memory"])
    return printable("\n".join(out))


def memory_markdown(m: dict | None) -> list:
    r"""The Memory section (``first_screen(rep)["memory"]``): the peak, what held it, the steps.

    >>> print("\n".join(memory_markdown(first_screen(ks.load("training/lm_steps.pt.trace.json.gz"))["memory"])[:6]))
    <BLANKLINE>
    ## Memory (`rep.memory`)
    <BLANKLINE>
    Peak 1022.2 MiB allocated on cuda:0 at 12.76 ms; 1.1 GiB reserved then (8.4% above allocated). What held it:
    <BLANKLINE>
    - allocated before the recording (weights, ...): 311.4 MiB (30.5%)
    """
    if not m:
        return []
    out = ["", "## Memory (`rep.memory`)", "", f"{_md(m['headline'][0].upper() + m['headline'][1:])}. What held it:", ""]
    out += [f"- {_md(h['text'])}" for h in m["held"]]
    out += [f"\n**{label}**: {_md(m[key])}" for label, key in (("Steps", "steps"), ("Leak", "leak"),
                                                                ("Fragmentation", "fragmentation")) if m.get(key)]
    return out + ["", f"From {_md(m['where_from'])}."]


def _fix_lines(s: dict) -> list:
    fixes = s["fixes"]
    if not fixes:
        return []
    costed = fixes[0]["cost_us"] is not None
    out = ["", f"## {fixes_heading(fixes)}" + (f" (time at stake, share of {s['fixes_of']})" if costed else ""), ""]
    for x in fixes:
        cost = (f" {fmt_us(x['cost_us'])}, {fmt_pct(x['share_of_wall'], None)} of {s['fixes_of']}"
                if x["cost_us"] is not None and x["share_of_wall"] is not None else
                f" {fmt_us(x['cost_us'])}" if x["cost_us"] is not None else "")
        out.append(f"{x['rank']}. **[{_md(x['severity'])}]{cost}**: {_md(x['title'])}")
        out += [f"   - {label}: {_md(x[key])}" for label, key in (("cause", "cause"), ("fix", "fix"), ("note", "note"))
                if x.get(key)]
    if s["findings"] > len(fixes):
        out.append(f"\n({s['findings']} findings in all: `rep.findings`)")
    return out


def _kernel_lines(s: dict) -> list:
    if not s["kernels"]:
        return []
    out = ["", f"## Costliest kernels ({len(s['kernels'])} of {s['kernels_in_all']})", "",
           "| kernel | backend | launches | total | mean | share | occupancy |", "|---|---|--:|--:|--:|--:|--:|"]
    for k in s["kernels"]:
        occ = fmt_pct(k["theoretical_occupancy"], 0)
        if k["theoretical_occupancy"] is not None and k["occupancy_limiter"]:
            occ += f" ({_md(k['occupancy_limiter'])})"
        out.append(f"| {_md(k['short_name'])} | {_md(k['backend'])} | {k['launches']:,} | {fmt_us(k['total_us'])} "
                   f"| {fmt_us(k['mean_us'])} | {fmt_pct(k['share'])} | {occ} |")
    return out


def _graph_lines(g: dict | None) -> list:
    """The CUDA graphs replayed, one table row each (labels and cells: panels/graphs.py)."""
    if not g:
        return []
    cols = g["columns"]
    out = ["", f"## {_md(g['title'])} (`rep.graphs`)", "",
           "| " + " | ".join(_md(c["label"]) for c in cols) + " |",
           "|" + "|".join("--:" if c["num"] else "---" for c in cols) + "|"]
    out += ["| " + " | ".join(_md(r["text"][c["key"]]) for c in cols) + " |" for r in g["rows"]]
    return out


def _step_lines(st: dict | None) -> list:
    """A training loop's steps (panels/steps.py): what they say, and the first, median and slowest
    steps as a table of TensorBoard's breakdown."""
    if not st:
        return []
    parts = [q for q in st["parts"] if any(r[f"{q['key']}_us"] for r in st["rows"])]
    out = ["", f"## {_md(st['title'])} (`{st['source']}`)", "", *[f"- {_md(x)}" for x in st["lines"]], "",
           "| step | | time | GPU busy | " + " | ".join(_md(q["label"]) for q in parts) + " |",
           "|---|---|--:|--:|" + "--:|" * len(parts)]
    out += [f"| {_md(r['step'])} | {r['kind']} | {fmt_us(r['step_us'])} | {fmt_us(r['gpu_busy_us'])} | "
            + " | ".join(fmt_us(r[q["key"] + "_us"]) for q in parts) + " |"
            for r in st["rows"] if r["index"] in st["text_rows"]]
    return out


# Markdown's own characters in recorded text: a kernel name with "|" would end a table cell, one
# with "*" or "_" start emphasis, "[" a link, "<" an HTML tag; a newline would end the line.
_MD = re.compile(r"([\\`*_\[\]<>|])")


def _md(text) -> str:
    r"""``text`` escaped for Markdown, on one line.

    >>> _md("a|b *c* <d>\nx")
    'a\\|b \\*c\\* \\<d\\> x'
    """
    return _MD.sub(r"\\\1", " ".join(str(text).split()))
