"""A report as plain text, for terminals and ``text/plain``: the panels (``kernelscope.panels``)
written as lines."""
from __future__ import annotations

from kernelscope.errors import printable
from kernelscope.panels import Panels, report_panels
from kernelscope.panels.kernels import STATISTICS
from kernelscope.units import fmt_pct, fmt_us

__all__ = ["fmt_us", "printable", "report_text"]

# Kernels listed when no display option says how many.
TOP = 10


def clip(s, n):
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def report_text(rep, top: int | None = None) -> str:
    """The report's headline, top kernels and findings as text (``top``: kernels listed).

    >>> print(report_text(ks.load("launch_bound.pt.trace.json.gz")))
    kernelscope report: launch_bound.pt.trace.json.gz
      source: launch_bound.pt.trace.json.gz
      devices: NVIDIA H200 (sm_90, 132 SMs)
      wall time (profiler span): 28.49 ms   kernels: 2,000 launches of 2 kernels   GPU kernel time: 1.84 ms   copies + memsets: 0
      recording: 2,000 kernel launches, 0 copies, 0 memsets, 2,002 runtime calls, 2,000 CPU ops; every launch has its
      GPU record; profiler's drop counts: not told by this source
    <BLANKLINE>
      kernel                                           backend    launches      total       mean     median        min        max    std dev  share
    ...
    """
    p = report_panels(rep)
    lines = (_header_lines(p) + _kernel_lines(p, TOP if top is None else top) + _graph_lines(p) + step_lines(p) + memory_lines(p)
             + _fix_lines(p))
    return printable("\n".join(lines))


def _header_lines(p: Panels) -> list:
    h, s = p.header, p.header.stats
    lines = [f"kernelscope report: {h.title}" + (" (PARTIAL: the run stopped early)" if h.partial else "")]
    if h.source:
        lines.append(f"  source: {h.source}")
    if h.devices:
        lines.append("  devices: " + ", ".join(h.device_texts()))
    if h.capabilities["kind"] == "replay":
        lines.append(f"  Nsight Compute replay: {s['launches']:,} launches of {s['kernels']:,} kernels   "
                     f"kernel time: {fmt_us(s['gpu_time_us'])} ({h.capabilities['durations']})")
    else:
        clock = f" ({s['wall_clock']})" if s["wall_clock"] else ""
        lines.append(f"  wall time{clock}: {fmt_us(s['wall_us'])}   kernels: {s['launches']:,} launches of "
                     f"{s['kernels']:,} kernels   GPU kernel time: {fmt_us(s['gpu_time_us'])}"
                     f"   copies + memsets: {s['copies']:,}")
    if h.completeness:
        lines.append(f"  recording: {h.completeness['line']}")
    lines += [f"  note: {n}" for n in p.notes]
    return lines


def _kernel_lines(p: Panels, top: int) -> list:
    t = p.kernel_table
    if not p.header.stats["launches"]:
        return []
    s = t.top(top)
    # The columns of rep.summary() and of the view's kernel table (its "statistics" columns).
    lines = ["", f"  {'kernel':<48} {'backend':<10} {'launches':>8} "
                 + "".join(f"{label:>10} " for _, label in STATISTICS) + f"{'share':>6}"]
    lines.extend(f"  {clip(r['short_name'], 48):<48} {clip(r['backend'], 10):<10} {r['launches']:>8,} "
                 + "".join(f"{fmt_us(r[c]):>10} " for c, _ in STATISTICS) + f"{fmt_pct(r['share']):>6}"
                 for r in s.to_dict("records"))
    if t.distinct > len(s):
        lines.append(f"  … and {t.distinct - len(s)} more kernels (rep.summary() has them all)")
    return lines + _measured_lines(t, s["name"].tolist()[:5])


def _measured_lines(t, names) -> list:
    """Hardware counters (PM sampling) and live warp stalls of the top kernels, when recorded."""
    out = []
    if t.counters is not None:
        every = f", every {t.counter_interval_us:.0f} us" if t.counter_interval_us else ""
        out += ["", f"  hardware counters ({t.counter_source}{every}, time-weighted per kernel):",
                f"  {'kernel':<48} " + " ".join(f"{d.short:>10}" for d in t.counter_tracks)]
        for n in names:
            if n in t.counters.index:
                cells = [fmt_pct(t.counter(n, d.column), 0, scale=100) if d.unit == "%" else
                         _whole_number(t.counter(n, d.column)) for d in t.counter_tracks]
                out.append(f"  {clip(t.facts[n]['short_name'], 48):<48} " + " ".join(f"{c:>10}" for c in cells))
    if t.stall_source:
        rows = [(t.facts[n]["short_name"], t.facts[n].get("top_stall")) for n in names if n in t.facts]
        rows = [(a, b) for a, b in rows if isinstance(b, str)]
        if rows:
            out += ["", f"  top warp stall ({t.stall_source}): " + "; ".join(f"{clip(a, 40)}: {b}" for a, b in rows)]
    return out


