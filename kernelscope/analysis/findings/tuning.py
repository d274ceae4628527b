"""Autotuning findings: what each tuning's candidates say about its config space.

From ``report.autotune`` (the candidates the process measured, :mod:`kernelscope.capture.tuning`)
and the launches: the winner spills; candidates capped by occupancy, and what the fastest have
in common; a spread so narrow that tuning did not matter, or a winner inside the noise of the
runner-up; a tuning key that holds no size (tuned at one shape, run at others); Inductor's choice
between its Triton templates and cuBLAS and by how much; a tuning that compared nothing.

These say how to change the config space, not time the GPU lost: their cost is 0 and their
severity says how much the point matters (a spilling winner is worth fixing first).
"""
from __future__ import annotations

import re

from kernelscope.analysis.findings.base import MAX_EVIDENCE_ROWS, Finding, kernel_link
from kernelscope.jsonable import num
from kernelscope.units import fmt_us

# Candidates within this factor of the winner count among "the fastest".
FAST_WITHIN = 1.10
# Occupancy at or below which a candidate counts as capped by it.
LOW_OCCUPANCY = 0.25
# A spread of p50s below this share of the winner's means the space did not matter.
NARROW_SPREAD = 0.03
_INT_KEY = re.compile(r"(?<![\w.])\d+(?![\w.])")


def _rows(t):
    return t.astype(object).where(t.notna(), None).to_dict("records")


def _ms(v):
    return fmt_us(float(v) * 1000.0)


