"""Nsight Compute reports (``.ncu-rep``) through NVIDIA's ``ncu_report`` reader.

``pip install "kernelscope[ncu]"`` brings the reader (NVIDIA's ``ncu-report`` wheel); it reads
reports on a machine without Nsight Compute or a GPU. One report becomes an :class:`NcuReport`:

- ``launches``: one row per profiled launch. Identifying columns and the metrics Nsight Compute's
  details page shows use the column names of the CSV import (:mod:`kernelscope.trace.ncu`:
  ``duration_ns``, ``theoretical_occupancy_pct``, ``achieved_occupancy_pct``, ...), so the two
  imports feed the same views; then the measured roofline (FLOP/s per precision and their peaks,
  bytes and bandwidth at DRAM, L2 and L1, computed from the counters exactly as Nsight Compute's
  roofline sections do) and the memory-access counters (sectors per request, bytes used per
  sector). ``attrs["metrics"]`` names the ncu metric (or formula) behind each column.
- ``stall_counts``: warp-state PC samples per launch and reason (ncu's names).
- ``rules``: Nsight Compute's own rule results (its advice, with its estimated speedup).
- ``samples``: per sampled instruction (PC): samples per reason, CUDA/Triton file and line when
  the kernel carries line info. ``sass`` holds the SASS listing around the hottest instructions,
  ``sources`` the text of the sampled lines (from the sources the report imported).

Reports can be read as written (``.ncu-rep``, ``.ncu-repz``) or gzip/xz-compressed
(``.ncu-rep.gz``, ``.ncu-rep.xz``), which shrinks them 20-40x for storing; the file is checked and
unpacked by :mod:`kernelscope.trace.ncu.report_file` before NVIDIA's reader opens it.
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelscope.errors import TraceError

# Opening a report moved to report_file.py; importers of these names here (loading, the
# Jupyter server route, the tests) keep working.
from kernelscope.trace.ncu.report_file import REPORT_MAGIC as REPORT_MAGIC
from kernelscope.trace.ncu.report_file import REPORT_SUFFIXES as REPORT_SUFFIXES
from kernelscope.trace.ncu.report_file import check_report_file as check_report_file
from kernelscope.trace.ncu.report_file import is_report_path as is_report_path
from kernelscope.trace.ncu.report_file import readable_path, report_head

INSTALL_HINT = 'reading .ncu-rep files needs NVIDIA\'s reader: pip install "kernelscope[ncu]"'

# Instructions of SASS shown before and after each hot instruction, and hot spots kept per launch.
SASS_CONTEXT = 4
HOT_PCS_PER_LAUNCH = 8
# Launches (the longest) whose samples are correlated to source lines and SASS by default.
SOURCE_LAUNCHES = 50

# -- what is read, and under which column name ------------------------------------------------------
# (column, ncu metric). Names shared with the CSV details page come first (same spelling as
# kernelscope.trace.ncu gives them), so both imports feed one view.
METRICS = [
    ("duration_ns", "gpu__time_duration.sum"),
    ("elapsed_cycles", "gpc__cycles_elapsed.max"),
    ("sm_frequency_hz", "gpc__cycles_elapsed.avg.per_second"),
    ("dram_frequency_hz", "dram__cycles_elapsed.avg.per_second"),
    ("sm_active_cycles", "sm__cycles_active.avg"),
    ("compute_sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("memory_throughput_pct", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("dram_throughput_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l1_per_tex_cache_throughput_pct", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("l2_cache_throughput_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("block_size", "launch__block_size"),
    ("grid_size", "launch__grid_size"),
    ("threads", "launch__thread_count"),
    ("registers_per_thread", "launch__registers_per_thread"),
    ("static_shared_memory_per_block_bytes", "launch__shared_mem_per_block_static"),
    ("dynamic_shared_memory_per_block_bytes", "launch__shared_mem_per_block_dynamic"),
    ("driver_shared_memory_per_block_bytes", "launch__shared_mem_per_block_driver"),
    ("shared_memory_configuration_size_bytes", "launch__shared_mem_config_size"),
    ("function_cache_configuration", "launch__func_cache_config"),
    ("cluster_size", "launch__cluster_size"),
    ("num_sms", "launch__sm_count"),
    ("waves_per_sm", "launch__waves_per_multiprocessor"),
    ("block_limit_barriers_blocks", "launch__occupancy_limit_barriers"),
    ("block_limit_sm_blocks", "launch__occupancy_limit_blocks"),
    ("block_limit_registers_blocks", "launch__occupancy_limit_registers"),
    ("block_limit_shared_mem_blocks", "launch__occupancy_limit_shared_mem"),
    ("block_limit_warps_blocks", "launch__occupancy_limit_warps"),
    ("theoretical_active_warps_per_sm_warps", "sm__maximum_warps_avg_per_active_cycle"),
    ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct"),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("achieved_active_warps_per_sm_warps", "sm__warps_active.avg.per_cycle_active"),
    ("l1_per_tex_hit_rate_pct", "l1tex__t_sector_hit_rate.pct"),
    ("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct"),
    ("local_memory_spilling_requests", "derived__local_spilling_requests"),
    ("one_or_more_eligible_pct", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    # memory access pattern (the coalescing check)
    ("global_load_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    ("global_load_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("global_store_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    ("global_store_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    ("global_load_bytes_per_sector", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"),
    ("global_store_bytes_per_sector", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"),
    ("l2_global_sectors", "memory_l2_theoretical_sectors_global"),
    ("l2_global_sectors_ideal", "memory_l2_theoretical_sectors_global_ideal"),
    ("dram_bytes_read", "dram__bytes_read.sum"),
    ("dram_bytes_write", "dram__bytes_write.sum"),
    # PC sampling
    ("pc_samples", "smsp__pcsamp_sample_count"),
    ("pc_sample_interval_cycles", "smsp__pcsamp_interval_cycles"),
]
_DEVICE = [("device_name", "device__attribute_display_name"),
           ("cc_major", "device__attribute_compute_capability_major"),
           ("cc_minor", "device__attribute_compute_capability_minor"),
           ("max_threads_per_sm", "device__attribute_max_threads_per_multiprocessor"),
           ("max_threads_per_block", "device__attribute_max_threads_per_block"),
           ("regs_per_sm", "device__attribute_max_registers_per_multiprocessor"),
           ("regs_per_block", "device__attribute_max_registers_per_block"),
           ("warp_size", "device__attribute_warp_size"),
           ("smem_per_sm", "device__attribute_max_shared_memory_per_multiprocessor"),
           ("smem_per_block", "device__attribute_max_shared_memory_per_block"),
           ("smem_per_block_optin", "device__attribute_max_shared_memory_per_block_optin"),
           ("total_memory", "device__attribute_total_memory"),
           ("device_sms", "device__attribute_multiprocessor_count")]
_LAUNCH = [("device", "launch__device_id"), ("context", "launch__context_id"), ("stream", "launch__stream_id"),
           ("grid_x", "launch__grid_dim_x"), ("grid_y", "launch__grid_dim_y"), ("grid_z", "launch__grid_dim_z"),
           ("block_x", "launch__block_dim_x"), ("block_y", "launch__block_dim_y"), ("block_z", "launch__block_dim_z")]

# The roofline, as Nsight Compute's SpeedOfLight roofline sections compute it: achieved work is
# operations per cycle (summed over the SM sub-partitions) times the cycle rate; a peak is the
# unit's peak per cycle times the cycle rate. CUDA-core precisions: (adds, muls, fmas x2, peak).
_CORE_FLOPS = {
    "fp64": (["smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
              "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
              "derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2"],
             "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"),
    "fp32": (["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
              "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
              "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2"],
             "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"),
    "fp16": (["derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2",
              "derived__smsp__sass_thread_inst_executed_op_hmul_pred_on_x2",
              "derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x4"],
             "derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4"),
}
# Tensor-core paths (the sm__ops_path_tensor_<...> metrics): (achieved, dense instruction paths
# whose fastest peak is the ceiling, fallbacks when the chip names no instruction path).
_TENSOR = {
    "tensor_fp64": (["src_fp64"], ["op_dmma_src_fp64"], ["src_fp64"]),
    "tensor_tf32": (["src_tf32_dst_fp32"],
                    ["op_hgmma_src_tf32_dst_fp32_sparsity_off", "op_hmma_src_tf32_dst_fp32_sparsity_off",
                     "op_hmma_src_tf32_dst_fp32"], ["src_tf32_dst_fp32_sparsity_off", "src_tf32_dst_fp32"]),
    "tensor_bf16": (["src_bf16_dst_fp32"],
                    ["op_hgmma_src_bf16_dst_fp32_sparsity_off", "op_hmma_src_bf16_dst_fp32_sparsity_off",
                     "op_hmma_src_bf16_dst_fp32"], ["src_bf16_dst_fp32_sparsity_off", "src_bf16_dst_fp32"]),
    "tensor_fp16": (["src_fp16"],
                    ["op_hgmma_src_fp16_sparsity_off", "op_hmma_src_fp16_dst_fp32_sparsity_off",
                     "op_hmma_src_fp16_dst_fp16_sparsity_off", "op_hmma_src_fp16_dst_fp32"],
                    ["src_fp16_sparsity_off", "src_fp16"]),
    "tensor_fp8": (["src_fp8_sparsity_off", "src_fp8_sparsity_on"],
                   ["op_qgmma_src_fp8_sparsity_off"], ["src_fp8_sparsity_off", "src_fp8"]),
    "tensor_int8": (["src_int8"],
                    ["op_igmma_src_int8_sparsity_off", "op_imma_src_int8_sparsity_off", "op_imma_src_int8"],
                    ["src_int8_sparsity_off", "src_int8"]),
}
PRECISIONS = [*_CORE_FLOPS, *_TENSOR]
# Memory levels of the roofline: (achieved bytes/s, peak bytes/cycle, cycles/s) metric options.
_LEVELS = {
    "dram": (["dram__bytes.sum.per_second"], ["dram__bytes.sum.peak_sustained"],
             "dram__cycles_elapsed.avg.per_second"),
    "l2": (["derived__lts__lts2xbar_bytes.sum.per_second", "l1tex__m_xbar2l1tex_read_bytes.sum.per_second"],
           ["derived__lts__lts2xbar_bytes.sum.peak_sustained", "l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained"],
           "lts__cycles_elapsed.avg.per_second"),
    "l1": (["derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
            "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second"],
           ["derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
            "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained"],
           "l1tex__cycles_elapsed.avg.per_second"),
}
_SM_RATE = "sm__cycles_elapsed.avg.per_second"
_SMSP_RATE = "smsp__cycles_elapsed.avg.per_second"
# PC-sampling stall reasons (all samples; the *_not_issued variants count only warps that did not issue).
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# Warp-state statistics, when PC sampling was not collected: average warps stalled per issue.
_WARP_STATE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
RULE_TYPES = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}


@dataclass
class NcuReport:
    """The tables read from one Nsight Compute report (see the module docstring)."""

    launches: pd.DataFrame
    stall_counts: pd.DataFrame
    rules: pd.DataFrame
    samples: pd.DataFrame
    sass: pd.DataFrame
    sources: pd.DataFrame
    notes: list = field(default_factory=list)
    source: str = ""


def import_ncu_report(path="<ncu report>"):
    """NVIDIA's ``ncu_report`` module, or a TraceError saying how to install it."""
    try:
        import ncu_report
    except ImportError:
        raise TraceError(path, INSTALL_HINT) from None
    return ncu_report


