"""Empty captures said plainly: the region ran GPU work but the recording holds no kernels.

CUPTI, which torch.profiler records through, serves one subscriber at a time: with Nsight
Systems/Compute, a JAX profiler session, Triton's Proton or DCGM profiling attached, Kineto logs
``CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`` and records CPU ops but no GPU activity. The
report then says so, with the evidence and the likely causes, instead of showing an empty table.
"""
from __future__ import annotations

from kernelscope.analysis.findings.base import Finding

CAUSES = ("another CUPTI subscriber holds the GPU's activity stream (Nsight Systems or Nsight Compute, "
          "a JAX profiler session, Triton's Proton, DCGM profiling): stop it and run again",
          "the work was a CUDA graph captured before the profiler started, or ran before it started / "
          "after it stopped (no synchronize inside the region)",
          "the profiler was started without CUDA activity (activities=[ProfilerActivity.CPU])")


def empty_capture_findings(report, tl) -> list:
    """One high-severity finding when GPU work ran but no kernels or copies were recorded.

    >>> empty_capture_findings(ks.load("counters/empty_other_subscriber.pt.trace.json.gz"), None)[0].title
    'No GPU kernels were recorded, but the region ran GPU work'
    """
    if len(report.kernels) or len(report.copies) or report.meta.get("no_gpu"):
        return []
    evidence: dict = {}
    said = []
    rt = report.runtime
    if len(rt):
        names = rt["name"].astype(str)
        launches = int(names.str.contains("Launch|Memcpy|Memset", regex=True).sum())
        graphs = int(names.str.contains("GraphLaunch").sum())
        if launches:
            evidence["launch_calls"] = launches
            said.append(f"{launches} CUDA launch/copy call(s) were recorded on the host")
        if graphs:
            evidence["graph_launches"] = graphs
    ev_us = report.meta.get("cuda_event_us")
    if ev_us:
        evidence["cuda_event_us"] = float(ev_us)
        said.append(f"CUDA events around the region measured {float(ev_us) / 1000:.3g} ms of GPU time")
    d = report.devices
    cuda = len(d) and (d["device_type"] == "CUDA").any()
    ops = report.ops
    aten = ops[ops["name"].astype(str).str.startswith("aten::")] if len(ops) else ops
    if cuda and len(aten):
        top = aten["name"].value_counts().index[:4].tolist()
        evidence.update(cpu_ops=int(len(aten)), example_ops=top,
                        device=str(d.loc[d["device_type"] == "CUDA", "name"].iloc[0]))
        said.append(f"{len(aten)} ATen op(s) ran ({', '.join(top)}) with {evidence['device']} in the trace")
    if not said:
        return []
    causes = list(CAUSES)
    if evidence.get("graph_launches"):
        causes.insert(0, causes.pop(1))
    detail = ("The recording holds no GPU kernels or copies, yet " + "; ".join(said) + ". Likely causes: "
              + "; ".join(f"({i + 1}) {c}" for i, c in enumerate(causes)) + ".")
    evidence["causes"] = causes
    return [Finding("empty_capture", "high", "No GPU kernels were recorded, but the region ran GPU work",
                    detail, evidence, 0.0)]
