"""The view model: what the browser gets of a Report.

One small JSON header (headline numbers, findings, backends, occupancy curves, roofline, the
column directory) plus one binary buffer holding the launch-level tables as little-endian typed
arrays (``Float64Array``/``Float32Array``/``Int32Array``). Strings travel once, in the header, as
dictionaries; the buffer holds their int32 codes. The browser maps each column with a zero-copy
typed-array view, so 100k launches cost one ``ArrayBuffer`` and no per-row JSON.

Both travel as one packed, gzipped blob (:func:`pack`): as the one binary buffer the anywidget
sends when its view asks (``kernelscope.view.widget``), and, base64-encoded, as the MIME bundle entry
(``application/vnd.kernelscope.report.v1+json``) that lets a saved notebook render with no kernel. Packing the header too keeps a saved notebook light
(the header's findings, roofline and names are most of a small report). Both are decoded by the
same front-end code (``js/src/view/data.js``), which also reads the older payload format (plain
JSON header beside a gzipped buffer) of notebooks saved before.
"""
from __future__ import annotations

import pandas as pd

from kernelscope.jsonable import jsonable
from kernelscope.panels import Panels, report_panels
from kernelscope.panels.base import safe
from kernelscope.panels.graphs import kernel_field_spec
from kernelscope.panels.header import raw_trace
from kernelscope.panels.kernels import name_notes, name_table
from kernelscope.panels.measured import PER_KERNEL, counter_panel
from kernelscope.panels.tuning import tuning_payload
from kernelscope.panels.window import (
    host_spans,
    in_window,
    kernel_window,
    window_note,
    window_rows,
    window_span,
    within,
)
from kernelscope.view.codec import VIEW_VERSION, is_numeric, pack_tables
from kernelscope.view.vocabulary import vocabulary

__all__ = ["VIEW_HOST_SPANS", "VIEW_LAUNCHES", "kernel_window", "view_model"]

# Launch-level columns that go to the browser: (column, typed-array kind). "str" columns are
# dictionary-encoded (int32 codes, -1 = missing).
LAUNCH_COLUMNS = [
    ("name", "str"), ("backend", "str"), ("device", "str"), ("stream", "i32"),
    ("start_us", "t32"), ("duration_us", "q32"),
    ("grid_x", "i32"), ("grid_y", "i32"), ("grid_z", "i32"),
    ("block_x", "i32"), ("block_y", "i32"), ("block_z", "i32"),
    ("registers_per_thread", "i32"), ("shared_mem_bytes", "i32"),
    ("theoretical_occupancy", "f32"), ("occupancy_limiter", "str"), ("waves", "f32"),
    ("op", "str"), ("source", "str"), ("correlation", "i32"), ("tensor_cores", "i32"),
    ("backend_rule", "str"), ("shape", "i32"),
]
COPY_COLUMNS = [
    ("name", "str"), ("kind", "str"), ("copy_kind", "str"), ("device", "str"), ("stream", "i32"),
    ("start_us", "t32"), ("duration_us", "q32"), ("bytes", "f64"), ("bandwidth_gbps", "f32"),
    ("src_memory", "str"), ("dst_memory", "str"), ("op", "str"),
]
# Host lanes of the timeline: every CPU op of each thread at its nesting depth (kind "op", or
# "annotation" for record_function / NVTX-style user ranges), and the CUDA runtime calls (kind
# "runtime", or "sync" for the host-blocking calls of trace.model.SYNC_CALLS) with the
# correlation id that ties a launch call to its kernel.
HOST_COLUMNS = [("name", "str"), ("tid", "str"), ("start_us", "t32"), ("duration_us", "q32"), ("kind", "str"),
                ("depth", "i32"), ("correlation", "i32")]
GAP_COLUMNS = [
    ("device", "str"), ("start_us", "t32"), ("duration_us", "q32"), ("cause", "str"), ("after_op", "str"),
    ("blocking_call", "str"),
]
# Launches (kernels + copies) sent to the browser at most. Past this the view gets one window
# of the trace (its first part by default, another on request: ``view_model(rep, window=...)``)
# up to the budget, with the host spans, gaps and counter samples of the same window, and says
# so; its headline numbers, findings, backends, roofline and op list stay whole-report, and an
# overview of the whole trace lets the user pick another window. The budget keeps the display
# of any report about as fast as that of a small one (benchmarks/view_payload.py: 50k launches
# and 100k host spans are ~9 MB of columns, well under a second to build and pack here).
VIEW_LAUNCHES = 50_000
# The same for the host lanes' spans (every CPU op and runtime call; ~40 bytes each).
VIEW_HOST_SPANS = 100_000




