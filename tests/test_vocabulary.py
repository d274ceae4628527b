"""One place for each fact: the browser gets the vocabulary from Python, and holds no copy."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import kernelscope as ks
from kernelscope.analysis.backend_rules import BACKENDS, COPY_COLORS, RULES
from kernelscope.analysis.occupancy import LIMITERS
from kernelscope.analysis.timeline import CAUSES
from kernelscope.trace.ncu.export import COMPARED_METRICS
from kernelscope.units import fmt_bytes, fmt_pct, fmt_us
from kernelscope.view.bundle import mime_payload
from kernelscope.view.codec import read_payload
from kernelscope.view.vocabulary import HOST_COLORS, vocabulary

ROOT = Path(__file__).parent.parent
JS = ROOT / "js" / "src"
DATA = Path(__file__).parent / "data"


def _js_text() -> str:
    return "\n".join(p.read_text() for p in sorted(JS.rglob("*.js")))


def test_every_rule_names_a_backend_of_the_vocabulary():
    assert {r.backend for r in RULES} <= set(BACKENDS)
    assert "other" in BACKENDS


def test_the_payload_carries_the_vocabulary():
    header = read_payload(mime_payload(ks.load(DATA / "mlp_train.pt.trace.json.gz")))[0]
    v = header["vocabulary"]
    assert v == json.loads(json.dumps(vocabulary()))
    assert v["backends"] == BACKENDS and v["copies"] == COPY_COLORS and v["host"] == HOST_COLORS
    assert list(v["causes"]) == list(CAUSES) and v["causes"]["sync"]["color"] == CAUSES["sync"].color
    assert v["limiters"] == LIMITERS
    assert [(m["label"], m["column"], m["ours"]) for m in v["ncu"]] == list(COMPARED_METRICS)


def test_the_js_holds_no_copy_of_the_vocabulary():
    """Adding a backend (or a cause, a limiter, an ncu metric) is a change in Python only."""
    js = _js_text()
    colors = set(BACKENDS.values()) | set(COPY_COLORS.values()) | set(HOST_COLORS.values())
    colors |= {c.color for c in CAUSES.values()}
    found = sorted(c for c in colors if c.lower() in js.lower())
    assert not found, f"colours of the Python vocabulary copied into js/src: {found}"
    for label in ("cuBLAS", "hipBLASLt", "FlashAttention"):
        assert not re.search(rf"\b{label}\b", js), label
    for _, column, _ in COMPARED_METRICS:
        assert column not in js, column
    assert 'shared_mem: "smem"' not in js and "Synchronize/" not in js


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_js_formats_numbers_as_python_does():
    """format.js's fmtUs/fmtBytes/fmtPct format the view's raw columns the way kernelscope.units does."""
    us = [0.0, 1.5, 999.94, 1000.0, 2500, 3_200_000, -4.0, 12_345_678.9, 2.25, 0.75, 1002.5, 1_002_500]
    sizes = [0, 1, 512, 1023, 1024, 67584, 4_194_304, 5 << 30, 123_456_789]
    shares = [0.0, 0.004, 0.0995, 0.1234, 0.5, 1.0, 0.98765, 0.00125, 0.125]
    percents = [0.0, 2.4, 9.96, 12.5, 13.5, 87.4, 100.0, 99.95]
    script = (f"import {{ fmtUs, fmtBytes, fmtPct }} from '{(JS / 'view' / 'format.js').as_uri()}';"
              f"console.log(JSON.stringify([{json.dumps(us)}.map(fmtUs), {json.dumps(sizes)}.map(fmtBytes),"
              f" {json.dumps(shares)}.map((x) => fmtPct(x)), {json.dumps(percents)}.map((x) => fmtPct(x, 0, 100)),"
              f" [null, NaN, Infinity].map((x) => fmtPct(x))]));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    js_us, js_sizes, js_shares, js_percents, js_missing = json.loads(out)
    assert js_us == [fmt_us(x) for x in us]
    assert js_sizes == [fmt_bytes(x) for x in sizes]
    assert js_shares == [fmt_pct(x) for x in shares]
    assert js_percents == [fmt_pct(x, 0, scale=100) for x in percents]
    assert js_missing == [fmt_pct(None), fmt_pct(float("nan")), fmt_pct(float("inf"))] == ["-"] * 3


def test_a_colour_names_one_thing():
    """No two backends, copy directions, causes or host span kinds share a colour (FlashInfer and
    memcpy once did, so the timeline could not tell a FlashInfer kernel from a copy). A copy
    colour may be its backend's own (host-to-device copies are memcpy's, memsets memset's)."""
    owners: dict[str, list] = {}
    for label, colour in BACKENDS.items():
        owners.setdefault(colour.lower(), []).append(f"backend {label}")
    for kind, colour in COPY_COLORS.items():
        if BACKENDS.get({"HtoD": "memcpy"}.get(kind, kind), "").lower() != colour.lower():
            owners.setdefault(colour.lower(), []).append(f"copy {kind}")
    for cause, c in CAUSES.items():
        owners.setdefault(c.solid.lower(), []).append(f"cause {cause}")
    for kind, colour in HOST_COLORS.items():
        if kind != "sync" or colour.lower() != CAUSES["sync"].solid.lower():   # one thing: a sync
            owners.setdefault(colour.lower(), []).append(f"host {kind}")
    shared = {c: who for c, who in owners.items() if len(who) > 1}
    assert not shared, f"colours that name two things: {shared}"


