"""Structure-aware fuzzing (hypothesis), the families of the outside review (issue 31):

- real H200 traces with events and fields mutated as JSON (a key dropped, a value replaced by
  any JSON value, values moved between events, events dropped or repeated);
- arbitrary JSON (nested lists and objects, huge integers, lone surrogates) in event and
  ``args`` fields of a real trace;
- saved reports tampered with as JSON (columns, their values, meta fields, table names).

For each input: ``ks.load`` gives a Report whose every view renders (text, HTML, the view
model the server also answers with, the roofline), or a TraceError that names the file; nothing else.
``KS_FUZZ_EXAMPLES`` (default 25 here: about 15 s a family on a 2-core machine) and ``KS_FUZZ_RANDOM=1`` as in test_fuzz.py.
"""
from __future__ import annotations

import copy
import gzip
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernelscope as ks
from tests.trace.test_fuzz import _check_one

DATA = Path(__file__).parent.parent / "data"
EXAMPLES = int(os.environ.get("KS_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("KS_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _doc(name):
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


# Small real recordings: a Triton run, and a torch MLP step (ops with shapes and dtypes).
REAL = {n: _doc(n) for n in ("triton_kernels.pt.trace.json.gz", "mlp_train.pt.trace.json.gz")}
for d in REAL.values():
    d["traceEvents"] = d["traceEvents"][:150]

# A >4,300-digit integer (Python refuses to print one): written into the JSON as digits.
BIG = "__ks_big_integer__"
leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=12), st.sampled_from(["\ud800", "x\udfffy", "9" * 5000, "<b>x</b>", "\x1b[2J"]),
                 st.just(BIG), st.just(-(2 ** 63)), st.just(2 ** 63), st.just(1.5))
any_json = st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                     st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                        max_leaves=12)
# Keys of the Kineto format the reader knows, so that mutations hit what is read.
EVENT_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp"]
ARG_KEYS = ["External id", "correlation", "device", "stream", "grid", "block", "registers per thread",
            "shared memory", "Input Dims", "Input type", "Concrete Inputs", "Sequence number", "bytes",
            "Python id", "Python parent id", "Record function id", "Ev Idx", "kernel_backend", "context",
            "queued", "est. achieved occupancy %", "warps per SM", "blocks per SM", "cbid", "Fwd thread id"]


def _encode(doc) -> bytes:
    # Python's encoder writes lone surrogates as \ud800 escapes and huge ints in full.
    return json.dumps(doc, allow_nan=False).encode().replace(f'"{BIG}"'.encode(), b"9" * 4400)


def _load_and_check(raw: bytes, suffix=".json"):
    rep = _check_one(raw, suffix)        # a Report whose views render, or a TraceError naming the file
    if rep is not None:
        rep.roofline


@st.composite
def mutated_trace(draw):
    doc = copy.deepcopy(REAL[draw(st.sampled_from(sorted(REAL)))])
    evs = doc["traceEvents"]
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["drop_key", "drop_key", "drop_arg", "drop_arg", "set", "set_arg", "move",
                                   "drop_events", "repeat", "header"]))
        ev = evs[draw(st.integers(0, len(evs) - 1))] if evs else {}
        if not isinstance(ev, dict):
            continue
        args = ev.get("args") if isinstance(ev.get("args"), dict) else None
        if op == "drop_key":
            # Dropping a key from every event of one kind: "no CPU op has an External id".
            key, every = draw(st.sampled_from(EVENT_KEYS)), draw(st.booleans())
            for e in (evs if every else [ev]):
                if isinstance(e, dict) and (not every or e.get("cat") == ev.get("cat")):
                    e.pop(key, None)
        elif op == "drop_arg" and args is not None:
            key, every = draw(st.sampled_from(ARG_KEYS)), draw(st.booleans())
            for e in (evs if every else [ev]):
                if isinstance(e, dict) and isinstance(e.get("args"), dict) and (not every or e.get("cat") == ev.get("cat")):
                    e["args"].pop(key, None)
        elif op == "set":
            ev[draw(st.sampled_from(EVENT_KEYS))] = draw(any_json)
        elif op == "set_arg" and args is not None:
            args[draw(st.sampled_from(ARG_KEYS))] = draw(any_json)
        elif op == "move" and evs:
            other = evs[draw(st.integers(0, len(evs) - 1))]
            key = draw(st.sampled_from(EVENT_KEYS))
            if isinstance(other, dict) and key in other:
                ev[key] = copy.deepcopy(other[key])
        elif op == "drop_events" and evs:
            i = draw(st.integers(0, len(evs) - 1))
            del evs[i: i + draw(st.integers(1, 50))]
        elif op == "repeat" and evs:
            evs.insert(draw(st.integers(0, len(evs))), copy.deepcopy(ev))
        elif op == "header":
            doc[draw(st.sampled_from(["deviceProperties", "baseTimeNanoseconds", "schemaVersion",
                                      "distributedInfo", "traceName", "displayTimeUnit", "otherKey"]))] = draw(any_json)
    return doc