def read_ncu_report(path, *, source: bool | int = True, workdir: str | None = None) -> NcuReport:
    """Read an Nsight Compute report into tables (see the module docstring). ``source`` says
    for how many of the longest launches the per-instruction samples are correlated to source
    lines and SASS (True: :data:`SOURCE_LAUNCHES`; False or 0: none, so ``samples``, ``sass`` and
    ``sources`` are empty): correlating them makes ncu_report parse each kernel's code, which is
    most of the time a full report takes to read. ``workdir``: a folder the caller owns (and
    removes) to unpack into, else a temporary one removed here.

    >>> r = read_ncu_report("ncu_rep/triton_kernels.ncu-rep.xz")
    >>> r.launches[["kernel_name", "duration_ns", "achieved_occupancy_pct"]]
          kernel_name  duration_ns  achieved_occupancy_pct
    0      add_kernel      44320.0                 79.7994
    1  strided_kernel     295328.0                 83.5641
    2   matmul_kernel      29856.0                 11.8634
    """
    name = os.fspath(path)
    head = report_head(name)
    ncu_report = import_ncu_report(name)
    with contextlib.nullcontext(workdir) if workdir else tempfile.TemporaryDirectory(prefix="kernelscope-ncu-") as tmp:
        real = readable_path(name, head, tmp)
        try:
            ctx = ncu_report.load_report(real)
        except Exception as e:  # noqa: BLE001 - the reader's own error, as text
            raise TraceError(name, f"Nsight Compute's reader could not load it ({e})") from None
        actions = [ctx.range_by_idx(r).action_by_idx(i)
                   for r in range(ctx.num_ranges()) for i in range(ctx.range_by_idx(r).num_actions())]
        if not actions:
            raise TraceError(name, "holds no profiled kernels (not an Nsight Compute report, or ncu "
                                   "profiled nothing)")
        return _tables(ncu_report, actions, name, source)