def view_model(rep, window: tuple | None = None, *, options: dict | None = None) -> tuple[dict, bytes]:
    """The report as (JSON header, binary column buffer) for the browser.

    ``window``: ``(from_us, until_us)``, the part of the trace the launch-level tables hold
    (either end None: the trace's start / as far as the budget goes), cut at
    :data:`VIEW_LAUNCHES` launches and :data:`VIEW_HOST_SPANS` host spans from ``from_us``;
    None: the trace's first part up to the budget. What covers the whole report (headline
    figures, findings, backends, roofline, ops, the overview) is a panel computed once per
    report (:func:`kernelscope.panels.report_panels`), so each window costs only its own rows.
    ``options``: display options (``top``, ``sort``: the kernel table's rows and order).

    >>> header, buf = view_model(ks.load("launch_bound.pt.trace.json.gz"))
    >>> header["stats"]["launches"], len(buf)
    (2000, 344056)
    >>> view_model(rep, window=(5000.0, None))[0]["window"]["from_us"]
    5000.0
    """
    p = _whole(rep)
    k_all, copies_all = p.kernels, p.copies
    span = window_span(p.launch_starts, p.host_starts, window, (VIEW_LAUNCHES, VIEW_HOST_SPANS))
    k, copies, host, where = _launch_rows(rep, p, span)
    ncu_cols = [c for c in k.columns if c.startswith("ncu_") and is_numeric(k[c])]
    counters = p.counters
    problems = p.problems
    tl = p.timeline
    gaps = tl.gaps.reset_index(drop=True) if tl is not None else pd.DataFrame()
    window = None
    if span is not None:
        lo, until = span
        gaps = within(gaps, lo, until, overlapping=True)
        if counters is not None:
            counters = (within(counters[0], lo, until), counters[1])
        window = _window(span, k, k_all, copies, copies_all, host, p)
    tables, buf = pack_tables(_parts(k, copies, gaps, host, counters, ncu_cols))
    header = {
        "version": VIEW_VERSION,
        "vocabulary": vocabulary(),
        "title": p.header.title,
        "partial": p.header.partial,
        "notes": p.notes + problems + ([window_note(window)] if window else []),
        "window": window,
        "stats": p.header.stats,
        "devices": p.header.devices,
        "findings": p.findings,
        # The first screen: what to fix first, ranked by the time at stake (analysis/priorities.py).
        "fixes": p.fixes,
        # What this report can show: a run's timeline, or an Nsight Compute replay's kernels only
        # (its tabs, tiles, who measured the durations; analysis/replay.py).
        "capabilities": p.header.capabilities,
        # The completeness ledger (analysis/completeness.py): its ``line`` under the tiles.
        "completeness": p.header.completeness,
        # The tab a report opens on: CPU ops when the run recorded no GPU work.
        "open_tab": "CPU ops" if not len(k_all) and not len(copies_all) and len(rep.ops) else "Kernels",
        "backends": p.backends,
        "names": name_table(k),
        "name_notes": name_notes(k),
        "shapes": p.shapes if len(k) else [],
        "roofline": p.roofline,
        "ops": p.ops[0],
        # How many op names there are: "ops" holds the costliest TOP_OPS of them.
        "op_names": p.ops[1],
        # The Chrome trace the report was read from or written with (--trace), for Perfetto.
        "raw_trace": raw_trace(rep),
        "ncu_columns": ncu_cols,
        # Hardware-counter samples (the "counters" table) and warp stalls, with their labels.
        "counters": counter_panel(rep, counters),
        "stalls": p.stalls,
        # What produced each kernel, its knobs, and its autotunings' candidates (panels/tuning.py).
        "tuning": safe(lambda: tuning_payload(rep, where, p.tuning_kernels), None, problems, "autotuning"),
        **_run_parts(p),
        # The kernel deep dive of launches Nsight Compute measured (analysis/kernel_detail.py).
        "kernel_detail": p.kernel_detail,
        # Display options (%%kernelprofile --top, --sort; Report.display(top=..., sort=...)).
        "view": _options(rep, options),
        "tables": tables,
        "nbytes": len(buf),
    }
    return header, buf


