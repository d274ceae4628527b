"""What to fix first: the short ranked list a report opens with.

The findings come ranked by the GPU time each one costs (:func:`.findings.find_all`); this list
keeps the ones that cost time, at most :data:`FIX_LIST_MAX`, each with the time at stake in
milliseconds and as a share of the region's wall time, its cause and its fix in one line each,
and a link to what shows it (a timeline range or kernels of the table). The views draw it as is.
"""
from __future__ import annotations

import re

from kernelscope.analysis.findings import HOST_KINDS
from kernelscope.analysis.findings.base import SEVERITIES, severity_for
from kernelscope.analysis.findings.outside import OUTSIDE_KIND
from kernelscope.analysis.intervals import Spans
from kernelscope.jsonable import num
from kernelscope.units import fmt_pct, fmt_us

# A first screen lists a few things; the Findings tab has every one.
FIX_LIST_MAX = 5
# A finding whose time the items above already hold but for this share of it is the same time:
# it joins the item that holds most of it.
SAME_TIME_LEFT = 0.1
# One-line texts taken from a finding's detail are cut here.
LINE_MAX = 220
# Sentences that read as advice, for findings that do not say their fix in one line.
_ADVICE = re.compile(r"^(Fix:|Consider|Try|Use|Reduce|Increase|Avoid|Pad|Check|Give|Replay|Move|Keep)\b")


def what_to_fix(findings, wall_us=None, top: int = FIX_LIST_MAX, *, of: str = "wall time") -> list:
    """The first screen's list: findings that cost time, most first, as plain dicts.

    Each item: ``rank``, ``kind``, ``severity``, ``title``, ``cost_us``, ``cost_text``,
    ``share_of_wall`` (``None`` without a wall time), ``share_text``, ``cause``, ``fix``,
    ``link`` (or ``None``), ``finding`` (its index in ``findings``), ``also`` (titles of findings
    merged into it), ``within`` (when part of its time is already in the items above) and
    ``note`` (those two in one line, as the views show it).
    With no finding that costs time (but the time outside the GPU's work), one finding leads the
    list, with no time at stake: the first that says what to do, else the first. ``of`` names what ``wall_us`` is (``Report.time_base``:
    an Nsight Compute replay's shares are of its kernel time).

    Each microsecond counts once. Where findings carry the time their cost is made of
    (``Finding.spans``: idle gaps, sync waits, copies), a finding whose time the items above
    already hold (all but :data:`SAME_TIME_LEFT` of it) is merged into the item that holds most of
    it (the costliest speaks, the other is listed in ``also``, and the item costs the union of its
    parts); one that overlaps them in part keeps only its own part. Findings that do not know their
    time share a slot when they are about one kernel, or point at the same stretch of the timeline.
    The time outside the GPU's first-to-last work comes after the causes, and an item is cut to the
    wall time the items above leave, so the listed shares add up to at most the wall time.

    >>> rep = ks.load("wild/llama_train.pt.trace.json.gz")
    >>> [(x["kind"], x["share_text"]) for x in what_to_fix(rep.findings, rep.wall_time_us)]
    [('launch_bound', '50% of wall time'), ('outside_gpu_work', '9.0% of wall time')]
    """
    items, merge = [], _Merge()
    for i in _in_order(findings or []):
        f = findings[i]
        cost = num(_get(f, "cost_us"))
        if _get(f, "kind") == "analysis_error" or not cost or cost <= 0:
            continue
        same, spans, left = merge.place(f, cost)
        if same is not None:
            merge.absorb(same, f, spans, cost * left, wall_us, of)
            continue
        if len(items) >= top:
            continue
        it = _item(f, i, cost, wall_us, of)
        if left < 1:
            it.update(_costs(cost * left, wall_us, of))
            it["within"] = f"{fmt_us(cost * (1 - left))} of its {fmt_us(cost)} is already in the items above"
            it["severity"] = _lower(it["severity"], severity_for(it["cost_us"], wall_us))
        merge.add(it, f, cost, spans)
        items.append(it)
    # Merges can raise an item's cost; the time outside the GPU's work comes after the causes.
    items.sort(key=lambda it: (it["kind"] == OUTSIDE_KIND, -it["cost_us"]))
    items = _within_wall(items, wall_us, of)
    if all(it["kind"] == OUTSIDE_KIND for it in items):
        # Nothing the GPU's work could gain costs time: the first finding that says what to do
        # (the GPU-bound one names the kernels to speed up), else the first one, leads.
        first = _what_to_do(findings or [])
        if first is not None:
            items.insert(0, _item(findings[first], first, None, wall_us, of))
    for n, it in enumerate(items, 1):
        it["rank"] = n
        it["note"] = _note(it)
    return items