# -- reading the actions ----------------------------------------------------------------------------
def _value(action, metric):
    m = action.metric_by_name(metric)
    if m is None or not m.has_value():
        return None
    v = m.value()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _first(action, metrics):
    for metric in metrics:
        v = _value(action, metric)
        if v is not None:
            return v, metric
    return None, metrics[0]


def _num(v):
    """A metric value of NVIDIA's reader as the table holds it: a number as given, else NaN.

    Not :func:`kernelscope.jsonable.num`: the table's missing value is NaN (not None), an infinite
    value ncu reports stays infinite, and text is never parsed (a metric is a number or absent).
    """
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan


def _tables(ncu_report, actions, name, source=True) -> NcuReport:
    rows, stalls, rules, samples, sass_rows, sources = [], [], [], [], [], []
    metrics = {c: m for c, m in METRICS + _DEVICE + _LAUNCH}
    notes = []
    warp_state_only = 0
    for i, a in enumerate(actions):
        row = {"id": i, "kernel_name": a.name(ncu_report.IAction.NameBase_DEMANGLED) or a.name(),
               "function_name": a.name(), "mangled_name": a.name(ncu_report.IAction.NameBase_MANGLED)}
        for col, metric in _LAUNCH + _DEVICE + METRICS:
            row[col] = _value(a, metric)
        major, minor = row.pop("cc_major"), row.pop("cc_minor")
        row["cc"] = f"{major}.{minor}" if major is not None and minor is not None else None
        row["nvtx"] = _nvtx(a)
        row.update(_roofline(a, row, metrics))
        rows.append(row)
        counts, warp_state = _stall_counts(a)
        warp_state_only += warp_state
        stalls.append({"id": i, "kernel_name": row["kernel_name"], **counts})
        rules.extend(_rules(a, i, row["kernel_name"]))
    # Source correlation makes ncu_report parse each kernel's code (tens to hundreds of ms a
    # launch): only for the longest launches, so a report of thousands stays quick to open.
    limit = SOURCE_LAUNCHES if source is True else int(source or 0)
    dur = [_num(r.get("duration_ns")) for r in rows]
    by_time = sorted(range(len(actions)), key=lambda j: -(dur[j] if dur[j] == dur[j] else 0.0))
    chosen = sorted(by_time[:limit])
    if 0 < limit < len(actions):
        notes.append(f"source hot spots and SASS for the {limit} longest of the {len(actions)} launches "
                     f"(ks.load_ncu(path, source=N) for more)")
    for i in chosen:
        a = actions[i]
        s, listing = _pc_samples(a, i)
        samples.extend(s)
        sass_rows.extend(listing)
        wanted = {}
        for r in s + listing:
            if r["file"] is not None:
                wanted.setdefault(r["file"], set()).add(r["line"])
        sources.extend({"id": i, "file": f, "line": ln, "text": t} for (f, ln), t in source_text(a, wanted).items())
    if warp_state_only:
        notes.append(f"{warp_state_only} launch(es) have no PC samples (the SourceCounters section was not "
                     "collected); their stall shares come from ncu's warp-state statistics instead.")
    launches = pd.DataFrame(rows)
    for col in launches.columns:
        if col in ("kernel_name", "function_name", "mangled_name", "cc", "nvtx", "device_name",
                   "function_cache_configuration"):
            continue
        launches[col] = _typed(launches[col])
    launches.attrs["metrics"] = _Shared({c: m for c, m in metrics.items() if c in launches.columns})
    launches.attrs["source"] = name
    return NcuReport(launches=launches, stall_counts=pd.DataFrame(stalls), rules=_frame(rules, _RULE_COLUMNS),
                     samples=_frame(samples, _SAMPLE_COLUMNS), sass=_frame(sass_rows, _SASS_COLUMNS),
                     sources=_frame(sources, ["id", "file", "line", "text"]), notes=notes, source=name)