@FUZZ
@given(mutated_trace())
def test_real_traces_mutated_as_json(doc):
    _load_and_check(_encode(doc))


@FUZZ
@given(st.data())
def test_arbitrary_json_in_event_and_args_fields(data):
    doc = copy.deepcopy(REAL["mlp_train.pt.trace.json.gz"])
    evs = doc["traceEvents"]
    for _ in range(data.draw(st.integers(1, 4))):
        ev = evs[data.draw(st.integers(0, len(evs) - 1))]
        where = ev if data.draw(st.booleans()) or not isinstance(ev.get("args"), dict) else ev["args"]
        key = data.draw(st.one_of(st.sampled_from(EVENT_KEYS + ARG_KEYS), st.text(max_size=6)))
        where[key] = data.draw(any_json)
    _load_and_check(_encode(doc))


_SAVED = {}


def _saved(name):
    if name not in _SAVED:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "r.ksreport.json"
            if name.endswith(".csv"):
                ks.load_ncu(DATA / name).save(p)
            else:
                ks.load(DATA / name).save(p)
            _SAVED[name] = json.loads(p.read_text())
    return copy.deepcopy(_SAVED[name])


@FUZZ
@given(st.data())
def test_tampered_saved_reports(data):
    d = _saved(data.draw(st.sampled_from(["mlp_train.pt.trace.json.gz", "triton_kernels.pt.trace.json.gz",
                                          "ncu_triton_kernels.csv"])))
    parts = [("meta", d["meta"])] + [(f"tables.{n}", t) for n, t in d["tables"].items()]
    if "ncu" in d:
        parts.append(("ncu", d["ncu"]))
    top = []
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["meta", "column", "value", "columns", "table", "top"]))
        _, part = parts[data.draw(st.integers(0, len(parts) - 1))]
        if op == "meta":
            d["meta"][data.draw(st.sampled_from(sorted(d["meta"]) + ["view", "counters", "stalls", "repeats",
                                                                     "cell", "title", "raw_trace", "notes"]))] = \
                data.draw(any_json)
        elif op in ("column", "value") and isinstance(part, dict) and part.get("data"):
            col = data.draw(st.sampled_from(sorted(part["data"])))
            vals = part["data"][col]
            if op == "column" or not isinstance(vals, list) or not vals:
                part["data"][col] = data.draw(st.one_of(any_json, st.lists(any_json, max_size=5)))
            else:
                vals[data.draw(st.integers(0, len(vals) - 1))] = data.draw(any_json)
        elif op == "columns" and isinstance(part, dict) and isinstance(part.get("columns"), list):
            part["columns"] = data.draw(st.one_of(any_json, st.just(part["columns"][:-1]),
                                                  st.just(part["columns"] + ["nosuch"])))
        elif op == "table":
            d["tables"][data.draw(st.sampled_from(sorted(d["tables"]) + ["extra"]))] = data.draw(any_json)
        elif op == "top":
            top.append((data.draw(st.sampled_from(["tables", "ncu", "ncu_detail", "version", "meta"])),
                        data.draw(any_json)))
    for key, value in top:       # last: the edits above reach into the parts these replace
        d[key] = value
    _load_and_check(_encode(d), ".ksreport.json")