def _knobs(row) -> dict:
    out = {}
    for part in str(row.get("config") or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    for k in ("num_warps", "num_stages"):
        if row.get(k) is not None:
            out[k] = str(row[k])
    return out


def _common(rows) -> dict:
    """The knobs every one of ``rows`` sets to the same value."""
    if not rows:
        return {}
    first = _knobs(rows[0])
    return {k: v for k, v in first.items() if all(_knobs(r).get(k) == v for r in rows[1:])}


def tuning_findings(report, tl=None) -> list:
    """Findings of every autotuning in the report (none without ``report.autotune``).

    >>> [f.kind for f in tuning_findings(ks.load("triton_tuning.ksreport.json.gz"))]   # doctest: +SKIP
    ['autotune_winner_spills', 'autotune_occupancy', ...]
    """
    at = getattr(report, "autotune", None)
    if at is None or not len(at):
        return []
    out = []
    for _, g in at.groupby("tuning", sort=True):
        rows = _rows(g)
        timed = [r for r in rows if r["p50_ms"] is not None]
        win = next((r for r in rows if r["winner"]), None)
        kernel = str(rows[0]["kernel"])
        where = f"{kernel} ({rows[0]['tuner']}, shape {rows[0]['shape_key']})" if rows[0].get("shape_key") else \
            f"{kernel} ({rows[0]['tuner']})"
        cached = all(r["cached"] for r in rows)
        when = " (measured before this region)" if cached else ""
        if len(timed) <= 1:
            out.append(Finding(
                "autotune_one_config", "info", f"Only one config of {kernel} was measured{when}: nothing was compared",
                f"The tuning of {where} has {len(rows)} candidate(s) and {len(timed)} timing(s): the tuner "
                "took its config without comparing it with another, so the table cannot say whether a better "
                "one exists. " + (str(rows[0]["note"]) + "." if rows[0].get("note") else ""),
                {"kernel": kernel, "tuning": int(rows[0]["tuning"]), "candidates": len(rows)},
                cause="one config in the space", fix="give the autotuner a few configs that differ in tile, "
                "warps and stages", link=kernel_link([kernel], f"{kernel}'s launches")))
            continue
        if win is None:
            continue
        timed.sort(key=lambda r: r["p50_ms"])
        best = timed[0]["p50_ms"]
        out.extend(_winner_spills(win, where, kernel, when))
        out.extend(_occupancy(timed, best, where, kernel, win))
        out.extend(_spilling_candidates(timed, win, where, kernel))
        out.extend(_spread(timed, win, best, where, kernel, when))
        if rows[0]["tuner"] == "inductor max-autotune":
            out.extend(_inductor_choice(timed, win, where, kernel))
    out.extend(_sizeless_keys(at, report.kernels))
    return out


def _winner_spills(win, where, kernel, when) -> list:
    if not win.get("spills"):
        return []
    sp = int(win["spills"])
    return [Finding(
        "autotune_winner_spills", "medium",
        f"The autotuner's winner for {kernel} spills {sp * 4:,} bytes per thread to local memory{when}",
        f"The fastest candidate of {where}, {win['config']} (num_warps={win['num_warps']}, "
        f"num_stages={win['num_stages']}), uses {win['registers']} registers per thread and spills "
        f"{sp} registers (Triton's n_spills: local memory, {sp * 4:,} bytes per thread): every spilled "
        "value is a round trip to L1/L2. It won against this space, not against a config that fits: "
        "add candidates with fewer accumulators per thread (a smaller tile per warp, or more warps for "
        "the same tile).",
        {"kernel": kernel, "config": win["config"], "spills": sp, "registers": win["registers"],
         "p50_ms": win["p50_ms"], "tuning": int(win["tuning"])},
        cause="winner spills registers", fix="add configs with a smaller tile per warp or more warps",
        link=kernel_link([kernel], f"{kernel}'s launches"))]


# Why a candidate spills decides what the spills say: at the 255-register cap its tile needs more
# accumulators than a thread holds; well under it (48 registers, 2 spilled, on the H200) the
# compiler chose to spill a few, which alone does not explain a slow candidate.
MAX_REGISTERS = 255
AT_THE_CAP = (". A tile that needs more accumulators than 255 registers per thread hold cannot win; such "
              "configs only cost compile and benchmark time.")
UNDER_THE_CAP = (". They spill with fewer than 255 registers in use: the compiler chose to, their tiles are not "
                 "too big for a thread's registers, and what the spills cost depends on how often the spilled "
                 "values are read; compare their tiles, warps and occupancy before blaming the spills.")


def _at_cap(r) -> bool:
    reg = num(r.get("registers"))
    return reg is not None and reg >= MAX_REGISTERS


def _spilling_candidates(timed, win, where, kernel) -> list:
    sp = [r for r in timed if r.get("spills") and r is not win]
    if not sp:
        return []
    worst = max(sp, key=lambda r: r["spills"])
    return [Finding(
        "autotune_candidates_spill", "info",
        f"{len(sp)} {kernel} candidate(s) spill registers to local memory, the worst "
        f"{worst['vs_best']:.1f}x the winner",
        f"In {where}: " + "; ".join(
            f"{r['config']} (num_warps={r['num_warps']}) spills {int(r['spills'])} registers "
            f"({int(r['spills']) * 4:,} bytes per thread) and runs {r['vs_best']:.1f}x the winner"
            for r in sp[:5]) + (AT_THE_CAP if any(_at_cap(r) for r in sp[:5]) else UNDER_THE_CAP),
        {"kernel": kernel, "spilling": [{"config": r["config"], "num_warps": r["num_warps"], "spills": r["spills"],
                                         "vs_best": r["vs_best"]} for r in sp[:MAX_EVIDENCE_ROWS]]},
        cause="candidates spill", fix="drop configs whose tile per warp spills",
        link=kernel_link([kernel], f"{kernel}'s launches"))]


def _occupancy(timed, best, where, kernel, win) -> list:
    fast = [r for r in timed if r["p50_ms"] <= best * FAST_WITHIN]
    # Capped: at most LOW_OCCUPANCY and below the winner's (a winner at 25% says 25% is enough).
    bar = LOW_OCCUPANCY if win.get("theoretical_occupancy") is None else min(LOW_OCCUPANCY, win["theoretical_occupancy"])
    capped = [r for r in timed if r["theoretical_occupancy"] is not None and r["theoretical_occupancy"] <= bar
              and (win.get("theoretical_occupancy") is None or r["theoretical_occupancy"] < win["theoretical_occupancy"])
              and r["p50_ms"] > best * FAST_WITHIN]
    if not capped:
        return []
    limiters = {}
    for r in capped:
        limiters.setdefault(str(r["occupancy_limiter"]), []).append(r)
    parts = [f"{len(v)} by {k}" for k, v in sorted(limiters.items(), key=lambda kv: -len(kv[1]))]
    common = _common(fast)
    shared = ", ".join(f"{k}={v}" for k, v in common.items()) or "no single knob"
    fastest = (f"No other candidate is within {FAST_WITHIN - 1:.0%} of the winner ({shared})." if len(fast) == 1 else
               f"The {len(fast)} fastest (within {FAST_WITHIN - 1:.0%} of the winner) have in common: {shared}.")
    won = "" if win.get("theoretical_occupancy") is None else f", which runs at {win['theoretical_occupancy']:.0%}"
    ev = [{"config": r["config"], "num_warps": r["num_warps"], "num_stages": r["num_stages"],
           "p50_ms": r["p50_ms"], "vs_best": r["vs_best"], "theoretical_occupancy": r["theoretical_occupancy"],
           "occupancy_limiter": r["occupancy_limiter"], "registers": r["registers"], "spills": r["spills"]}
          for r in capped[:MAX_EVIDENCE_ROWS]]
    slowest = max(capped, key=lambda r: r["p50_ms"])
    return [Finding(
        "autotune_occupancy", "low",
        f"{len(capped)} of {len(timed)} {kernel} candidates are capped below the winner's occupancy and lose "
        f"({', '.join(parts)})",
        f"In {where}, {len(capped)} candidates hold fewer warps per SM than the winner{won}: theoretical "
        f"occupancy at most {bar:.0%} (our calculator on this GPU), and they run {_ms(best * FAST_WITHIN)} or slower, "
        f"up to {slowest['vs_best']:.1f}x the winner ({slowest['config']}, num_warps={slowest['num_warps']}). "
        f"{fastest} "
        "Occupancy is not the goal (a GEMM can run well at 12%); where a capped config also loses, drop it "
        "from the space and spend the search around what the fastest share.",
        {"kernel": kernel, "capped": ev, "fastest_common": common, "fastest": len(fast)},
        cause="config space holds occupancy-capped candidates",
        fix=f"spend the search around {shared}", link=kernel_link([kernel], f"{kernel}'s launches"))]


def _spread(timed, win, best, where, kernel, when) -> list:
    worst = timed[-1]["p50_ms"]
    out = []
    if (worst - best) / best < NARROW_SPREAD:
        out.append(Finding(
            "autotune_narrow_spread", "info",
            f"Tuning {kernel} did not matter{when}: its {len(timed)} candidates are within "
            f"{(worst - best) / best:.1%} of each other",
            f"In {where}, the slowest candidate ({_ms(worst)}) is within {(worst - best) / best:.1%} of the "
            f"fastest ({_ms(best)}): every config in this space performs alike, and the tuning only costs "
            "compile and benchmark time. Fix one config, or widen the space where it matters (tile size).",
            {"kernel": kernel, "best_ms": best, "worst_ms": worst, "candidates": len(timed)},
            cause="config space too uniform", fix="fix one config, or try tiles that differ more",
            link=kernel_link([kernel], f"{kernel}'s launches")))
    runner = next((r for r in timed if r is not win), None)
    if runner is not None and win.get("p80_ms") is not None and runner.get("p20_ms") is not None \
            and runner["p20_ms"] <= win["p80_ms"]:
        out.append(Finding(
            "autotune_noisy_winner", "low",
            f"The winner of {kernel}'s tuning is inside the noise{when}: the runner-up's p20 "
            f"({_ms(runner['p20_ms'])}) is at or below the winner's p80 ({_ms(win['p80_ms'])})",
            f"In {where}, the winner {win['config']} (p50 {_ms(win['p50_ms'])}, p20-p80 "
            f"{_ms(win['p20_ms'])}-{_ms(win['p80_ms'])}) and the runner-up {runner['config']} "
            f"(num_warps={runner['num_warps']}, p50 {_ms(runner['p50_ms'])}, p20-p80 {_ms(runner['p20_ms'])}-"
            f"{_ms(runner['p80_ms'])}) overlap: another run may pick the other. Either is fine; if the choice "
            "matters, benchmark longer (more repetitions) or on the production shape.",
            {"kernel": kernel, "winner": win["config"], "runner_up": runner["config"],
             "winner_p20_p80": [win["p20_ms"], win["p80_ms"]], "runner_up_p20_p80": [runner["p20_ms"], runner["p80_ms"]]},
            cause="winner within the benchmark's noise", fix="benchmark longer before trusting the choice",
            link=kernel_link([kernel], f"{kernel}'s launches")))
    return out


def _inductor_choice(timed, win, where, kernel) -> list:
    extern = [r for r in timed if r["choice"] == "extern"]
    template = [r for r in timed if r["choice"] != "extern"]
    if not extern or not template:
        return []
    won_extern = win["choice"] == "extern"
    other = (template if won_extern else extern)[0]
    ratio = other["p50_ms"] / win["p50_ms"] if win["p50_ms"] else float("nan")
    w_label = f"cuBLAS/ATen ({win['config']})" if won_extern else f"its Triton template {win['config']}"
    o_label = f"its best Triton template {other['config']} (num_warps={other['num_warps']}, " \
              f"num_stages={other['num_stages']})" if won_extern else f"cuBLAS/ATen ({other['config']})"
    return [Finding(
        "autotune_inductor_choice", "info",
        f"Inductor chose {'cuBLAS' if won_extern else 'a Triton template'} for {win.get('op') or kernel}: "
        f"{ratio:.2f}x faster than {'its best template' if won_extern else 'cuBLAS'}",
        f"Max-autotune timed {len(extern)} extern and {len(template)} Triton template choice(s) for "
        f"{rows_shape(win)}: {w_label} ran in {_ms(win['p50_ms'])}, {o_label} in {_ms(other['p50_ms'])} "
        f"({ratio:.2f}x). " + ("The templates did not pay for their compile time here: "
                               "`max_autotune_gemm_backends=\"ATEN\"` skips them for this shape." if won_extern else
                               "The template's launch is the kernel in the table; its config is the row above."),
        {"op": win.get("op"), "shape_key": win.get("shape_key"), "winner": win["config"], "winner_ms": win["p50_ms"],
         "other": other["config"], "other_ms": other["p50_ms"], "ratio": ratio},
        cause="Inductor's GEMM choice", fix="nothing to fix: the table shows the margin",
        link=None)]


def rows_shape(r) -> str:
    return str(r.get("shape_key") or r.get("op") or r.get("kernel"))


def _sizeless_keys(at, kernels) -> list:
    """Triton tunings whose key holds no integer (``key=[]``: dtypes only): the config was tuned
    at the first size it saw and reused for every other; the launches say at which sizes it ran."""
    out = []
    tr = at[at["tuner"] == "triton.autotune"]
    for kernel, g in tr.groupby("kernel", sort=False):
        keys = set(g["shape_key"].dropna().astype(str))
        if not keys or any(_INT_KEY.search(k) for k in keys):
            continue
        launches = kernels[kernels["name"] == kernel]
        grids = launches[["grid_x", "grid_y", "grid_z"]].drop_duplicates()
        sizes = ", ".join(f"{int(x)}x{int(y)}x{int(z)}" for x, y, z in grids.astype("Int64").fillna(-1).to_numpy()[:5])
        cached = bool(g["cached"].all())
        out.append(Finding(
            "autotune_sizeless_key", "low",
            f"{kernel} is autotuned on a key with no size: tuned for one shape, run at any other",
            f"The autotune key of {kernel} holds only {sorted(keys)[0]} (``key=[]`` or dtype-only arguments), "
            f"so its config was chosen at the first size it ran{' (before this region)' if cached else ''} and "
            f"is reused at every size: here it ran {len(launches)} time(s) with grid(s) {sizes or 'none recorded'}. "
            "Put the size arguments in ``key=[...]`` so each shape gets its own tuning.",
            {"kernel": kernel, "shape_keys": sorted(keys), "launches": int(len(launches)), "cached": cached},
            cause="autotune key without the problem size", fix="add the size arguments to key=[...]",
            link=kernel_link([kernel], f"{kernel}'s launches")))
    return out
