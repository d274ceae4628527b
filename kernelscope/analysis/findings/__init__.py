"""Findings: what to fix first, in words, each with the numbers behind it.

Every rule is a pure function of the report's tables (through :mod:`kernelscope.analysis.timeline` and
:mod:`kernelscope.analysis.roofline`) returning Findings; :func:`find_all` ranks them by the time each one costs, so
the first finding is the one to fix first. A finding's ``cost_us`` is the GPU time at stake: idle
time the cause explains, or time beyond what the hardware allows; ``evidence`` holds the figures.
``cause`` and ``fix`` say the finding in one line each, and ``link`` points at what shows it (a
range of the timeline, or kernels of the table): :mod:`kernelscope.analysis.priorities` lists them on the first screen.

"Launches" means kernel launches here, as everywhere in kernelscope; where copies and memsets
are counted with them, the text says "GPU work items" and names them.

The package: ``base`` (Finding, severity, evidence links), then one module per family of rules:
``host`` (launch-bound, host-bound, GPU idle, host idle, cold start), ``outside`` (the time
before the GPU's first work and after its last), ``copies`` (pageable and
serialized copies), ``timeline`` (sync, stream, graph and GPU-bound), ``roofline``, ``gemm_fallback``,
``counters`` (PM samples), ``ncu`` (Nsight Compute's measurements and rules), ``empty_capture``,
``completeness`` (the recording's ledger: launches with no kernel, records dropped),
``tuning`` (the autotuners' candidates: spilling winners, occupancy-capped configs, noise, keys),
``kernels`` (fp32 GEMMs on CUDA cores, grids smaller than the GPU, unfused elementwise chains),
``triton_variants`` (a Triton kernel's compiled facts: uncoalesced loads, register spills), ``steps``
(training-loop steps: slow first steps, steady steps that vary) and ``memory`` (the allocator's
leak and fragmentation: no time at stake, bytes).
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from kernelscope.analysis.findings.base import (
    SEVERITIES,
    Finding,
    device_rows,
    outside_parts,
    range_link,
    severity_for,
)
from kernelscope.analysis.findings.copies import copy_findings
from kernelscope.analysis.findings.host import host_findings, wall_base
from kernelscope.analysis.findings.outside import OUTSIDE_KIND, outside_findings
from kernelscope.analysis.findings.roofline import roofline_findings
from kernelscope.analysis.findings.timeline import (
    gpu_bound_findings,
    graph_findings,
    stream_findings,
    sync_findings,
)
from kernelscope.analysis.intervals import Spans
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

__all__ = ["Finding", "find_all", "severity_for"]


def find_all(report) -> list:
    """All findings of a report, most costly first (``report.findings`` caches this).

    >>> [f.kind for f in find_all(ks.load("launch_bound.pt.trace.json.gz"))][:1]
    ['launch_bound']
    """
    tl = report.timeline if hasattr(report, "timeline") else None
    if tl is None:
        from kernelscope.analysis.timeline import timeline
        tl = timeline(report)
    from kernelscope.analysis.findings.completeness import completeness_findings
    from kernelscope.analysis.findings.counters import counter_findings
    from kernelscope.analysis.findings.empty_capture import empty_capture_findings
    from kernelscope.analysis.findings.gemm_fallback import gemm_fallback_findings
    from kernelscope.analysis.findings.kernels import (
        fp32_gemm_findings,
        tiny_grid_findings,
        unfused_elementwise_findings,
    )
    from kernelscope.analysis.findings.memory import memory_findings
    from kernelscope.analysis.findings.ncu import access_findings, rule_findings  # Nsight Compute's measurements
    from kernelscope.analysis.findings.placement import placement_findings
    from kernelscope.analysis.findings.steps import step_findings
    from kernelscope.analysis.findings.triton_variants import register_spills_findings, uncoalesced_findings
    from kernelscope.analysis.findings.tuning import tuning_findings
    from kernelscope.analysis.replay import is_onnxruntime, is_replay
    rules = (empty_capture_findings, host_findings, sync_findings, outside_findings, copy_findings,
             stream_findings, graph_findings, gpu_bound_findings, roofline_findings, gemm_fallback_findings,
             counter_findings, rule_findings, access_findings, tuning_findings, fp32_gemm_findings,
             tiny_grid_findings, unfused_elementwise_findings, uncoalesced_findings, register_spills_findings,
             completeness_findings, step_findings, memory_findings, placement_findings)
    if is_replay(getattr(report, "meta", None)) or is_onnxruntime(getattr(report, "meta", None)):
        # A replay ran its launches one at a time: idle time, host overhead, syncs, copies and
        # stream overlap were not recorded, so the timeline's rules have nothing to say. An ONNX
        # Runtime profile records node runs, no launch or sync calls: the same rules are left out.
        timeline_rules = {host_findings, sync_findings, outside_findings, copy_findings, stream_findings,
                          graph_findings, gpu_bound_findings, empty_capture_findings}
        rules = tuple(r for r in rules if r not in timeline_rules)
    out = []
    for rule in rules:
        try:
            out.extend(rule(report, tl))
        except Exception as e:  # noqa: BLE001 - one broken rule must not hide the others or the report
            out.append(Finding("analysis_error", "info", f"could not run {rule.__name__}: {e!r}",
                               "This is a kernelscope bug; the other findings are unaffected.",
                               {"rule": rule.__name__}))
    # A GEMM fallback says why its kernel is far from the roof: one finding for it, not two.
    fell = {(f.evidence.get("op"), f.evidence.get("kernel")) for f in out if f.kind == "gemm_fallback"}
    out = [f for f in out if not (f.kind == "roofline" and (f.evidence.get("op"), f.evidence.get("kernel")) in fell)]
    out = _one_per_kernel(out)
    out = _count_once(out, report, tl)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: (-f.cost_us, order.get(f.severity, 9)))


# Findings whose time is the GPU idling while the host did not feed it (the timeline's rules).
HOST_KINDS = ("launch_bound", "host_bound", "host_idle", "gpu_idle")
# Findings that name what a stretch of idle time went to, in the order they claim it: a first
# run's setup, the synchronizations, the time outside the GPU's work. Each keeps only what the
# ones before it did not claim, and the host's findings (HOST_KINDS) keep what none claimed.
CLAIMS = ("cold_start", "syncs", OUTSIDE_KIND)
# How a finding says which of its time a claim holds (and the time outside the GPU's work under a
# line's worth, which no item holds).
_OUTSIDE = "lies before the GPU's first work or after its last, the profiler's start-up and the cell's own Python"
_HELD_BY = {"cold_start": "went to the first run's setup (the first-run item holds it)",
            "syncs": "came from synchronizations (the host-blocking calls item holds it)",
            OUTSIDE_KIND: _OUTSIDE + " (an item of its own holds it)",
            "outside": _OUTSIDE + " (not the GPU's time)"}


def _count_once(out, report, tl=None) -> list:
    """Each microsecond once, and severity against the share shown: the findings of
    :data:`CLAIMS` each keep the idle time (their ``spans``) the ones before them did not claim,
    and a host finding's idle keeps what none of them claimed, so the synchronizations' idle and
    the time before the GPU's first work or after its last are not counted in it again; every
    finding that costs time takes its severity from its share of the wall time (the share the
    first screen shows beside it), but the time outside the GPU's work stays low.

    >>> [(f.kind, round(f.cost_us)) for f in rep.findings if f.cost_us][:3]
    [('host_bound', 4831), ('outside_gpu_work', 2736), ('syncs', 427)]
    """
    wall = getattr(report, "wall_time_us", None)
    res, claimed = list(out), []
    for kind in CLAIMS:
        for i, f in enumerate(res):
            if f.kind == kind and f.spans is not None and f.cost_us > 0:
                res[i] = _less(f, claimed)
                claimed.append((kind, res[i].spans))
    if tl is not None and not any(k == OUTSIDE_KIND for k, _ in claimed):
        # Under a line's worth (no item of its own), it is still no host finding's time.
        claimed.extend(("outside", outside_parts(dev, tl, wall_base(dev, tl))[2]) for dev in device_rows(tl))
    sync = next((f for f in res if f.kind == "syncs" and f.cost_us > 0), None)
    for i, f in enumerate(res):
        if f.kind in HOST_KINDS and f.cost_us > 0:
            if f.spans is not None:
                f = _less(f, claimed, whole=True)
            elif sync is not None:
                # A host finding that does not know its time: the synchronizations' idle, all of
                # it (the syncs item prices only what taking them out gives), as a sum.
                held = min(max(sync.cost_us, num(sync.evidence.get("idle_caused_us")) or 0.0), f.cost_us)
                f = dataclasses.replace(f, cost_us=f.cost_us - held, detail=f.detail + (
                    f" Of this idle time, {fmt_us(held)} came from synchronizations: the host-blocking "
                    "calls item holds it, so it is not counted here again."))
        if wall and f.kind != OUTSIDE_KIND and (f.cost_us > 0 or f is not out[i]):
            f = dataclasses.replace(f, severity=severity_for(f.cost_us, wall))
        res[i] = f
    return res


def _less(f, claimed, whole: bool = False) -> Finding:
    """``f`` without the time the claims before it hold (``claimed``: (kind, spans) pairs), and one
    sentence for each. ``whole``: its cost loses all the time they hold (a host finding: what it
    leaves out of its idle, the recording's own cost per launch, lies between the launches, not in
    the syncs' waits or before the GPU's first work); else it is cut in proportion (a sync item
    prices its calls, not the idle after them)."""
    spans, said, cost = f.spans, [], f.cost_us
    total = spans.length
    for kind, other in claimed:
        held = spans.overlap(other)
        if held > 0:
            spans = spans - other
            take = min(held, cost) if whole else held * f.cost_us / total
            cost -= take
            said.append(f"{fmt_us(take if whole else held)} {_HELD_BY[kind]}")
    if not said:
        return f
    cost = max(cost, 0.0)
    words = (" Of this idle time, " + "; ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
             + (": it is" if len(said) == 1 else ": they are") + " not counted here again.")
    return dataclasses.replace(f, cost_us=cost, spans=spans, link=_relink(f.link, spans), detail=f.detail + words)


def _relink(link, spans):
    """A timeline link that marks time the finding no longer holds points at the longest stretch
    it keeps instead (two items do not mark the same gap)."""
    if not (isinstance(link, dict) and link.get("view") == "timeline" and "mark_start_us" in link):
        return link
    marked = Spans.of(link.get("device"), [link["mark_start_us"]], [link["mark_end_us"]])
    if not marked or spans.overlap(marked) > 0 or not spans:
        return link
    dev, (s, e) = max(spans.parts.items(), key=lambda kv: float((kv[1][1] - kv[1][0]).max()))
    j = int(np.argmax(e - s))
    what = re.match(r"timeline: the longest (.+?) \(", link.get("label") or "")
    return range_link(dev, float(s[j]), float(e[j]), what.group(1) if what else "idle time") or link


# The kernel rules, whose findings name the kernels they price.
KERNEL_KINDS = ("fp32_gemm", "tiny_grid", "unfused_elementwise", "register_spills", "uncoalesced_access")


def _kernels_named(f) -> set:
    ev = f.evidence or {}
    names = set(ev.get("kernels") or [])
    if ev.get("kernel"):
        names.add(ev["kernel"])
    return {str(n) for n in names}


def _one_per_kernel(findings) -> list:
    """Findings less those another speaks for, so that a kernel's time counts once: the roofline
    finding of a kernel a kernel rule prices, a GEMM fallback among fp32 GEMMs (TF32 is the fix),
    a small grid where another kernel rule names its cause (a new config or precision changes the
    grid too), the autotuner's spilling winner where ``register_spills`` prices it, and our own
    uncoalesced finding (from the PTX) where Nsight Compute measured the same kernel's access."""
    from kernelscope.analysis.findings.triton_variants import VARIANT_SOURCE
    named = {kind: set() for kind in KERNEL_KINDS}
    for f in findings:
        if f.kind in named:
            named[f.kind] |= _kernels_named(f)
    covered = set().union(*named.values())
    measured = {str(f.evidence.get("kernel")) for f in findings
                if f.kind == "uncoalesced_access" and f.evidence.get("source") != VARIANT_SOURCE}

    def spoken(f) -> bool:
        kernel = str((f.evidence or {}).get("kernel"))
        return ((f.kind == "roofline" and kernel in covered)
                or (f.kind == "gemm_fallback" and kernel in named["fp32_gemm"])
                or (f.kind == "tiny_grid" and kernel in named["fp32_gemm"] | named["register_spills"]
                    | named["uncoalesced_access"] | named["unfused_elementwise"])
                or (f.kind == "autotune_winner_spills" and kernel in named["register_spills"])
                or (f.kind == "uncoalesced_access" and f.evidence.get("source") == VARIANT_SOURCE and kernel in measured))
    return [f for f in findings if not spoken(f)]

