"""Checks that a change leaves the view payload identical, bit for bit: the display bundle's
header (as ``codec.pack`` writes it) and column buffer of every real trace and saved report in
``tests/data`` and ``../shared/fixtures``, whole and in windows (with a small budget, so that
small reports are cut too), written by one kernelscope and compared with another's.

    PYTHONPATH=/tmp/base python tools/payload_check.py dump /tmp/old.pkl     # the old code
    PYTHONPATH=$PWD     python tools/payload_check.py dump /tmp/new.pkl     # the new code
    python tools/payload_check.py compare /tmp/old.pkl /tmp/new.pkl

``dump --big PATH`` adds a big trace (a tiled one): its first window, again, the next window
and every launch. Files that do not load are recorded with their error, which must match too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import pickle
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = [ROOT / "tests" / "data", ROOT.parent / "shared" / "fixtures", pathlib.Path("/work/shared/fixtures")]
SUFFIXES = (".json.gz", ".json", ".csv", ".ncu-rep.xz")
# The budget of the windowed cases: small enough to cut the recordings into several windows.
SMALL = {"VIEW_LAUNCHES": 257, "VIEW_HOST_SPANS": 613}


def sources() -> list[pathlib.Path]:
    seen, out = set(), []
    for folder in FOLDERS:
        for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if p.is_file() and p.name.endswith(SUFFIXES) and p.resolve() not in seen:
                seen.add(p.resolve())
                out.append(p)
    return out


def _payload(rep, window=None) -> dict:
    from kernelscope.view.report import view_model
    header, buf = view_model(rep, window=window)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return {"header": _rooted(text), "buf": hashlib.sha256(buf).hexdigest(), "nbytes": len(buf)}


def _rooted(text: str) -> str:
    """``text`` with this checkout's path written ``<root>``: a base checked out elsewhere (a
    worktree) writes the same payload."""
    return text.replace(str(ROOT), "<root>")


def _load(path: pathlib.Path, merged: bool = False):
    """The report of ``path``: ``ks.load``, or for an Nsight Compute CSV export ``ks.load_ncu``;
    ``merged``: an Nsight Compute report or export merged into the report of the recording it
    measured (``ncu_<name>.pt.trace.json.gz`` beside it, or ``<name>.pt.trace.json.gz`` in
    ``tests/data``)."""
    import kernelscope as ks
    if merged:
        return ks.load_ncu(path, kernels_report=ks.load(_measured(path), progress=False))
    if path.suffix == ".csv" and path.name.startswith("ncu_"):
        return ks.load_ncu(path)
    return ks.load(path, progress=False)


def _measured(path: pathlib.Path) -> pathlib.Path | None:
    """The recording an Nsight Compute file measured, where there is one."""
    stem = path.name.split(".")[0]
    for p in (path.parent / f"ncu_{stem}.pt.trace.json.gz", ROOT / "tests" / "data" / f"{stem[4:]}.pt.trace.json.gz"):
        if (p.name.startswith("ncu_") or stem.startswith("ncu_")) and p.is_file():
            return p
    return None


def _cases(path: pathlib.Path, big: bool, merged: bool = False) -> dict:
    from kernelscope.view import report as view
    out = {}
    try:
        rep = _load(path, merged)
    except Exception as e:  # noqa: BLE001 - recorded: the same file must fail the same way
        return {"load": _rooted(f"{type(e).__name__}: {e}")}
    out["first"] = _payload(rep)
    out["again"] = _payload(rep)
    w = json.loads(out["first"]["header"])["window"]
    if big:
        if w:
            out["later"] = _payload(rep, (w["until_us"], None))
        saved = view.VIEW_LAUNCHES, view.VIEW_HOST_SPANS
        view.VIEW_LAUNCHES = view.VIEW_HOST_SPANS = 10**12
        try:
            out["every"] = _payload(rep)
        finally:
            view.VIEW_LAUNCHES, view.VIEW_HOST_SPANS = saved
        return out
    # Small budget, a fresh report (its whole-report parts computed under this budget).
    saved = {k: getattr(view, k) for k in SMALL}
    try:
        for k, v in SMALL.items():
            setattr(view, k, v)
        rep = _load(path, merged)
        first = _payload(rep)
        out["small_first"] = first
        w = json.loads(first["header"])["window"]
        if w:
            ov = w["overview"] or {}
            t0, t1 = ov.get("start_us") or 0.0, ov.get("end_us") or 0.0
            mid = t0 + (t1 - t0) / 2
            out["small_later"] = _payload(rep, (w["until_us"], None))
            out["small_mid"] = _payload(rep, (mid, None))
            out["small_bounded"] = _payload(rep, (t0 + (t1 - t0) / 4, mid))
            out["small_past_end"] = _payload(rep, (t1 + 1e6, None))
            out["small_first_again"] = _payload(rep)
            if len(rep.kernels):
                name = rep.kernels["name"].value_counts().index[0]
                kw = view.kernel_window(rep, name, mid)
                out["small_kernel"] = _payload(rep, kw) if kw else None
    finally:
        for k, v in saved.items():
            setattr(view, k, v)
    return out


def dump(out: pathlib.Path, big: list[str]) -> None:
    import kernelscope
    print(f"kernelscope from {pathlib.Path(kernelscope.__file__).parent}", flush=True)
    got = {}
    for p in sources():
        label = str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
        got[label] = _cases(p, False)
        ncu = ".ncu-rep" in p.name or (p.suffix == ".csv" and p.name.startswith("ncu_"))
        if ncu and _measured(p) is not None:
            got["merged:" + label] = _cases(p, False, merged=True)
    for b in big:
        got["big:" + pathlib.Path(b).name] = _cases(pathlib.Path(b), True)
    out.write_bytes(pickle.dumps(got))
    print(f"{len(got)} sources, {sum(len(v) for v in got.values())} payloads -> {out}")


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {i}: ...{a[max(0, i - 120):i + 80]!r} vs ...{b[max(0, i - 120):i + 80]!r}"


def compare(a_path: pathlib.Path, b_path: pathlib.Path) -> int:
    a, b = pickle.loads(a_path.read_bytes()), pickle.loads(b_path.read_bytes())
    bad = 0
    for src in sorted(set(a) | set(b)):
        ca, cb = a.get(src, {}), b.get(src, {})
        for case in sorted(set(ca) | set(cb)):
            x, y = ca.get(case), cb.get(case)
            if x == y:
                continue
            bad += 1
            if not isinstance(x, dict) or not isinstance(y, dict):
                print(f"DIFF {src} {case}: {x!r:.200} vs {y!r:.200}")
                continue
            if x["header"] != y["header"]:
                print(f"DIFF {src} {case} header {_first_difference(x['header'], y['header'])}")
            if x["buf"] != y["buf"]:
                print(f"DIFF {src} {case} buffer ({x['nbytes']} vs {y['nbytes']} bytes)")
    n = sum(len(v) for v in a.values())
    print(f"{len(a)} sources, {n} payloads compared: " + ("identical" if not bad else f"{bad} differ"))
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=pathlib.Path)
    d.add_argument("--big", nargs="*", default=[], help="big traces: first window, again, later, every launch")
    c = sub.add_parser("compare")
    c.add_argument("a", type=pathlib.Path)
    c.add_argument("b", type=pathlib.Path)
    a = ap.parse_args(argv)
    if a.cmd == "dump":
        dump(a.out, a.big)
        return 0
    return compare(a.a, a.b)


if __name__ == "__main__":
    sys.exit(main())