# The modules that own a colour of the vocabulary; every other module refers to them by name.
# (trace/counters.py owns the counter strip's colours, render/compare.py a comparison's statuses:
# vocabularies of their own.)
_COLOUR_OWNERS = {"analysis/backend_rules.py", "analysis/timeline.py", "view/vocabulary.py",
                  "trace/counters.py", "render/compare.py"}


def test_python_holds_no_second_copy_of_a_colour():
    """A vocabulary colour typed again in another module (render/ranks.py once had the backend
    colours of its lanes) drifts the day the vocabulary changes: refer to the owner's table."""
    colours = {c.lower() for c in (*BACKENDS.values(), *COPY_COLORS.values(), *HOST_COLORS.values())}
    colours |= {c.solid.lower() for c in CAUSES.values()} | {c.color.lower() for c in CAUSES.values()}
    found = []
    for path in sorted((ROOT / "kernelscope").rglob("*.py")):
        rel = path.relative_to(ROOT / "kernelscope").as_posix()
        if rel in _COLOUR_OWNERS:
            continue
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith((">>>", "...", "(", "[", "'")):   # doctest output
                continue
            found.extend(f"{rel}:{line_no}: {hexa}" for hexa in re.findall(r"#[0-9a-fA-F]{6}(?:[0-9a-fA-F]{2})?\b", line)
                         if hexa.lower() in colours)
    assert not found, "vocabulary colours typed outside their owner:\n" + "\n".join(found)


def test_the_js_names_no_backend():
    """The JS draws backends by the labels the payload holds; it never tests for one by name
    (the words that are also ordinary prose in its help texts aside)."""
    js = _js_text()
    prose = {"other", "memcpy", "memset", "NCCL"}
    named = [label for label in BACKENDS if label not in prose and re.search(rf"\b{re.escape(label)}\b", js)]
    assert not named, f"backend labels in js/src: {named}"


def test_every_colour_has_the_one_form_the_view_applies():
    """The view applies a colour from the payload only if it is #rgb, #rrggbb or #rrggbbaa
    (format.js: safeColor, against style injection from a saved notebook): a colour of another
    form in the vocabulary would be drawn grey."""
    js = (JS / "view" / "format.js").read_text()
    assert "const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;" in js
    form = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
    v = vocabulary()
    colours = [*v["backends"].values(), *v["copies"].values(), *v["host"].values(),
               *(c["color"] for c in v["causes"].values())]
    assert colours and all(form.match(c) for c in colours), [c for c in colours if not form.match(c)]
