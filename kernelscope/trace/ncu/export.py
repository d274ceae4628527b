"""Nsight Compute CSV exports: ``ncu --csv --page details`` (any sections) or ``--page raw``.

Both become one tidy table, one row per profiled launch: identifying columns (``id``,
``kernel_name``, ``block_x`` .. ``grid_z``, ``device``, ``cc``, ...) then one typed column per
metric. Column names are the metric names in snake case with the unit appended where it says
something (``duration_ns``, ``theoretical_occupancy_pct``, ``dynamic_shared_memory_per_block_bytes``);
``table.attrs["units"]`` maps each metric column to ncu's own unit text and
``table.attrs["metrics"]`` to ncu's metric name. Numbers written with thousands separators
("1,234.5") become numbers; text values ("CachePreferNone") stay text.
"""
from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re

import numpy as np
import pandas as pd

from kernelscope.errors import TraceError
from kernelscope.trace.files import read_bytes
from kernelscope.trace.model import DEVICE_COLUMNS, KERNEL_COLUMNS, TABLES, Trace, frame

ID_COLUMNS = {"ID": "id", "Process ID": "process_id", "Process Name": "process_name", "Host Name": "host_name",
              "Kernel Name": "kernel_name", "Kernel Time": "kernel_time", "Context": "context",
              "Stream": "stream", "Device": "device", "CC": "cc", "Block Size": "block_dims",
              "Grid Size": "grid_dims"}
_DETAILS = {"Section Name", "Metric Name", "Metric Unit", "Metric Value"}
# Unit texts as ncu writes them -> column-name suffix ("" when the name already says it).
_UNIT_SUFFIX = {
    "%": "pct", "ns": "ns", "nsecond": "ns", "usecond": "us", "us": "us", "msecond": "ms", "ms": "ms",
    "second": "s", "s": "s", "byte": "bytes", "byte/block": "bytes", "Kbyte": "kbytes", "Mbyte": "mbytes",
    "Gbyte": "gbytes", "Kbyte/block": "kbytes", "hz": "hz", "Khz": "khz", "Mhz": "mhz", "Ghz": "ghz",
    "cycle": "cycles", "Kcycle": "kcycles", "Mcycle": "mcycles", "block": "blocks", "warp": "warps",
    "cluster": "clusters", "register/thread": "", "thread": "", "SM": "", "inst": "inst",
    "byte/second": "bytes_per_s", "byte/s": "bytes_per_s", "sector": "sectors", "Kbyte/second": "kbytes_per_s", "Mbyte/second": "mbytes_per_s",
    "Gbyte/second": "gbytes_per_s", "Tbyte/second": "tbytes_per_s",
}
# Scaled units ncu prints (auto units) -> (base unit, factor); ncu's prefixes are decimal.
_SCALE = {"nsecond": ("ns", 1), "usecond": ("ns", 1e3), "us": ("ns", 1e3), "msecond": ("ns", 1e6),
          "ms": ("ns", 1e6), "second": ("ns", 1e9), "s": ("ns", 1e9),
          "Kbyte": ("byte", 1e3), "Mbyte": ("byte", 1e6), "Gbyte": ("byte", 1e9), "Tbyte": ("byte", 1e12),
          "Khz": ("hz", 1e3), "Mhz": ("hz", 1e6), "Ghz": ("hz", 1e9),
          "Kcycle": ("cycle", 1e3), "Mcycle": ("cycle", 1e6), "Gcycle": ("cycle", 1e9),
          "Kbyte/second": ("byte/second", 1e3), "Mbyte/second": ("byte/second", 1e6),
          "Gbyte/second": ("byte/second", 1e9), "Tbyte/second": ("byte/second", 1e12),
          "Kbyte/s": ("byte/s", 1e3), "Mbyte/s": ("byte/s", 1e6), "Gbyte/s": ("byte/s", 1e9),
          "Tbyte/s": ("byte/s", 1e12),
          "Kinst": ("inst", 1e3), "Minst": ("inst", 1e6), "Ginst": ("inst", 1e9)}
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")
# Other locales ("1.234,5", "1 234,5"): ncu writes the English form, but files pass through
# spreadsheets; these parse too (an ambiguous "1,234" stays English).
_NUMBER_DECIMAL_COMMA = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?$")
_SPACES = str.maketrans("", "", " \u00a0\u202f\u2009")
# Columns the merge copies onto Kineto kernels as ncu_* (measured by ncu, not recomputed).
MERGE_SKIP = {"id", "process_id", "process_name", "host_name", "kernel_name", "context", "stream", "device",
              "cc", "block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z", "block_dims", "grid_dims"}
