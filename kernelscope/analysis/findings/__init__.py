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
``host`` (launch-bound, host-bound, GPU idle, host idle, cold start), ``copies`` (pageable and
serialized copies), ``timeline`` (sync, stream, graph and GPU-bound), ``roofline``, ``gemm_fallback``,
``counters`` (PM samples), ``ncu`` (Nsight Compute's measurements and rules), ``empty_capture``,
``tuning`` (the autotuners' candidates: spilling winners, occupancy-capped configs, noise, keys),
``kernels`` (fp32 GEMMs on CUDA cores, grids smaller than the GPU, unfused elementwise chains) and
``triton_variants`` (a Triton kernel's compiled facts: uncoalesced loads, register spills).
"""
from __future__ import annotations

import dataclasses

from kernelscope.analysis.findings.base import SEVERITIES, Finding, severity_for
from kernelscope.analysis.findings.copies import copy_findings
from kernelscope.analysis.findings.host import host_findings
from kernelscope.analysis.findings.roofline import roofline_findings
from kernelscope.analysis.findings.timeline import (
    gpu_bound_findings,
    graph_findings,
    stream_findings,
    sync_findings,
)
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
    from kernelscope.analysis.findings.counters import counter_findings
    from kernelscope.analysis.findings.empty_capture import empty_capture_findings
    from kernelscope.analysis.findings.gemm_fallback import gemm_fallback_findings
    from kernelscope.analysis.findings.kernels import (
        fp32_gemm_findings,
        tiny_grid_findings,
        unfused_elementwise_findings,
    )
    from kernelscope.analysis.findings.ncu import access_findings, rule_findings  # Nsight Compute's measurements
    from kernelscope.analysis.findings.triton_variants import register_spills_findings, uncoalesced_findings
    from kernelscope.analysis.findings.tuning import tuning_findings
    from kernelscope.analysis.replay import is_replay
    rules = (empty_capture_findings, host_findings, sync_findings, copy_findings, stream_findings,
             graph_findings, gpu_bound_findings, roofline_findings, gemm_fallback_findings,
             counter_findings, rule_findings, access_findings, tuning_findings, fp32_gemm_findings,
             tiny_grid_findings, unfused_elementwise_findings, uncoalesced_findings, register_spills_findings)
    if is_replay(getattr(report, "meta", None)):
        # A replay ran its launches one at a time: idle time, host overhead, syncs, copies and
        # stream overlap were not recorded, so the timeline's rules have nothing to say.
        timeline_rules = {host_findings, sync_findings, copy_findings, stream_findings, graph_findings,
                          gpu_bound_findings, empty_capture_findings}
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
    out = _count_once(out, report)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: (-f.cost_us, order.get(f.severity, 9)))


# Findings whose time is the GPU idling while the host did not feed it (the timeline's rules).
HOST_KINDS = ("launch_bound", "host_bound", "host_idle", "gpu_idle")


def _count_once(out, report) -> list:
    """Each microsecond once, and severity against the share shown: a host finding's idle holds
    the synchronizations' idle, which the ``syncs`` finding lists on its own, so the host finding
    keeps the rest; every finding that costs time takes its severity from its share of the wall
    time (the share the first screen shows beside it)."""
    sync = next((f for f in out if f.kind == "syncs" and f.cost_us > 0), None)
    wall = getattr(report, "wall_time_us", None)
    res = []
    for f in out:
        if sync is not None and f.kind in HOST_KINDS and f.cost_us > 0:
            held = min(sync.cost_us, f.cost_us)
            f = dataclasses.replace(f, cost_us=f.cost_us - held, detail=f.detail + (
                f" Of this idle time, {fmt_us(held)} came from synchronizations: the host-blocking "
                "calls item holds it, so it is not counted here again."))
        if f.cost_us > 0 and wall:
            f = dataclasses.replace(f, severity=severity_for(f.cost_us, wall))
        res.append(f)
    return res


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

