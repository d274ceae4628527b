"""The findings panels: what to fix first (the first screen's ranked list) and every finding."""
from __future__ import annotations

from kernelscope.analysis.evidence import evidence_rows
from kernelscope.analysis.priorities import what_to_fix
from kernelscope.jsonable import jsonable, num
from kernelscope.panels.base import text as _str


def fixes_panel(rep) -> list:
    """What to fix first: the findings that cost time, ranked, each microsecond counted once
    (``analysis/priorities.py``), JSON-ready.

    >>> [x["rank"] for x in fixes_panel(rep)], fixes_panel(rep)[0]["share_text"]
    ([1, 2, 3, 4], '45% of wall time')
    """
    base_us, of = rep.time_base
    return jsonable(what_to_fix(rep.findings, base_us, of=of))


def fixes_heading(items: list) -> str:
    """"What to fix first" when the list puts a time at stake, else "Findings".

    >>> fixes_heading(fixes_panel(rep))
    'What to fix first'
    """
    return "What to fix first" if items and items[0]["cost_us"] is not None else "Findings"


def findings_panel(rep) -> list:
    """Every finding of ``rep`` as JSON-ready dicts, its evidence also in words with units.

    >>> sorted(findings_panel(rep)[0])[:4]
    ['cause', 'cost_us', 'detail', 'evidence']
    """
    out = []
    for f in rep.findings:
        get = (lambda a, f=f: f.get(a)) if isinstance(f, dict) else (lambda a, f=f: getattr(f, a, None))
        ev = get("evidence")
        out.append({"kind": _str(get("kind")), "severity": _str(get("severity")), "title": _str(get("title")),
                    "detail": _str(get("detail")), "cost_us": num(get("cost_us")),
                    "cause": _str(get("cause")), "fix": _str(get("fix")), "link": jsonable(get("link")),
                    "evidence": {str(a): jsonable(b) for a, b in ev.items()} if isinstance(ev, dict) else {},
                    # The evidence in words, each figure with its unit (analysis/evidence.py).
                    "evidence_text": evidence_rows(jsonable(ev)) if isinstance(ev, dict) else []})
    return out