class _Merge:
    """What :func:`what_to_fix` has listed: the time its items hold (their spans' union), and the
    items by kernel and by where their links point (for findings that do not know their time)."""

    def __init__(self):
        self.held = Spans()
        self.spans: dict = {}          # id(item) -> (item, the union of its parts' spans)
        self.by_kernel: dict = {}
        self.by_key: dict = {}

    def place(self, f, cost) -> tuple:
        """(the item ``f`` joins or None, ``f``'s spans not yet held or None, the share of its
        time not yet held)."""
        kernel = _kernel_of(f)
        if kernel and kernel in self.by_kernel:
            return self.by_kernel[kernel], None, 0.0
        spans = _get(f, "spans")
        total = spans.length if isinstance(spans, Spans) else 0.0
        if not total:
            key = _place(_get(f, "link")) or (round(cost, 1), _get(f, "title"))
            return self.by_key.get(key), None, (0.0 if key in self.by_key else 1.0)
        fresh = spans - self.held if self.held else spans
        left = fresh.length / total
        if left > SAME_TIME_LEFT:
            return None, fresh, left
        host = max(self.spans.values(), key=lambda x: x[1].overlap(spans))[0]
        return host, fresh, left

    def add(self, it, f, cost, spans) -> None:
        if spans is not None:
            self.spans[id(it)] = (it, spans)
            self.held = self.held | spans
        kernel = _kernel_of(f)
        if kernel:
            self.by_kernel[kernel] = it
        self.by_key[_place(_get(f, "link")) or (round(cost, 1), _get(f, "title"))] = it

    def absorb(self, it, f, fresh, extra, wall_us, of) -> None:
        """``f`` joins ``it``: listed in its ``also``; ``it`` costs the union of their times (so no
        finding's time is lost in a merge)."""
        it["also"].append(_get(f, "title"))
        if fresh is None or not extra:
            return
        it.update(_costs(it["cost_us"] + extra, wall_us, of))
        it["severity"] = _higher(it["severity"], severity_for(it["cost_us"], wall_us))
        item, spans = self.spans[id(it)]
        self.spans[id(it)] = (item, spans | fresh)
        self.held = self.held | fresh


def _within_wall(items, wall_us, of) -> list:
    """Each item cut to the wall time the items above it leave (findings whose time is not known
    can hold the same time): the listed shares add up to at most the wall time."""
    if not wall_us:
        return items
    out, listed = [], 0.0
    for it in items:
        cost = it["cost_us"]
        if listed + cost > wall_us:
            left = max(wall_us - listed, 0.0)
            if left <= 0:
                continue
            it["within"] = f"{fmt_us(cost - left)} of its {fmt_us(cost)} is already in the items above"
            it.update(_costs(left, wall_us, of))
            it["severity"] = _lower(it["severity"], severity_for(left, wall_us))
        listed += it["cost_us"]
        out.append(it)
    return out


def _what_to_do(findings):
    """The index of the first finding that says what to do, else of the first one; a host finding
    whose idle the other items hold (no time left at stake) has nothing to say here."""
    usable = [i for i, f in enumerate(findings) if _get(f, "kind") != "analysis_error"
              and _get(f, "kind") != OUTSIDE_KIND and not (_get(f, "kind") in HOST_KINDS and not _get(f, "cost_us"))]
    return next((i for i in usable if _get(findings[i], "fix")), usable[0] if usable else None)


def _in_order(findings) -> list:
    """The findings' indices as :func:`what_to_fix` goes through them: as given (most costly
    first), the time outside the GPU's work last (it is listed where there is room)."""
    return sorted(range(len(findings)), key=lambda i: _get(findings[i], "kind") == OUTSIDE_KIND)


