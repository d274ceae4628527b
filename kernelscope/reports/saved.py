"""The saved report's file format (``.ksreport.json[.gz]``): its format name and version, tables
as JSON columns, and the meta checks a file from elsewhere must pass."""
from __future__ import annotations

import math

import pandas as pd

from kernelscope.jsonable import jsonable

REPORT_FORMAT = "kernelscope.report"
REPORT_VERSION = 1
# Types of the meta fields the library reads, for checking a saved report (a damaged or
# hand-edited file must give a report or a TraceError, never a crash in a view).
_META_CHECKS = {
    "span_us": lambda v: _finite(v) and v >= 0, "cuda_event_us": lambda v: _finite(v) and v >= 0,
    "time_origin_ns": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "source": lambda v: isinstance(v, str), "trace_name": lambda v: isinstance(v, str),
    "title": lambda v: isinstance(v, str),
    "raw_trace": lambda v: isinstance(v, str),
    "error": lambda v: isinstance(v, str),
    "view": lambda v: isinstance(v, dict) and (v.get("top") is None or (
        isinstance(v["top"], int) and not isinstance(v["top"], bool) and v["top"] > 0)),
    "repeats": lambda v: isinstance(v, dict), "cell": lambda v: isinstance(v, dict),
    "counters": lambda v: isinstance(v, dict), "stalls": lambda v: isinstance(v, dict),
    "tuning": lambda v: isinstance(v, dict),
}


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def clean_meta(meta) -> dict:
    """A saved report's meta with damaged fields dropped (and named in its notes)."""
    if not isinstance(meta, dict):
        return {"notes": ["the report's meta data was damaged and is ignored"]}
    meta = dict(meta)
    notes = meta.get("notes")
    meta["notes"] = [str(n) for n in notes] if isinstance(notes, list) else []
    bad = sorted(k for k, ok in _META_CHECKS.items() if k in meta and meta[k] is not None and not ok(meta[k]))
    for k in bad:
        del meta[k]
    if bad:
        meta["notes"].append(f"ignored damaged meta field(s) of the report file: {', '.join(bad)}")
    return meta


def table_to_json(df: pd.DataFrame) -> dict:
    cols = {}
    for c in df.columns:
        s = df[c]
        if s.dtype == object:
            cols[c] = [jsonable(v) for v in s.tolist()]
        else:
            cols[c] = [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))) else v
                       for v in s.astype(object).tolist()]
    return {"columns": list(df.columns), "data": cols}


def table_from_json(t: dict) -> dict:
    if not t:
        return {}
    data = t["data"]
    return {c: data[c] for c in t["columns"]}