# The ncu metrics the details panel shows first, beside kernelscope's own figure where there is
# one: (label, merged column as merge_ncu names it, our kernels column or None). The browser
# gets this table in the view's payload.
COMPARED_METRICS = (
    ("theoretical occupancy", "ncu_theoretical_occupancy_pct", "theoretical_occupancy"),
    ("achieved occupancy", "ncu_achieved_occupancy_pct", None),
    ("duration", "ncu_duration_ns", "duration_us"),
    ("compute (SM) throughput", "ncu_compute_sm_throughput_pct", None),
    ("memory throughput", "ncu_memory_throughput_pct", None),
    ("DRAM throughput", "ncu_dram_throughput_pct", None),
    ("L2 throughput", "ncu_l2_cache_throughput_pct", None),
    ("L1/TEX throughput", "ncu_l1_per_tex_cache_throughput_pct", None),
    ("block limit: registers", "ncu_block_limit_registers_blocks", "block_limit_registers"),
    ("block limit: shared memory", "ncu_block_limit_shared_mem_blocks", "block_limit_shared_mem"),
    ("block limit: warps", "ncu_block_limit_warps_blocks", "block_limit_warps"),
)


def read_ncu(path) -> pd.DataFrame:
    """An ncu CSV export as a tidy table, one row per launch (see the module docstring).

    >>> t = read_ncu("ncu_triton_kernels.csv")
    >>> int(t.loc[0, "block_x"]), float(t.loc[0, "theoretical_occupancy_pct"])
    (256, 62.5)
    """
    name = os.fspath(path)
    text = _read_text(name)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        if text.lstrip()[:1] in ("{", "["):
            raise TraceError(name, "is JSON, not an Nsight Compute CSV export (a Kineto trace? open it "
                                   "with ks.load)")
        if not lines or not any("," in line for line in lines[:50]):
            raise TraceError(name, "not a CSV file (expected an Nsight Compute export: ncu --csv --page details)")
        raise TraceError(name, 'no Nsight Compute header (a line starting with "ID","Process ID",...) found; '
                               "export with ncu --csv --page details or --page raw")
    body = [line for line in lines[start:] if not line.startswith("==")]  # ==PROF==/==WARNING== lines
    try:
        rows = list(csv.reader(io.StringIO("\n".join(body))))
    except csv.Error as e:
        raise TraceError(name, f"the CSV is damaged ({e})") from None
    header = rows[0]
    missing = [c for c in ("ID", "Kernel Name") if c not in header]
    if _DETAILS & set(header):
        missing += sorted(_DETAILS - set(header))
    if missing:
        raise TraceError(name, f"the ncu header lacks the column(s) {', '.join(repr(m) for m in missing)}")
    tidy = _tidy_details if set(header) >= _DETAILS else _tidy_raw
    return tidy(header, rows[1:], name)


def _read_text(name: str) -> str:
    # The Kineto reader's file guards: pipes and devices refused, gzip decompressed under the
    # KERNELSCOPE_MAX_TRACE_BYTES cap (a bomb must not exhaust memory).
    raw = read_bytes(name)
    if b"\x00" in raw[:4096]:
        raise TraceError(name, "binary file, neither an Nsight Compute CSV export nor an .ncu-rep report")
    return raw.decode("utf-8-sig", errors="replace")


