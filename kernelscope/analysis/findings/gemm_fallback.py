"""GEMM fallbacks: a GEMM served by a kernel built for an older architecture or with alignment 1/2.

cuBLAS picks such kernels when a matrix dimension is not a multiple of 16 bytes (8 half-precision
elements): its fast tensor-core kernels need aligned rows. On an H200 GPT-2's LM head (vocabulary
50257) ran as ``cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1``, 34% of the step's GPU
time. The finding names the op, its recorded shapes, the odd dimension and the padding that fixes it.
"""
from __future__ import annotations

import re

import numpy as np

from kernelscope.analysis.findings.base import Finding, severity_for
from kernelscope.units import fmt_us

# Share of GPU kernel time below which a fallback is not worth a finding.
MIN_SHARE = 0.02
PAD_TO = 64
_ALIGN = re.compile(r"_align([12])(?:\b|_)|aligna([12])(?:\b|_)")
_ARCH = re.compile(r"cutlass_(\d{2,3})_|^(?:void )?sm(\d{2,3})_|\b(volta|turing)_")
_ARCH_CC = {"volta": 70, "turing": 75}
# bytes per element of the dtypes ATen records
_ELEM = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "c10::Float8_e4m3fn": 1,
         "c10::Float8_e5m2": 1, "signed char": 1}
GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
            "aten::_addmm_activation"}


def _gemm_dims(op, dims):
    """(M, K, N) of a GEMM op from its recorded input shapes, or None."""
    mats = [d for d in dims if isinstance(d, list) and len(d) >= 2]
    if op in ("aten::mm", "aten::bmm", "aten::matmul") and len(mats) >= 2:
        a, b = mats[0], mats[1]
        return a[-2], a[-1], b[-1]
    if op in ("aten::addmm", "aten::baddbmm", "aten::_addmm_activation") and len(mats) >= 2:
        a, b = mats[-2], mats[-1]
        return a[-2], a[-1], b[-1]
    if op == "aten::linear" and len(mats) >= 2:      # input [.., K], weight [N, K]
        a, w = mats[0], mats[1]
        return int(np.prod(a[:-1])), a[-1], w[0]
    return None


def _device_cc(report):
    d = report.devices
    if not len(d):
        return None
    try:
        return int(d["compute_major"].iloc[0]) * 10 + int(d["compute_minor"].iloc[0])
    except (TypeError, ValueError):
        return None