class _Shared(dict):
    """A read-only mapping that pandas' attrs propagation shares instead of deep-copying (it
    deep-copies attrs into every column and frame derived from the table)."""

    def __deepcopy__(self, memo):
        return self


def _typed(s: pd.Series) -> pd.Series:
    """Whole-number columns as Int64, others as float64; text stays object."""
    vals = s.tolist()
    if any(isinstance(v, str) for v in vals):
        return s
    f = np.array([np.nan if v is None else float(v) for v in vals], dtype=float)
    ok = np.isfinite(f)
    if ok.any() and np.all(f[ok] == np.round(f[ok])) and all(isinstance(v, int) or v is None for v in vals):
        return pd.Series(pd.array([None if v is None else int(v) for v in vals], dtype="Int64"), index=s.index)
    return pd.Series(f, index=s.index)


def _frame(rows, columns) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _nvtx(a):
    """The push/pop NVTX ranges open around the launch, outermost first ("ks", "a/b")."""
    try:
        st = a.nvtx_state()
        if st is None:
            return None
        names = []
        for d in st.domains():
            names.extend(str(n) for n in st.domain_by_id(d).push_pop_ranges())
        return "/".join(names) or None
    except Exception:  # noqa: BLE001 - NVTX is optional context
        return None


def _roofline(a, row, metrics: dict) -> dict:
    """Achieved FLOP/s per precision with its peak, and bytes/s and bytes per memory level."""
    out = {}
    sm_rate, smsp_rate = _num(_value(a, _SM_RATE)), _num(_value(a, _SMSP_RATE))
    for p, (parts, peak) in _CORE_FLOPS.items():
        vals = [_num(_value(a, m)) for m in parts]
        have = [v for v in vals if v == v]
        out[f"{p}_flops_per_s"] = sum(have) * smsp_rate if have else np.nan
        out[f"{p}_peak_flops_per_s"] = _num(_value(a, peak)) * sm_rate
        metrics[f"{p}_flops_per_s"] = f"({' + '.join(parts)}) * {_SMSP_RATE}"
        metrics[f"{p}_peak_flops_per_s"] = f"{peak} * {_SM_RATE}"
    for p, (ach, dense, fallback) in _TENSOR.items():
        vals = [_num(_value(a, f"sm__ops_path_tensor_{m}.sum.per_cycle_elapsed")) for m in ach]
        have = [v for v in vals if v == v]
        out[f"{p}_flops_per_s"] = sum(have) * sm_rate if have else np.nan
        metrics[f"{p}_flops_per_s"] = " + ".join(f"sm__ops_path_tensor_{m}.sum.per_cycle_elapsed" for m in ach) \
            + f" (times {_SM_RATE})"
        # The ceiling is the fastest dense instruction path (wgmma beats mma.sync on Hopper); the
        # per-type total's peak counts 2:4 sparsity where the chip has it, so it is the fallback.
        peaks = [(v, m) for m in dense for v in [_num(_value(a, f"sm__ops_path_tensor_{m}.sum.peak_sustained"))]
                 if v == v and v > 0]
        if not peaks:
            peaks = [(v, m) for m in fallback for v in [_num(_value(a, f"sm__ops_path_tensor_{m}.sum.peak_sustained"))]
                     if v == v and v > 0][:1]
        best = max(peaks) if peaks else (np.nan, dense[0] if dense else fallback[0])
        out[f"{p}_peak_flops_per_s"] = best[0] * sm_rate
        metrics[f"{p}_peak_flops_per_s"] = f"sm__ops_path_tensor_{best[1]}.sum.peak_sustained * {_SM_RATE}"
    dur_s = _num(row.get("duration_ns")) * 1e-9
    for level, (ach, peak, rate) in _LEVELS.items():
        bps, m_ach = _first(a, ach)
        per_cycle, m_peak = _first(a, peak)
        out[f"{level}_bytes_per_s"] = _num(bps)
        out[f"{level}_peak_bytes_per_s"] = _num(per_cycle) * _num(_value(a, rate))
        out[f"{level}_bytes"] = _num(bps) * dur_s
        metrics[f"{level}_bytes_per_s"] = m_ach
        metrics[f"{level}_peak_bytes_per_s"] = f"{m_peak} * {rate}"
        metrics[f"{level}_bytes"] = f"{m_ach} * gpu__time_duration.sum"
    rd, wr = _num(row.get("dram_bytes_read")), _num(row.get("dram_bytes_write"))
    if rd == rd and wr == wr:
        out["dram_bytes"] = rd + wr    # the counters themselves, not rate x time
        metrics["dram_bytes"] = "dram__bytes_read.sum + dram__bytes_write.sum"
    return out