def _tidy_details(header, rows, name) -> pd.DataFrame:
    col = {h: i for i, h in enumerate(header)}
    ids = [h for h in header if h in ID_COLUMNS]
    launches: dict = {}
    metric_sections: dict = {}
    for r in rows:
        if len(r) < len(header) - 5:   # rule rows may be short; metric rows are complete
            continue
        metric = r[col["Metric Name"]] if col["Metric Name"] < len(r) else ""
        if not metric:
            continue    # a rule (advice) row
        lid = r[col["ID"]]
        rec = launches.get(lid)
        if rec is None:
            rec = launches[lid] = {"_id": {h: r[col[h]] for h in ids}, "_m": {}}
        section = r[col["Section Name"]]
        unit = r[col["Metric Unit"]]
        rec["_m"][(section, metric)] = (r[col["Metric Value"]], unit)
        metric_sections.setdefault(metric, set()).add(section)
    if not launches:
        raise TraceError(name, "the export holds no metric rows (was any kernel profiled?)")
    # A metric name used by two sections gets the section as prefix.
    names, units, metrics = {}, {}, {}
    for rec in launches.values():
        for (section, metric), (_, unit) in rec["_m"].items():
            key = (section, metric)
            if key in names:
                continue
            base = _snake(metric) if len(metric_sections[metric]) == 1 else f"{_snake(section)}__{_snake(metric)}"
            unit = _SCALE.get(unit, (unit, 1))[0]
            names[key] = _with_unit(base, unit)
            units[names[key]] = unit
            metrics[names[key]] = metric
    data = []
    for rec in launches.values():
        row = {ID_COLUMNS[h]: v for h, v in rec["_id"].items()}
        for key, (value, unit) in rec["_m"].items():
            row[names[key]] = (value, unit)
        data.append(row)
    return _finish(pd.DataFrame(data), units, metrics, name)


def _tidy_raw(header, rows, name) -> pd.DataFrame:
    if "ID" not in header or "Kernel Name" not in header:
        raise TraceError(name, "no ncu columns (ID, Kernel Name) in the header")
    unit_row = None
    if rows and rows[0] and rows[0][0] == "":
        unit_row, rows = rows[0], rows[1:]
    names, units, metrics, given = [], {}, {}, {}
    for i, h in enumerate(header):
        if h in ID_COLUMNS:
            names.append(ID_COLUMNS[h])
            continue
        unit = unit_row[i] if unit_row and i < len(unit_row) else ""
        n = _with_unit(_snake(h), _SCALE.get(unit, (unit, 1))[0])
        names.append(n)
        units[n], metrics[n], given[n] = _SCALE.get(unit, (unit, 1))[0], h, unit
    data = []
    for r in rows:
        if not r or not r[0]:
            continue
        row = {}
        for i, v in enumerate(r[: len(names)]):
            n = names[i]
            row[n] = v if n in ID_COLUMNS.values() else (v, given.get(n, ""))
        data.append(row)
    if not data:
        raise TraceError(name, "the export holds no launches")
    return _finish(pd.DataFrame(data), units, metrics, name)


def _finish(df: pd.DataFrame, units: dict, metrics: dict, name) -> pd.DataFrame:
    out = {}
    for c in df.columns:
        s = df[c]
        if c in ID_COLUMNS.values():
            out[c] = s
            continue
        vals = [v[0] if isinstance(v, tuple) else None for v in s.tolist()]
        scales = [_SCALE.get(v[1], (None, 1))[1] if isinstance(v, tuple) else 1 for v in s.tolist()]
        out[c] = _typed(vals, scales)
    t = pd.DataFrame(out)
    ids = pd.to_numeric(t["id"], errors="coerce")
    f = np.asarray(ids, dtype=float)
    if ids.isna().any() or (f % 1 != 0).any() or (np.abs(f) >= 2.0 ** 63).any():
        raise TraceError(name, "the 'ID' column holds values that are not launch numbers")
    t["id"] = pd.array([int(v) for v in ids.tolist()], dtype="Int64")
    for c in ("process_id", "context", "stream", "device"):
        if c in t.columns:
            t[c] = _typed(t[c].tolist())
    for c, prefix in (("block_dims", "block"), ("grid_dims", "grid")):
        if c in t.columns:
            dims = [_dims(v) for v in t[c].tolist()]
            for j, axis in enumerate("xyz"):
                # beyond int64 is no launch shape: missing, as in the Kineto reader
                t[f"{prefix}_{axis}"] = pd.array([d[j] if d and -2**63 <= d[j] < 2**63 else None for d in dims],
                                                 dtype="Int64")
            t = t.drop(columns=[c])
    front = [c for c in ("id", "kernel_name", "process_id", "process_name", "host_name", "context", "stream",
                         "device", "cc", "block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z")
             if c in t.columns]
    t = t[front + [c for c in t.columns if c not in front]]
    t = t.sort_values("id", kind="stable").reset_index(drop=True)
    t.attrs["units"] = {k: v for k, v in units.items() if k in t.columns}
    t.attrs["metrics"] = {k: v for k, v in metrics.items() if k in t.columns}
    t.attrs["source"] = str(name)
    return t


