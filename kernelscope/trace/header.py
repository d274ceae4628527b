"""The trace header: devices (``deviceProperties``) and the recording's meta data.

Every header field is untrusted (a hand-edited or foreign file may hold anything): numbers go
through :func:`~kernelscope.trace.decode.header_num`, text through ``header_text``.
"""
from __future__ import annotations

from kernelscope.trace.decode import TraceFile, header_num, header_text
from kernelscope.trace.distributed import rank_meta
from kernelscope.trace.model import DEVICE_COLUMNS


def device_type(props: dict) -> str:
    """``"ROCm"`` or ``"CUDA"`` for one ``deviceProperties`` entry.

    ROCm traces carry the gfx architecture name; CUDA ones never do.

    >>> device_type({"name": "AMD Instinct MI300X", "gcnArchName": "gfx942"}), device_type({"name": "NVIDIA H200"})
    ('ROCm', 'CUDA')
    """
    return "ROCm" if props.get("gcnArchName") or "AMD" in header_text(props.get("name")) else "CUDA"


def devices_columns(props) -> dict:
    """The devices table's columns (lists) from the header's ``deviceProperties``."""
    cols = {c: [] for c in DEVICE_COLUMNS}
    if not isinstance(props, list):
        return cols
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        g = p.get
        idx = header_num(g("id"), int)
        # Kineto writes each device's position as its id; fall back to it when the id is unusable.
        cols["index"].append(i if idx is None else idx)
        cols["name"].append(header_text(g("name")))
        cols["device_type"].append(device_type(p))
        cols["compute_major"].append(header_num(g("computeMajor"), int))
        cols["compute_minor"].append(header_num(g("computeMinor"), int))
        cols["num_sms"].append(header_num(g("numSms"), int))
        cols["max_threads_per_sm"].append(header_num(g("maxThreadsPerMultiprocessor"), int))
        cols["max_threads_per_block"].append(header_num(g("maxThreadsPerBlock"), int))
        cols["regs_per_sm"].append(header_num(g("regsPerMultiprocessor"), int))
        cols["regs_per_block"].append(header_num(g("regsPerBlock"), int))
        cols["warp_size"].append(header_num(g("warpSize"), int))
        cols["smem_per_sm"].append(header_num(g("sharedMemPerMultiprocessor"), int))
        cols["smem_per_block"].append(header_num(g("sharedMemPerBlock"), int))
        cols["smem_per_block_optin"].append(header_num(g("sharedMemPerBlockOptin"), int))
        cols["total_memory"].append(header_num(g("totalGlobalMem"), int))
    return cols


def header_meta(doc: TraceFile) -> dict:
    """The header fields a Trace's ``meta`` keeps (versions, flags, the trace's name).

    >>> header_meta(TraceFile(schemaVersion=1, with_flops=1))["with_flops"]
    True
    """
    return {
        "schema_version": doc.schemaVersion if isinstance(doc.schemaVersion, (int, str)) else None,
        "cuda_runtime_version": header_num(doc.cuda_runtime_version, int),
        "cuda_driver_version": header_num(doc.cuda_driver_version, int),
        "cupti_version": header_num(doc.cupti_version, int),
        "with_flops": bool(doc.with_flops) if doc.with_flops is not None else None,
        "record_shapes": bool(doc.record_shapes) if doc.record_shapes is not None else None,
        "trace_name": header_text(doc.traceName) if doc.traceName is not None else None,
        "distributed": rank_meta(doc.distributedInfo, doc.kernelscopeRank, doc.host_name),
        "profiler_file_log": _log_lines(doc.WARNING, doc.ERROR),
    }


def _log_lines(*parts, cap: int = 200) -> list | None:
    """Kineto's logged warnings and errors as the file holds them (lists of text), or None.

    >>> _log_lines(["Dropped 12 activity records"], None)
    ['Dropped 12 activity records']
    """
    out = [header_text(x) for p in parts if isinstance(p, list) for x in p if isinstance(x, str)]
    return out[:cap] if out else None