def _stall_counts(a) -> tuple[dict, int]:
    """PC samples per stall reason (ncu's names) or, without PC sampling, the warp-state ratios."""
    counts = {}
    for n in a.metric_names():
        if n.startswith(STALL_PREFIX) and not n.endswith("_not_issued"):
            v = _value(a, n)
            if v is not None:
                counts[n[len(STALL_PREFIX):]] = float(v)
    if counts and sum(counts.values()) > 0:
        return counts, 0
    ratios = {}
    for n in a.metric_names():
        m = _WARP_STATE.match(n)
        if m:
            v = _value(a, n)
            if v is not None:
                ratios[m.group(1)] = float(v)
    return ratios, int(bool(ratios))


_RULE_COLUMNS = ["id", "kernel_name", "rule", "rule_name", "section", "type", "title", "message",
                 "speedup_pct", "speedup_type"]
_MARKUP = re.compile(r"@(section|url|source):([^@]*)@")


def clean_message(text: str) -> str:
    """Nsight Compute's rule text with its link markup turned into words.

    >>> clean_message("see the @section:WarpStateStats:Warp State Statistics@ section")
    'see the Warp State Statistics section'
    >>> clean_message("the @url:Profiling Guide:https://docs.nvidia.com/x#y@ says")
    'the Profiling Guide (https://docs.nvidia.com/x#y) says'
    """
    def sub(m):
        kind, body = m.group(1), m.group(2)
        if kind == "section":
            return body.split(":", 1)[-1]
        if kind == "url":
            label, _, url = body.partition(":")
            return f"{label} ({url})" if url else label
        return body.rsplit(":", 1)[-1]    # @source:file:line:label@
    return _MARKUP.sub(sub, str(text or "")).strip()