def _typed(values, scales=None):
    """A column of ncu value strings -> Int64, float64 or object (text kept as is); each value
    times its unit's scale (so "1.5" usecond and "900" nsecond share one column in ns)."""
    parsed, ints, any_num = [], True, False
    scales = scales or [1] * len(values)
    for v, scale in zip(values, scales):
        if v is None or v == "" or v == "n/a":
            parsed.append(None)
            continue
        s = str(v).strip().translate(_SPACES)
        if _NUMBER.match(s):
            x = float(s.replace(",", "")) * scale
        elif _NUMBER_DECIMAL_COMMA.match(s):
            s = s.replace(".", "").replace(",", ".")
            x = float(s) * scale
        else:
            x = None
        if x is not None:
            ints = (ints and math.isfinite(x) and abs(x) < 2**63 and x == int(x) and "e" not in s.lower()
                    and ("." not in s or scale != 1))   # beyond int64: keep it a float
            parsed.append(x)
            any_num = True
        elif s.lower() in ("nan", "inf", "-inf"):
            parsed.append(float(s))
            ints = False
            any_num = True
        else:
            return pd.Series(list(values), dtype=object)   # text metric
    if not any_num:
        return pd.Series(list(values), dtype=object)
    if ints:
        return pd.Series(pd.array([None if p is None else int(p) for p in parsed], dtype="Int64"))
    return pd.Series([np.nan if p is None else p for p in parsed], dtype="float64")