def _graph_lines(p: Panels) -> list:
    """The CUDA graphs replayed (panels/graphs.py): a line of figures per graph, then where it
    was captured, its captured ops and why any kernel is unmatched."""
    g = p.graphs
    if not g:
        return []
    cols = {c["key"]: c for c in g["columns"]}
    out = ["", f"  {g['title']} (rep.graphs):"]
    for r in g["rows"]:
        t = r["text"]
        out.append(f"  {t['graph']}: " + " · ".join(f"{cols[k]['label']} {t[k]}" for k in cols if cols[k]["num"]))
        out += [f"     {cols[k]['label']}: {t[k]}" for k in cols if not cols[k]["num"] and k != "graph" and t[k] != "-"]
    return out


def step_lines(p: Panels, indent: str = "  ") -> list:
    """A training loop's steps (panels/steps.py): what they say, then the first, median and slowest
    steps with their breakdown (``rep.steps`` has every step)."""
    st = p.steps
    if not st:
        return []
    parts = [q for q in st["parts"] if any(r[f"{q['key']}_us"] for r in st["rows"])]
    out = ["", f"{indent}{st['title']} ({st['source']}):"] + [f"{indent}{x}" for x in st["lines"]]
    out.append(f"{indent}{'step':<18} {'':<8} {'time':>10} {'GPU busy':>10} "
               + " ".join(f"{clip(q['label'], 10):>10}" for q in parts))
    out.extend(f"{indent}{clip(r['step'], 18):<18} {r['kind']:<8} {fmt_us(r['step_us']):>10} "
               f"{fmt_us(r['gpu_busy_us']):>10} " + " ".join(f"{fmt_us(r[q['key'] + '_us']):>10}" for q in parts)
               for r in st["rows"] if r["index"] in st["text_rows"])
    return out


def memory_lines(p: Panels) -> list:
    r"""The memory section (panels/memory.py): the peak, what held it, growth per step, a leak,
    fragmentation; nothing where the trace holds no allocator events.

    >>> print("\n".join(memory_lines(report_panels(ks.load("training/leak_steps.pt.trace.json.gz")))))
    <BLANKLINE>
      memory (rep.memory): peak 1.7 GiB allocated on cuda:0 at 238.64 ms; 1.8 GiB reserved then (6.0% above allocated)
      what held the peak:
        allocated before the recording (weights, ...): 620.8 MiB (34.9%)
    ...
    """
    m = p.memory
    if not m:
        return []
    out = ["", f"  memory (rep.memory): {m['headline']}", "  what held the peak:"]
    out += [f"    {h['text']}" for h in m["held"]]
    if m["held_in_all"] > len(m["held"]):
        out.append(f"    … and {m['held_in_all'] - len(m['held'])} more (rep.memory.held)")
    out += [f"  {label}: {m[key]}" for label, key in (("steps", "steps"), ("leak", "leak"),
                                                      ("fragmentation", "fragmentation")) if m.get(key)]
    return out + [f"  from {m['where_from']}"]


def _whole_number(v) -> str:
    return "-" if v is None else f"{v:.0f}"


def _fix_lines(p: Panels) -> list:
    fixes = p.fixes
    if not fixes:
        return []
    lines = ["", f"  what to fix first (time at stake, share of {p.time_of}):" if fixes[0]["cost_us"] is not None
             else "  findings:"]
    for x in fixes:
        cost = f" {x['cost_text']}, {x['share_text']}:" if x["cost_text"] else ""
        lines.append(f"  {x['rank']}. [{x['severity']}]{cost} {x['title']}")
        lines += [f"     {label}{x[key]}" for label, key in (("cause: ", "cause"), ("fix:   ", "fix"), ("note:  ", "note"))
                  if x.get(key)]
    if len(p.findings) > len(fixes):
        lines.append(f"  ({len(p.findings)} findings in all: rep.findings)")
    return lines