def _rules(a, i, kernel) -> list:
    out = []
    try:
        results = a.rule_results_as_dicts()
    except Exception:  # noqa: BLE001 - rules are advice: a report without them still reads
        return out
    for r in results:
        msg = r.get("rule_message") or {}
        sp = r.get("speedup_estimation") or {}
        speed = sp.get("speedup")
        out.append({"id": i, "kernel_name": kernel, "rule": str(r.get("rule_identifier") or ""),
                    "rule_name": str(r.get("name") or ""), "section": str(r.get("section_identifier") or ""),
                    "type": RULE_TYPES.get(msg.get("type"), "none"), "title": clean_message(msg.get("title")),
                    "message": clean_message(msg.get("message")),
                    "speedup_pct": float(speed) if isinstance(speed, (int, float)) and math.isfinite(speed) else np.nan,
                    "speedup_type": SPEEDUP_TYPES.get(sp.get("type")) if sp else None})
    return out


_SAMPLE_COLUMNS = ["id", "pc", "samples", "file", "line", "reasons"]   # reasons: ncu's names -> samples
_SASS_COLUMNS = ["id", "pc", "sass", "file", "line", "samples", "hot"]


def _pc_samples(a, i) -> tuple[list, list]:
    """Per sampled PC: samples in all and per stall reason (ncu's names), file:line (when the kernel
    has line info); and the SASS around the hottest PCs (disassembly costs a first call per kernel,
    so only there)."""
    total = a.metric_by_name("smsp__pcsamp_sample_count")
    if total is None or not total.has_correlation_ids() or total.num_instances() == 0:
        return [], []
    pcs_m = total.correlation_ids()
    n = total.num_instances()
    pcs = [pcs_m.as_uint64(j) for j in range(n)]
    tot = np.array([total.as_uint64(j) for j in range(n)], dtype=float)
    reasons, mats = [], []
    for name in a.metric_names():
        if not name.startswith(STALL_PREFIX) or name.endswith("_not_issued"):
            continue
        m = a.metric_by_name(name)
        if m is None or m.num_instances() != n or not m.has_correlation_ids():
            continue
        c = m.correlation_ids()
        if c.as_uint64(0) != pcs[0] or c.as_uint64(n - 1) != pcs[-1]:
            continue     # a different PC order than the sample counts: not comparable per PC
        reasons.append(name[len(STALL_PREFIX):])
        mats.append([m.as_uint64(j) for j in range(n)])
    mat = np.array(mats, dtype=float).T if mats else np.zeros((n, 0))
    rows = []
    # Line info is all or nothing per kernel (-lineinfo, Triton always): ask for the hottest PC
    # first and skip the rest when it has none (each lookup costs time in the reader).
    has_lines = a.source_info(pcs[int(np.argmax(tot))]) is not None
    for j, pc in enumerate(pcs):
        info = a.source_info(pc) if has_lines else None
        f, ln = (info.file_name(), int(info.line())) if info is not None else (None, None)
        rows.append({"id": i, "pc": int(pc), "samples": float(tot[j]), "file": f, "line": ln,
                     "reasons": {reasons[k]: float(mat[j, k]) for k in range(len(reasons)) if mat[j, k] > 0}})
    listing = _sass_windows(a, i, rows, has_lines)
    return rows, listing