def gemm_fallback_findings(report, tl) -> list:
    """GEMMs that ran on an old-architecture or alignment-1/2 kernel because a dimension is odd.

    >>> gemm_fallback_findings(ks.load("wild/gpt2_infer.pt.trace.json.gz"), None)[0].title
    'GEMM fallback: aten::mm [512, 768] x [768, 50257] ran on an sm75 alignment-1 kernel'
    """
    k = report.kernels
    total = float(k["duration_us"].sum()) if len(k) else 0.0
    if total <= 0:
        return []
    cc = _device_cc(report)
    ops = report.ops
    out = []
    cand = k[k["backend"].isin(["cuBLAS", "CUTLASS"]) & k["op"].isin(GEMM_OPS)]
    for (name, op), g in cand.groupby(["name", "op"], sort=False):
        am = _ALIGN.search(name)
        arch = _ARCH.search(name)
        built = None
        if arch:
            built = int(arch.group(1) or arch.group(2)) if (arch.group(1) or arch.group(2)) else _ARCH_CC[arch.group(3)]
        old = built is not None and cc is not None and built < 80 <= cc
        # CUDA-core (SIMT, FFMA) kernels are alignment-1 by design: only tensor-core ones fall back.
        am = am if g["tensor_cores"].fillna(False).astype(bool).any() else None
        if not (am or old):
            continue
        dur = float(g["duration_us"].sum())
        if dur / total < MIN_SHARE:
            continue
        shapes, types, mnk = None, None, None
        idx = g["op_index"].dropna()
        if len(idx) and "input_dims" in ops.columns:
            row = ops.iloc[int(idx.iloc[0])]
            shapes, types = row["input_dims"], row["input_types"]
            mnk = _gemm_dims(op, shapes) if isinstance(shapes, list) else None
        elem = next((_ELEM[t] for t in (types or []) if t in _ELEM), 2)
        per = max(1, 16 // elem)
        odd = [(n, v) for n, v in zip("MKN", mnk or ()) if isinstance(v, int) and v % per]
        if mnk and not odd and not old:
            continue    # aligned shapes: the kernel choice has another cause (strides), not this one
        align = int(am.group(1) or am.group(2)) if am else None
        what = " ".join(x for x in (f"sm{built}" if old else None,
                                    f"alignment-{align}" if align else None) if x) + " kernel"
        mats = [s for s in (shapes or []) if isinstance(s, list) and len(s) >= 2]
        shape_txt = " x ".join(str(s) for s in mats) if mats else "(shapes not recorded: record_shapes=True)"
        ideal = _ideal_us(report, name, op)
        cost = max(dur - ideal, 0.0) if ideal is not None else dur
        fix = ""
        if odd:
            n, v = odd[-1]
            pad = -(-v // PAD_TO) * PAD_TO
            fix = (f" {n} = {v} is not a multiple of {per} ({16} bytes of {elem}-byte elements), so cuBLAS "
                   f"cannot use its aligned tensor-core kernels. Fix: pad {n} to {pad} (a multiple of "
                   f"{PAD_TO}; in a language model's head {n} is the vocabulary: pad the embedding and "
                   f"LM-head weights to {pad} rows and ignore the extra logits), or pass the padded size "
                   "to the model config (e.g. pad_vocab_size_multiple).")
        elif mnk:
            fix = " Every recorded dimension is aligned: check the tensors' strides (a transposed or sliced view)."
        dev = f" on an sm_{cc} GPU" if cc else ""
        short = g["short_name"].iloc[0] if "short_name" in g.columns else name
        detail = (f"{op} {shape_txt} ran {len(g)} time(s) as {short}, an {what}{dev}: "
                  f"{fmt_us(dur)}, {dur / total:.0%} of GPU kernel time. A GEMM served by a kernel built for "
                  "an older architecture, or with alignment 1/2, usually means a dimension that is not a "
                  f"multiple of 8 (16 bytes).{fix} Time at stake: {fmt_us(cost)}"
                  + (" (its time above the roofline's ideal)." if ideal is not None else " (all of its time)."))
        evidence = {"op": op, "kernel": name, "launches": int(len(g)), "time_us": dur, "share": dur / total,
                    "input_dims": shapes, "input_types": types, "mnk": list(mnk) if mnk else None,
                    "odd_dims": {n: v for n, v in odd}, "built_for_sm": built, "device_sm": cc,
                    "alignment": align, "pad_to": PAD_TO, "ideal_us": ideal}
        title = f"GEMM fallback: {op} {shape_txt} ran on an {what}"
        cause = (f"cuBLAS picked an {what} for {op} {shape_txt}"
                 + (f": {odd[-1][0]} = {odd[-1][1]} is not a multiple of {per}." if odd else "."))
        fix_line = (f"Pad {odd[-1][0]} to {-(-odd[-1][1] // PAD_TO) * PAD_TO} (a multiple of {PAD_TO})." if odd
                    else "Check the tensors' strides (a transposed or sliced view)." if mnk
                    else "Record shapes (record_shapes=True) to see which dimension is unaligned.")
        out.append(Finding("gemm_fallback", severity_for(cost, tl.window.get("active_us") if tl else None),
                           title, detail, evidence, cost, cause=cause, fix=fix_line,
                           link={"view": "kernels", "names": [str(name)], "label": f"kernel table: {short}"}))
    out.sort(key=lambda f: -f.cost_us)
    return out


def _ideal_us(report, name, op):
    try:
        rl = report.roofline if hasattr(report, "roofline") else None
        if rl is None:
            from kernelscope.analysis.roofline import roofline
            rl = roofline(report)
    except Exception:  # noqa: BLE001 - no roofline for this report (no shapes, unknown device): cost is all of it
        return None
    if not len(rl):
        return None
    g = rl[(rl["kernel"] == name) & (rl["op"] == op) & rl["roof_share"].notna()]
    if not len(g):
        return None
    return float((g["duration_us"] * g["roof_share"]).sum())
