"""Placement findings of an ONNX Runtime profile (``trace/onnxruntime.py``): which execution
provider ran each node, and what the placement costs.

- ``provider_share``: each provider's share of the recorded node and copy time (info; the only
  finding of a session whose nodes all ran on one provider);
- ``cpu_fallback``: nodes the CPU provider ran in a session where a GPU provider ran others
  (ONNX Runtime gives a node to the first provider in the session's list that has a kernel for
  its op and input types, and the CPU provider takes the rest), priced at their CPU time;
- ``provider_copies``: the ``MemcpyToHost``/``MemcpyFromHost`` nodes ONNX Runtime inserts where
  a tensor crosses between providers, priced at their time.

The fixes are ONNX Runtime's own settings: ``session.disable_cpu_ep_fallback``, a provider's
options, the op set and types the model is exported with, I/O binding, the graph optimization
level. Nothing is said that the profile does not show.
"""
from __future__ import annotations

import pandas as pd

from kernelscope.analysis.backend_rules import provider_backend, provider_device
from kernelscope.analysis.findings.base import MAX_EVIDENCE_ROWS, Finding, kernel_link, severity_for
from kernelscope.analysis.replay import is_onnxruntime
from kernelscope.units import fmt_pct, fmt_us

CPU_PROVIDER = "CPUExecutionProvider"
# Ops ONNX Runtime itself keeps on the CPU beside a GPU provider when they only compute shapes
# (its GetCpuPreferredNodes): a fallback of these is often on purpose and costs little.
SHAPE_OPS = frozenset({"Shape", "Size", "ConstantOfShape", "Range", "NonZero"})
COPY_NODES = ("MemcpyToHost", "MemcpyFromHost")


def _rows(report) -> pd.DataFrame:
    """Every timed row with a provider: node runs and device kernels, and copy nodes."""
    parts = []
    for t, kind in ((report.kernels, "node"), (report.copies, "copy")):
        if len(t) and "provider" in t.columns:
            parts.append(pd.DataFrame({"provider": t["provider"].astype(object).values, "name": t["name"].values,
                                       "op": t["op"].values, "duration_us": t["duration_us"].astype(float).values,
                                       "kind": kind}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["provider", "name", "op", "duration_us", "kind"])


def provider_shares(report) -> pd.DataFrame:
    """Per execution provider: its backend label, device type, node runs (and copies), time and
    share of all recorded node and copy time, most time first.

    >>> provider_shares(ks.load("onnxruntime/mixed_cpu.onnxruntime_profile.json.gz"))
                   provider  backend device  runs  time_us  share
    0  CPUExecutionProvider  ORT CPU    CPU    90   5522.0    1.0
    """
    r = _rows(report)
    r = r[r["provider"].notna()]
    g = r.groupby("provider", sort=False)["duration_us"]
    out = pd.DataFrame({"runs": g.size(), "time_us": g.sum()}).reset_index()
    total = float(out["time_us"].sum())
    out["share"] = out["time_us"] / total if total > 0 else 0.0
    out.insert(1, "backend", [provider_backend(p) or "other" for p in out["provider"]])
    out.insert(2, "device", [provider_device(p) for p in out["provider"]])
    return out.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)


def _share_finding(shares: pd.DataFrame) -> Finding:
    parts = [f"{b} ({p}) {fmt_pct(s)} of {fmt_us(t)} in {n} node runs"
             for b, p, s, t, n in zip(shares["backend"], shares["provider"], shares["share"],
                                      shares["time_us"], shares["runs"])]
    title = "Execution providers: " + ", ".join(f"{b} {fmt_pct(s)}" for b, s in zip(shares["backend"], shares["share"]))
    return Finding("provider_share", "info", title,
                   "Of the time ONNX Runtime recorded in nodes and copies: " + "; ".join(parts) + ".",
                   {"providers": shares.to_dict("records")}, 0.0)


