"""Findings from Nsight Compute's measurements: its own rule results (labelled as Nsight Compute's)
and uncoalesced memory access."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernelscope.analysis.ncu_kernels import ADVICE_TYPES, memory_access
from kernelscope.jsonable import num

# Nsight Compute's advice kept as findings: the strongest few per kernel, and in all.
RULES_PER_KERNEL = 3
RULE_FINDINGS_MAX = 12
# -- Nsight Compute's rules as findings -------------------------------------------------------------
def rule_findings(report, tl=None) -> list:
    """Nsight Compute's own advice (its rule results with an optimization or warning message) as
    findings, labelled as Nsight Compute's; ``cost_us`` is its estimated global speedup times the
    launch's duration (a local estimate concerns one unit, not the run time: cost 0).

    >>> [f.title for f in rule_findings(ncu)][:1]
    ["Nsight Compute on strided_kernel: L2 Global Load Access Pattern (Nsight Compute's estimated speedup: 82%)"]
    """
    from kernelscope.analysis.findings.base import Finding, severity_for
    rules = (getattr(report, "ncu_detail", None) or {}).get("rules")
    ncu = getattr(report, "ncu", None)
    if rules is None or not len(rules) or ncu is None or "duration_ns" not in ncu.columns:
        return []
    r = rules[rules["type"].isin(ADVICE_TYPES) & rules["message"].astype(str).str.len().gt(0)].copy()
    if not len(r):
        return []
    dur = dict(zip(ncu["id"].astype(int), pd.to_numeric(ncu["duration_ns"], errors="coerce") / 1e3))
    r["duration_us"] = [dur.get(int(i), np.nan) for i in r["id"]]
    pct = pd.to_numeric(r["speedup_pct"], errors="coerce").fillna(0.0)
    r["cost_us"] = np.where(r["speedup_type"] == "global", pct / 100.0 * r["duration_us"].fillna(0.0), 0.0)
    # One finding per kernel and rule (its launches' cost summed), the strongest few per kernel.
    # Its speedup and its message (which quotes that launch's figures, e.g. achieved occupancy)
    # come from one launch, the one with the largest estimate, and the finding names it.
    r = r.assign(_sp=pct).sort_values("_sp", ascending=False, kind="stable")
    g = (r.groupby(["kernel_name", "rule", "title"], sort=False, dropna=False)
         .agg(cost_us=("cost_us", "sum"), speedup_pct=("speedup_pct", "first"), launches=("id", "nunique"),
              launch=("id", "first"),
              message=("message", "first"), section=("section", "first"), speedup_type=("speedup_type", "first"),
              rule_name=("rule_name", "first"), type=("type", "first"))
         .reset_index())
    g = g.sort_values(["cost_us", "speedup_pct"], ascending=False, kind="stable")
    g = g.groupby("kernel_name", sort=False).head(RULES_PER_KERNEL).head(RULE_FINDINGS_MAX)
    window = float(pd.to_numeric(ncu["duration_ns"], errors="coerce").sum()) / 1e3 or None
    if tl is not None:
        try:
            window = tl.device().get("active_us") or window
        except Exception:  # noqa: BLE001 - the window only scales severity
            pass
    short = _short_names(report)
    order = _launch_order(ncu)
    out = []
    for x in g.to_dict("records"):
        sp = x["speedup_pct"]
        # Which of the kernel's launches, counted from 1 in ncu's order; ncu's IDs run over every
        # kernel's launches (a kernel's two launches can be IDs 0 and 3: "launch 2 of 2, ID 3").
        nth = order.get(int(x["launch"]))
        of = (f", launch {nth} of {int(x['launches'])}, Nsight Compute ID {int(x['launch'])}"
              if x["launches"] > 1 and nth is not None else "")
        est = (f" (Nsight Compute's estimated speedup: {sp:.0f}%{', local' if x['speedup_type'] == 'local' else ''}{of})"
               if sp == sp and sp > 0 else "")
        title = x["title"] or x["rule_name"] or x["rule"]
        sev = severity_for(x["cost_us"], window) if x["cost_us"] > 0 else ("low" if x["type"] != "error" else "medium")
        out.append(Finding(
            kind="nsight_compute", severity=sev,
            title=f"Nsight Compute on {short.get(x['kernel_name'], x['kernel_name'])}: {title}{est}",
            detail=x["message"],     # Nsight Compute's words, of the launch the title names
            evidence={"source": "Nsight Compute rule result", "rule": x["rule"], "section": x["section"],
                      "kernel": x["kernel_name"], "launches": int(x["launches"]),
                      "launch": int(x["launch"]), "launch_of_kernel": nth,
                      "estimated_speedup_pct": None if sp != sp else float(sp), "speedup_type": x["speedup_type"]},
            cost_us=float(x["cost_us"])))
    return out


def access_findings(report, tl=None) -> list:
    """Our verdict on coalescing (from Nsight Compute's sector counters) as findings: kernels
    whose global accesses use less than half of what they fetch."""
    from kernelscope.analysis.findings.base import Finding, severity_for
    ncu = getattr(report, "ncu", None)
    m = memory_access(ncu)
    m = m[m["verdict"].notna()] if len(m) else m
    if ncu is None or not len(m):      # (memory_access of no launches is empty)
        return []
    dur = dict(zip(ncu["id"].astype(int), pd.to_numeric(ncu["duration_ns"], errors="coerce") / 1e3))
    m = m.assign(duration_us=[dur.get(int(i), 0.0) for i in m["id"]])
    window = float(pd.to_numeric(ncu["duration_ns"], errors="coerce").sum()) / 1e3 or None
    short = _short_names(report)
    out = []
    for name, g in m.groupby("kernel_name", sort=False):
        eff = np.nanmin([g["load_efficiency"].min(), g["store_efficiency"].min()])
        # At most the time beyond what the bytes it uses would need (a bound, not a promise).
        waste = 1.0 - eff if eff == eff else 0.0
        cost = float(g["duration_us"].sum()) * waste
        out.append(Finding(
            kind="uncoalesced_access", severity=severity_for(cost, window),
            title=f"{short.get(name, name)}: global memory access is uncoalesced",
            detail=g["verdict"].iloc[0] + " (computed by kernelscope from Nsight Compute's sector counters)",
            evidence={"source": "kernelscope, from Nsight Compute counters", "kernel": name,
                      "launches": int(len(g)), "load_efficiency": num(g["load_efficiency"].iloc[0]),
                      "store_efficiency": num(g["store_efficiency"].iloc[0]),
                      "load_sectors_per_request": num(g["load_sectors_per_request"].iloc[0]),
                      "excess_sectors": num(g["excess_sectors"].iloc[0])},
            cost_us=cost))
    return out


def _launch_order(ncu) -> dict:
    """{ncu launch ID: its position among its kernel's profiled launches, from 1}."""
    t = ncu[["id", "kernel_name"]].assign(id=ncu["id"].astype(int)).sort_values("id", kind="stable")
    nth = t.groupby("kernel_name", sort=False, dropna=False).cumcount() + 1
    return dict(zip(t["id"], nth.astype(int)))


def _short_names(report) -> dict:
    k = getattr(report, "kernels", None)
    if k is None or not len(k) or "short_name" not in k.columns:
        return {}
    names = dict(zip(k["name"].astype(str), k["short_name"].astype(str)))
    if "ncu_id" in k.columns and getattr(report, "ncu", None) is not None:
        ncu = report.ncu
        ids = dict(zip(ncu["id"].astype(int), ncu["kernel_name"].astype(str)))
        for nid, short in zip(k["ncu_id"], k["short_name"]):
            if nid == nid and nid is not None and int(nid) in ids:
                names.setdefault(ids[int(nid)], str(short))
    return names