def _run_parts(p: Panels) -> dict:
    """The views of how the run went, each None where it has nothing to show."""
    return {
        # The CUDA graphs replayed, and the labels of each replayed kernel's fields (panels/graphs.py).
        "graphs": p.graphs,
        "steps": p.steps,  # a training loop's steps and their breakdown (panels/steps.py; js/src/view/steps.js)
        "memory": p.memory,   # the allocator's lane under the timeline, what held the peak (panels/memory.py)
    }


def _whole(rep) -> Panels:
    """The report's panels, the whole-report ones computed in the order the view has always
    computed them (a big report's call tree, on its own thread since the report was made, last)."""
    p = report_panels(rep)
    for part in ("timeline", "names", "launch_starts", "host_starts", "counters", "header", "findings", "fixes",
                 "backends", "roofline", "stalls", "shapes", "kernel_detail", "graphs", "depth", "ops", "overview"):
        getattr(p, part)
    return p


def _launch_rows(rep, p: Panels, span) -> tuple:
    """(kernels, copies, host spans) the view holds: all, or those of the window ``span``;
    and ``where``, the view's kernel row of each rep.kernels row (None: all of them)."""
    k_all, copies_all = p.kernels, p.copies
    where = None
    if span is None:
        k, copies = k_all.reset_index(drop=True), copies_all.reset_index(drop=True)
        host = host_spans(rep.ops, rep.runtime, p.depth)
    else:
        lo, until = span
        keep = in_window(k_all, lo, until) if len(k_all) and "start_us" in k_all.columns else None
        k, copies = within(k_all, lo, until, keep=keep), within(copies_all, lo, until)
        where = window_rows(k_all, lo, until, keep)
        host = host_spans(rep.ops, rep.runtime, p.depth, lo, until)
    if "shape" not in k.columns:     # the launch shape's code: its row of rep.shapes
        k = k.assign(shape=0)
    return k, copies, host, where


def _parts(k, copies, gaps, host, counters, ncu_cols) -> list:
    """The launch-level tables of the payload with their column specs."""
    extra = [c for c in ("flops", "bytes", "dram_bytes") if c in k.columns and is_numeric(k[c])]
    counter_cols = [c for c in PER_KERNEL if c in k.columns and is_numeric(k[c])]
    launch_spec = (LAUNCH_COLUMNS + [(c, "f64") for c in ncu_cols + extra] + [(c, "f32") for c in counter_cols]
                   + ([("top_stall", "str")] if "top_stall" in k.columns else [])
                   # A replayed graph kernel's capture: graph, replay, node, how matched (panels/graphs.py).
                   + kernel_field_spec(k))
    copy_spec = COPY_COLUMNS + [(c, "f32") for c in PER_KERNEL if c in copies.columns]
    parts = [("kernels", k, launch_spec), ("copies", copies, copy_spec), ("gaps", gaps, GAP_COLUMNS),
             ("host", host, HOST_COLUMNS)]
    if counters is not None:
        parts.append(("counters", counters[0], counters[1]))
    return parts


def _window(span, k, k_all, copies, copies_all, host, p: Panels) -> dict:
    """What a window of a report too big for one view holds, of what, and the overview."""
    lo, until = span
    return {"from_us": None if lo is None else float(lo), "until_us": float(until),
            "launches": int(len(k)), "of_launches": int(len(k_all)),
            "copies": int(len(copies)), "of_copies": int(len(copies_all)),
            "host_spans": int(len(host)), "of_host_spans": int(len(p.host_starts)),
            "budget": {"launches": VIEW_LAUNCHES, "host_spans": VIEW_HOST_SPANS},
            "overview": p.overview}


def _options(rep, options: dict | None) -> dict:
    """The display options the view opens with: those given to this display, else those a
    report saved before display options were arguments still carries in ``meta["view"]``."""
    given = options if options is not None else rep.meta.get("view")
    return jsonable(given) if isinstance(given, dict) else {}