def _lower(a, b):
    """The less severe of two severities (a cut never raises one)."""
    return a if SEVERITIES.index(a) >= SEVERITIES.index(b) else b


def _higher(a, b):
    """The more severe of two severities (a merge never lowers one)."""
    return a if SEVERITIES.index(a) <= SEVERITIES.index(b) else b


def _note(it) -> str:
    """One line that says what an item holds beyond its own finding (the views show it as is)."""
    parts = []
    if it.get("also"):
        parts.append("Same time as: " + "; ".join(_line(t) for t in it["also"][:3])
                     + (f" (and {len(it['also']) - 3} more)" if len(it["also"]) > 3 else ""))
    if it.get("within"):
        parts.append(it["within"].capitalize() + ".")
    return _line(". ".join(p.rstrip(".") for p in parts) + ("." if parts else ""))


# The columns of :func:`fix_table` (``Report.what_to_fix()``).
FIX_COLUMNS = ["rank", "kind", "severity", "title", "cost_us", "share_of_wall", "cause", "fix", "link",
               "also", "within", "note"]


def fix_table(items):
    """:func:`what_to_fix`'s list as a DataFrame with :data:`FIX_COLUMNS`.

    >>> fix_table(what_to_fix(rep.findings, rep.wall_time_us)).columns[:3].tolist()   # doctest: +SKIP
    ['rank', 'kind', 'severity']
    """
    import pandas as pd
    return pd.DataFrame([{c: it.get(c) for c in FIX_COLUMNS} for it in items], columns=FIX_COLUMNS)


def _place(link):
    """Where a timeline link points (device and range, not its words): two copy findings that
    point at the same longest copy are about the same copies."""
    if isinstance(link, dict) and link.get("view") == "timeline":
        return ("timeline", link.get("device"), num(link.get("start_us")), num(link.get("end_us")))
    return None


def _kernel_of(f):
    """The one kernel a finding is about (its evidence's, or its link's only name), else None."""
    ev = _get(f, "evidence")
    k = ev.get("kernel") if isinstance(ev, dict) else None
    if isinstance(k, str) and k:
        return k
    link = _get(f, "link")
    names = link.get("names") if isinstance(link, dict) and link.get("view") == "kernels" else None
    return names[0] if isinstance(names, list) and len(names) == 1 else None


def _costs(cost, wall_us, of="wall time") -> dict:
    share = cost / wall_us if cost is not None and wall_us else None
    return {"cost_us": cost, "cost_text": fmt_us(cost) if cost is not None else "", "share_of_wall": share,
            "share_text": f"{fmt_pct(share, None)} of {of}" if share is not None else ""}


def _item(f, index, cost, wall_us, of="wall time") -> dict:
    detail = _get(f, "detail") or ""
    return {
        "rank": 0, "kind": _get(f, "kind"), "severity": _get(f, "severity"), "title": _get(f, "title"),
        **_costs(cost, wall_us, of),
        "cause": _line(_get(f, "cause")) or _line(_first_sentence(detail)),
        "fix": _line(_get(f, "fix")) or _line(_advice(detail)),
        "link": _get(f, "link") or _kernel_link(_get(f, "evidence")),
        "finding": index, "also": [], "within": None,
    }


def _sentences(text: str) -> list:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", text or "") if s.strip()]


def _first_sentence(text: str) -> str:
    s = _sentences(text)
    return s[0] if s else ""


def _advice(text: str) -> str:
    for s in _sentences(text):
        if _ADVICE.match(s):
            return s[len("Fix:"):].strip() if s.startswith("Fix:") else s
    return ""


def _line(text) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= LINE_MAX else text[: LINE_MAX - 1].rstrip() + "…"


def _kernel_link(evidence):
    """A finding about one kernel that names no link of its own points at that kernel's row."""
    k = evidence.get("kernel") if isinstance(evidence, dict) else None
    return {"view": "kernels", "names": [k], "label": "kernel table: this kernel"} if isinstance(k, str) and k else None


def _get(f, key):
    return f.get(key) if isinstance(f, dict) else getattr(f, key, None)