def _sass_windows(a, i, rows, has_lines) -> list:
    """SASS of the executed instructions around the hottest sampled PCs of one launch."""
    if not rows:
        return []
    hot = sorted(rows, key=lambda r: -r["samples"])[:HOT_PCS_PER_LAUNCH]
    executed = a.metric_by_name("inst_executed")
    if executed is not None and executed.has_correlation_ids() and executed.num_instances():
        c = executed.correlation_ids()
        all_pcs = sorted({c.as_uint64(j) for j in range(c.num_instances())} | {r["pc"] for r in rows})
    else:
        all_pcs = sorted(r["pc"] for r in rows)
    where = {pc: k for k, pc in enumerate(all_pcs)}
    by_pc = {r["pc"]: r for r in rows}
    hot_pcs = {r["pc"] for r in hot}
    keep = set()
    for r in hot:
        k = where[r["pc"]]
        keep.update(all_pcs[max(0, k - SASS_CONTEXT): k + SASS_CONTEXT + 1])
    out = []
    for pc in sorted(keep):
        try:
            text = (a.sass_by_pc(pc) or "").strip()
        except Exception:  # noqa: BLE001 - NVIDIA's reader raises its own types; a PC without SASS reads blank
            text = ""
        r = by_pc.get(pc)
        info = a.source_info(pc) if (r is None or r["file"] is not None) and has_lines else None
        out.append({"id": i, "pc": int(pc), "sass": text,
                    "file": info.file_name() if info is not None else None,
                    "line": int(info.line()) if info is not None else None,
                    "samples": r["samples"] if r else 0.0, "hot": pc in hot_pcs})
    return out


def source_text(action, wanted: dict) -> dict:
    """{(file, line): text} of the wanted lines ({file: {lines}}), from the source files the
    report imported (``ncu --import-source yes``); lines of files it did not import are absent."""
    out = {}
    if not wanted:
        return out   # source_files() itself costs time: ask only for lines we have
    try:
        files = action.source_files()
        files = {str(k): files[k] for k in list(files.keys()) if k in wanted}   # a SWIG map, no .get
    except Exception:  # noqa: BLE001 - source is optional context
        return out
    for f, lines in wanted.items():
        text = files.get(f)
        if text is None:
            continue
        src = str(text).splitlines()
        for ln in lines:
            if 1 <= ln <= len(src):
                out[(f, ln)] = src[ln - 1]
    return out