def _dims(v):
    m = re.match(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?$", str(v or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def _snake(s: str) -> str:
    s = s.replace("#", "num").replace("%", "pct").replace("/", "_per_")
    return re.sub(r"[^0-9A-Za-z]+", "_", s).strip("_").lower()


def _with_unit(base: str, unit: str) -> str:
    suffix = _UNIT_SUFFIX.get(unit, _snake(unit) if unit else "")
    if not suffix or base.endswith("_" + suffix) or base == suffix:
        return base
    return f"{base}_{suffix}"


# -- a Trace of ncu's launches -----------------------------------------------------------------
def trace_from_ncu(t: pd.DataFrame, source="<ncu>"):
    """A Trace whose kernels are the launches of a tidy ncu table (so the usual views work).

    ncu serializes and replays kernels, so there is no timeline: ``start_us`` places the
    launches back to back in ID order.
    """
    n = len(t)

    def col(*names):
        for c in names:
            if c in t.columns:
                return t[c]
        return pd.Series([None] * n, dtype=object)

    def ints(*names):
        """Whole numbers of a column, None where ncu wrote text, a fraction or nothing."""
        v = pd.to_numeric(col(*names), errors="coerce").astype("float64").to_numpy()
        return [int(x) if np.isfinite(x) and x == int(x) and abs(x) < 2 ** 62 else None for x in v]

    dur_us = _duration_us(t)
    bad = ~np.isfinite(dur_us) | (dur_us < 0)
    bad_durations = int((bad & ~np.isnan(dur_us)).sum())
    dur_us = np.where(bad, np.nan, dur_us)
    start = np.concatenate([[0.0], np.cumsum(np.nan_to_num(dur_us))[:-1]]) if n else np.array([])
    static = ints("static_shared_memory_per_block_bytes")
    dynamic = ints("dynamic_shared_memory_per_block_bytes")
    smem = [None if a is None or b is None else a + b for a, b in zip(static, dynamic)]
    kernels = {
        "name": [str(x) for x in t["kernel_name"].tolist()],
        "device_index": ints("device"), "stream": ints("stream"),
        "start_us": start.tolist(), "duration_us": dur_us.tolist(),
        "correlation": t["id"].tolist(), "external_id": [None] * n,
        "grid_x": ints("grid_x"), "grid_y": ints("grid_y"), "grid_z": ints("grid_z"),
        "block_x": ints("block_x"), "block_y": ints("block_y"), "block_z": ints("block_z"),
        "registers_per_thread": ints("registers_per_thread", "launch_registers_per_thread"),
        "shared_mem_bytes": smem, "launch_api": ["ncu"] * n, "graph_launch": [False] * n,
    }
    kernels = {k: [None if v is pd.NA else v for v in vs] for k, vs in kernels.items()}
    devices = {c: [] for c in DEVICE_COLUMNS}
    if n:
        d = pd.DataFrame({"device": ints("device"), "cc": col("cc").astype(str).tolist(),
                          "sms": ints("num_sms", "launch_sm_count"), "label": col("device_name").tolist(),
                          # device attributes a full .ncu-rep report holds (kernelscope.trace.ncu_rep)
                          **{c: ints(c) for c in _DEVICE_ATTRS}})
        for dev, g in d.groupby("device", dropna=True, sort=True):
            cc = str(g["cc"].iloc[0])
            try:
                major, minor = (int(x) for x in cc.split(".", 1))
            except ValueError:
                major = minor = None
            sms = g["sms"].dropna()
            for c in devices:
                devices[c].append(None)
            devices["index"][-1] = int(dev)
            label = g["label"].iloc[0]
            devices["name"][-1] = label if isinstance(label, str) and label else f"CUDA device {int(dev)} (from ncu)"
            for c in _DEVICE_ATTRS:
                v = g[c].iloc[0]
                devices[c][-1] = None if v is None or v != v else int(v)
            devices["device_type"][-1] = "CUDA"
            devices["compute_major"][-1] = major
            devices["compute_minor"][-1] = minor
            devices["num_sms"][-1] = int(sms.iloc[0]) if len(sms) else None
    tables = {name: frame({}, schema) for name, schema in TABLES.items()}
    tables["kernels"] = frame(kernels, KERNEL_COLUMNS)
    tables["devices"] = frame(devices, DEVICE_COLUMNS)
    notes = ["Nsight Compute serializes and replays kernels: start times place the launches "
             "back to back and are not a timeline."]
    if bad_durations:
        notes.append(f"{bad_durations} launch(es) had a negative or infinite duration; left empty.")
    meta = {"source": source, "reader": "ncu", "notes": notes}
    return Trace(**tables, meta=meta)


_DEVICE_ATTRS = ("max_threads_per_sm", "max_threads_per_block", "regs_per_sm", "regs_per_block", "warp_size",
                 "smem_per_sm", "smem_per_block", "smem_per_block_optin", "total_memory")


def _duration_us(t: pd.DataFrame) -> np.ndarray:
    for c, scale in (("duration_ns", 1e-3), ("duration_us", 1.0), ("duration_ms", 1e3),
                     ("gpu_time_duration_sum_ns", 1e-3), ("gpu_time_duration_sum_us", 1.0),
                     ("gpu_time_duration_sum_ms", 1e3), ("gpu_time_duration_sum_s", 1e6)):
        if c in t.columns:
            return pd.to_numeric(t[c], errors="coerce").to_numpy(dtype=float) * scale
    return np.full(len(t), np.nan)


# -- merging ncu metrics onto Kineto kernels ---------------------------------------------------
def kernel_key(name) -> str:
    """The kernel's function name without namespaces, templates or parameters, so that
    Kineto's and ncu's spellings of one kernel agree.

    >>> kernel_key("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::T<1> >(int)")
    'multi_tensor_apply_kernel'
    >>> kernel_key("void at::<unnamed>::multi_tensor_apply_kernel<at::<unnamed>::T<1>>(T1)")
    'multi_tensor_apply_kernel'
    """
    s = str(name or "").replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    s = re.sub(r"^(void|auto)\s+", "", s.strip())
    depth, end = 0, len(s)
    for i, ch in enumerate(s):
        if ch in "<(" and depth == 0:
            end = i
            break
    s = s[:end].strip()
    return s.rsplit("::", 1)[-1]


def merge_ncu(kernels: pd.DataFrame, ncu: pd.DataFrame) -> pd.DataFrame:
    """Kineto kernels with ncu's measured metrics added as ``ncu_*`` columns.

    Launches are paired by kernel (function name, grid and block) in launch order: the two
    sequences are aligned, so launches that only one side recorded (warm-up, setup) are left
    out rather than shifting every later pair. Unpaired kernels get NaN.

    >>> rep = ks.load_ncu("ncu_mlp_train.csv", kernels_report=ks.load("mlp_train.pt.trace.json.gz"))
    >>> rep.kernels[["name", "ncu_achieved_occupancy_pct"]]
                                           name  ncu_achieved_occupancy_pct
    0   void at::native::vectorized_elementw...                        5.74
    1   void at::native::vectorized_elementw...                       68.99
    2   void at::native::vectorized_elementw...                       18.62
    3   nvjet_sm90_tst_128x128_64x6_2x1_v_bz...                       13.55
    4   void at::native::vectorized_elementw...                       66.00
    ...
    """
    k = kernels.copy()
    if ncu is None or not len(ncu) or not len(k):
        return k
    ncu = ncu.sort_values("id", kind="stable").reset_index(drop=True) if "id" in ncu.columns else ncu.copy()
    ncu.attrs = {}   # pandas deep-copies attrs into every column taken below: not needed here

    def keys(df, name_col):
        dims = [df[c].astype("Int64").astype(object).tolist() if c in df.columns else [None] * len(df)
                for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")]
        return [(kernel_key(n), *d) for n, *d in zip(df[name_col].tolist(), *dims)]

    # launch order: the CPU-side correlation id (start time where it is missing)
    order = np.lexsort((k["start_us"].to_numpy(dtype=float, na_value=np.inf),
                        k["correlation"].astype("Float64").to_numpy(dtype=float, na_value=np.inf)))
    a = keys(k.iloc[order], "name")
    b = keys(ncu, "kernel_name")
    pairs = _align(a, b)
    take = np.full(len(k), -1)
    for i, j in pairs:
        take[order[i]] = j
    cols = [c for c in ncu.columns if c not in MERGE_SKIP]
    hit = take >= 0
    for c in ["id", *cols]:
        src = ncu[c]
        name = "ncu_id" if c == "id" else f"ncu_{c}"
        if pd.api.types.is_numeric_dtype(src):
            vals = np.full(len(k), np.nan)
            vals[hit] = pd.to_numeric(src, errors="coerce").to_numpy(dtype=float, na_value=np.nan)[take[hit]]
            k[name] = vals
        else:
            vals = np.full(len(k), None, dtype=object)
            vals[hit] = src.to_numpy(dtype=object)[take[hit]]
            k[name] = vals
    if "ncu_achieved_occupancy_pct" in k.columns:
        # beside our theoretical_occupancy, on the same 0..1 scale (measured by ncu: sm__warps_active)
        k["achieved_occupancy"] = pd.to_numeric(k["ncu_achieved_occupancy_pct"], errors="coerce") / 100.0
    return k


def _align(a: list, b: list) -> list:
    """Index pairs (i, j) matching equal keys of a and b in order."""
    if len(a) * len(b) <= 25_000_000:
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        out = []
        for blk in sm.get_matching_blocks():
            out.extend((blk.a + t, blk.b + t) for t in range(blk.size))
        return out
    # very long sequences: the n-th launch of a kernel on one side with its n-th on the other
    seen_b: dict = {}
    for j, key in enumerate(b):
        seen_b.setdefault(key, []).append(j)
    count: dict = {}
    out = []
    for i, key in enumerate(a):
        n = count.get(key, 0)
        lst = seen_b.get(key)
        if lst is not None and n < len(lst):
            out.append((i, lst[n]))
        count[key] = n + 1
    return out
