"""Score kernelscope's advice against what each fix really gave (no GPU needed).

    python benchmarks/advice/score.py [RECORDINGS]        # default: benchmarks/advice/recordings
    python benchmarks/advice/score.py --markdown          # the table for benchmarks/README.md

For every workload recorded by run.py: kernelscope's "what to fix first" on the profiled before
step, whether its first item (and any of the first three) names the cause the fix removed, the
time at stake that item predicts, and the gain the fix realized (median unprofiled step time
before minus after, from results.json). A first item that names the cause and whose fix made the
step slower is listed. The scoring is a function (:func:`score`), so a test runs it too.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Realized within this factor of the predicted time at stake counts as calibrated.
CALIBRATED = (0.5, 1.5)


def score(recordings=HERE / "recordings") -> list:
    """One dict per workload: name, family, expect, first (kind), hit1, hit3, predicted_ms,
    realized_ms, ratio (realized / predicted), calibrated, slower."""
    import kernelscope as ks
    rec = Path(recordings)
    results = json.loads((rec / "results.json").read_text())
    rows = []
    for name, r in results.items():
        path = rec / f"{name}.before.ksreport.json.gz"
        if "gain_ms" not in r or not path.exists():
            continue
        items = ks.load(str(path)).what_to_fix().to_dict("records")
        kinds = [it["kind"] for it in items]
        right = next((it for it in items if it["kind"] in r["expect"]), None)
        first_right = bool(items) and items[0]["kind"] in r["expect"]
        pred = right["cost_us"] / 1e3 if right is not None and right["cost_us"] == right["cost_us"] and right["cost_us"] else None
        ratio = r["gain_ms"] / pred if pred else None
        rows.append({
            "name": name, "family": r["family"], "expect": r["expect"], "first": kinds[0] if kinds else None,
            "first_title": items[0]["title"] if items else None,
            "hit1": first_right, "hit3": any(k in r["expect"] for k in kinds[:3]),
            "predicted_ms": pred, "realized_ms": r["gain_ms"], "before_ms": r["before_ms"], "after_ms": r["after_ms"],
            "ratio": ratio, "calibrated": ratio is not None and CALIBRATED[0] <= ratio <= CALIBRATED[1],
            "slower": first_right and r["gain_ms"] < 0,
        })
    return rows


def summary(rows) -> dict:
    """Top-1 and top-3 hit rates, the share calibrated, realized/predicted per family."""
    n = len(rows)
    fam = {}
    for r in rows:
        if r["ratio"] is not None:
            fam.setdefault(r["family"], []).append(r["ratio"])
    return {"pairs": n, "top1": sum(r["hit1"] for r in rows), "top3": sum(r["hit3"] for r in rows),
            "calibrated": sum(r["calibrated"] for r in rows),
            "family_ratio": {f: statistics.median(v) for f, v in fam.items()},
            "slower": [r["name"] for r in rows if r["slower"]]}


def _f(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"


def markdown(rows) -> str:
    s = summary(rows)
    out = ["| workload | family | first item | right? | top 3? | predicted ms | realized ms | realized/predicted |",
           "|---|---|---|---|---|---:|---:|---:|"]
    out.extend(f"| {r['name']} | {r['family']} | {r['first']} | {'yes' if r['hit1'] else 'no'} | "
               f"{'yes' if r['hit3'] else 'no'} | {_f(r['predicted_ms'])} | {_f(r['realized_ms'])} | {_f(r['ratio'])} |"
               for r in rows)
    out.append("")
    out.append(f"{s['pairs']} pairs: top-1 right {s['top1']}/{s['pairs']}, top-3 {s['top3']}/{s['pairs']}, "
               f"realized within {CALIBRATED[0]}x-{CALIBRATED[1]}x of predicted {s['calibrated']}/{s['pairs']}; "
               f"first items that made the step slower: {', '.join(s['slower']) or 'none'}.")
    out.append("")
    out.append("| family | realized/predicted (median) |")
    out.append("|---|---:|")
    out.extend(f"| {f} | {_f(v)} |" for f, v in s["family_ratio"].items())
    return "\n".join(out)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = score(args[0] if args else HERE / "recordings")
    if "--markdown" in sys.argv:
        print(markdown(rows))
    else:
        for r in rows:
            print(f"{r['name']:30s} {str(r['first']):22s} {'HIT ' if r['hit1'] else 'miss'} {'h3' if r['hit3'] else '  '} "
                  f"pred {_f(r['predicted_ms']):>9s} real {_f(r['realized_ms']):>9s} ratio {_f(r['ratio']):>6s}  | {r['first_title']}")
        print(summary(rows))