def _fallback_finding(report, r: pd.DataFrame, gpu: list, wall) -> list:
    cpu = r[(r["provider"] == CPU_PROVIDER) & (r["kind"] == "node")]
    if not len(cpu):
        return []
    g = cpu.groupby(["name", "op"], sort=False, dropna=False)["duration_us"]
    nodes = pd.DataFrame({"runs": g.size(), "time_us": g.sum()}).reset_index()
    nodes = nodes.sort_values("time_us", ascending=False, kind="stable")
    cost = float(nodes["time_us"].sum())
    k = report.kernels
    types = {}
    if "input_types" in k.columns:
        for name, t in zip(k["name"], k["input_types"]):
            if isinstance(t, list) and name not in types:
                types[name] = t
    rows = [{"node": n, "op": o, "runs": int(c), "time_us": float(t), "input_types": types.get(n)}
            for n, o, c, t in zip(nodes["name"], nodes["op"], nodes["runs"], nodes["time_us"])][:MAX_EVIDENCE_ROWS]
    gpus = ", ".join(gpu)
    listed = "; ".join(f"{e['node']} ({e['op']}" + (f" on {', '.join(map(str, e['input_types']))}" if e["input_types"]
                                                   else "") + f", {fmt_us(e['time_us'])})" for e in rows[:5])
    shape_only = all(o in SHAPE_OPS for o in nodes["op"])
    detail = (f"{len(nodes)} node(s) ran on the CPU provider in a session where {gpus} ran the others, "
              f"{fmt_us(cost)} in {int(nodes['runs'].sum())} runs: {listed}. ONNX Runtime gives a node to the first "
              "provider in the session's list that has a kernel for its op and input types; the CPU provider "
              "takes the rest, and each crossing adds a Memcpy node."
              + (" These ops only compute shapes: ONNX Runtime keeps such nodes on the CPU on purpose, and they "
                 "cost little." if shape_only else ""))
    return [Finding("cpu_fallback", "low" if shape_only else severity_for(cost, wall),
                    f"{len(nodes)} node(s) fell back to the CPU provider beside {gpus}: {fmt_us(cost)}", detail,
                    {"gpu_providers": gpu, "nodes": rows, "time_us": cost}, cost,
                    cause=f"no kernel in {gpus} for these ops and input types, so the CPU provider ran them",
                    fix="see which with SessionOptions.log_severity_level = 0 (its node placement lines); export with "
                        "ops and types the provider implements (an int64 op cast to int32 or float, a newer opset), "
                        "or for TensorRT list the CUDA provider after it so the rest stays on the GPU; "
                        "add_session_config_entry('session.disable_cpu_ep_fallback', '1') makes any fallback an error",
                    link=kernel_link([e["node"] for e in rows], "the nodes on the CPU provider"))]


def _copy_finding(r: pd.DataFrame, wall) -> list:
    c = r[(r["kind"] == "copy") & r["op"].isin(COPY_NODES)]
    if not len(c):
        return []
    cost = float(c["duration_us"].sum())
    by = c.groupby("op", sort=False)["duration_us"].agg(["size", "sum"])
    parts = [f"{op} {int(n)} runs, {fmt_us(t)}" for op, (n, t) in by.iterrows()]
    return [Finding("provider_copies", severity_for(cost, wall),
                    f"Copies between providers: {fmt_us(cost)} in {len(c)} Memcpy node runs",
                    "ONNX Runtime inserted Memcpy nodes where tensors cross between providers: " + "; ".join(parts)
                    + ". Those at the graph's inputs and outputs move the feeds and results; those inside it "
                    "surround nodes another provider ran.",
                    {"copies": {op: {"runs": int(n), "time_us": float(t)} for op, (n, t) in by.iterrows()},
                     "time_us": cost}, cost,
                    cause="tensors crossed between the CPU and a device provider inside each run",
                    fix="bind inputs and outputs on the device with IOBinding (bind_ortvalue_input / bind_output "
                        "with device_type='cuda') so the edges need no copy; move the CPU nodes between GPU nodes "
                        "to the GPU provider (see the fallback finding); keep graph_optimization_level at "
                        "ORT_ENABLE_ALL so fused nodes leave fewer crossings",
                    link=kernel_link([], "the Memcpy nodes"))]


def placement_findings(report, tl=None) -> list:
    """The placement findings of an ONNX Runtime profile (none for any other report).

    >>> [(f.kind, f.title) for f in placement_findings(ks.load("onnxruntime/mlp_cpu.onnxruntime_profile.json.gz"))]
    [('provider_share', 'Execution providers: ORT CPU 100.0%')]
    """
    if not is_onnxruntime(getattr(report, "meta", None)):
        return []
    r = _rows(report)
    if not len(r):
        return []
    shares = provider_shares(report)
    out = [_share_finding(shares)]
    gpu = [p for p in shares["provider"] if provider_device(p) not in ("CPU", "unknown")]
    wall = report.meta.get("span_us")
    if gpu:
        out += _fallback_finding(report, r, gpu, wall)
    return out + _copy_finding(r, wall)
