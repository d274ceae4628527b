"""Every hostile or broken input in tests/corpus ends in a Report or a TraceError naming the file.

The corpus and its expected outcomes are listed in tests/corpus/README.md (and manifest.json,
which this test reads). A Report is then pushed through every view a user can reach; each must
work and no input text may reach HTML as markup.
"""
from __future__ import annotations

import faulthandler
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tracemalloc
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.analysis import backend_rules
from tests.conftest import written_out_union

CORPUS = Path(__file__).parent.parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
DATA = Path(__file__).parent.parent / "data"

# The one backend vocabulary.
BACKENDS = set(backend_rules.BACKENDS)
# The payloads' own marker: finding it inside a tag, an event-handler attribute or a script body
# means input text became markup.
MARK = "__ks_pwned"


@pytest.fixture(autouse=True)
def no_hang():
    """A case that hangs kills the run with a traceback instead of stalling CI."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _ids(cases):
    return [c["file"] for c in cases]


def _load(case, path):
    return ks.load_ncu(path) if case["loader"] == "load_ncu" else ks.load(path)


class _Inert(HTMLParser):
    """Collects every place where input text would act as markup in a browser."""

    RAW = {"script", "style"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems, self.text, self._open = [], [], []

    def handle_starttag(self, tag, attrs):
        self._open.append(tag)
        if tag in ("img", "svg", "iframe", "object", "embed", "textarea", "title", "noscript"):
            self.problems.append(f"<{tag}> tag in output")
        for name, value in attrs:
            if value and not name.startswith("on"):
                self.text.append(value)        # a title= tooltip shows the text too
            if MARK in name or (name.startswith("on") and value and MARK in value):
                self.problems.append(f"event handler {name}={value!r} on <{tag}>")
            if MARK in tag:
                self.problems.append(f"tag {tag!r}")

    def handle_endtag(self, tag):
        if tag in ("textarea", "title", "style", "noscript") and tag not in self._open:
            self.problems.append(f"stray </{tag}> closes a context early")
        while self._open and self._open.pop() != tag:
            pass

    def handle_data(self, data):
        if self._open and self._open[-1] in self.RAW and MARK in data:
            self.problems.append(f"payload inside <{self._open[-1]}>: {data[:80]!r}")
        self.text.append(data)


def assert_inert(html: str):
    """No text from the input acts as markup in ``html`` (parsed as a browser tokenizer would)."""
    p = _Inert()
    p.feed(html)
    p.close()
    assert not p.problems, p.problems[:5]
    return "".join(p.text)


def check_report(rep, tmp_path, *, hostile=False):
    """Every view of a report works; the invariants hold; no text turns into markup."""
    text = repr(rep)
    html = rep._repr_html_()
    summary = rep.summary()
    findings = rep.findings
    backends = rep.backends
    assert isinstance(text, str) and isinstance(html, str)
    # Jupyter writes outputs as UTF-8: a lone surrogate here would break saving the notebook.
    text.encode("utf-8")
    html.encode("utf-8")
    assert all(isinstance(n, str) for n in rep.notes)
    assert isinstance(findings, list)
    assert isinstance(summary, pd.DataFrame) and isinstance(backends, pd.DataFrame)

    k = rep.kernels
    assert len(summary) == k["name"].nunique(dropna=False)
    assert int(summary["launches"].sum()) == len(k)
    # Every kernel row has a backend from the one vocabulary.
    assert k["backend"].notna().all()
    assert set(k["backend"]) <= BACKENDS, set(k["backend"]) - BACKENDS
    occ = pd.to_numeric(k["theoretical_occupancy"], errors="coerce").dropna()
    assert ((occ >= 0) & (occ <= 1)).all(), occ[(occ < 0) | (occ > 1)].tolist()
    dur = k["duration_us"].to_numpy(float)
    # Missing (NaN) only where the source did not measure it (an ncu export without Duration).
    assert not (dur[~np.isnan(dur)] < 0).any() and not np.isinf(dur).any()
    timed = k[~np.isnan(dur)]
    if len(timed):
        wall = rep.wall_time_us
        if rep.meta.get("reader") == "ncu":
            # An Nsight Compute replay has no wall time: its time base is the replayed kernel time.
            assert wall is None and rep.time_base[1] == "kernel time"
            wall = rep.time_base[0]
        assert wall is not None and math.isfinite(wall)
        for _, d in timed.groupby("device", dropna=False):
            busy = written_out_union(zip(d["start_us"].tolist(), (d["start_us"] + d["duration_us"]).tolist()))
            assert busy <= wall * (1 + 1e-9) + 1e-6, (busy, wall)
        try:
            from kernelscope.analysis.timeline import timeline
        except ImportError:
            timeline = None
        if timeline is not None:
            tl = timeline(rep)
            assert (tl.busy["busy_us"] <= wall * (1 + 1e-9) + 1e-6).all(), (tl.busy, wall)
    _check_view_model(rep, html, hostile)

    # Save and reopen: what loaded once must survive a round trip.
    p = tmp_path / "roundtrip.ksreport.json.gz"
    rep.save(p)
    back = ks.load(p)
    assert len(back.kernels) == len(k)
    assert back.kernels["name"].tolist() == k["name"].tolist()
    plain = assert_inert(html)
    if hostile and MARK in "".join(map(str, k["name"])):
        assert MARK in plain, "the hostile names should be shown, as text"
    return text, html


def _check_view_model(rep, html, hostile):
    """What Jupyter stores and the browser parses: the whole display bundle and the widget."""
    bundle = rep._repr_mimebundle_()
    # The notebook file is JSON and the browser parses the header with JSON.parse: NaN,
    # Infinity or a lone surrogate anywhere in the bundle would break saving or rendering.
    json.dumps(bundle, allow_nan=False).encode("utf-8")
    assert_inert(bundle["text/html"])
    try:
        from kernelscope.view.bundle import MIME_TYPE
        from kernelscope.view.codec import decode_payload
    except ImportError:
        return
    cols = decode_payload(bundle[MIME_TYPE])
    assert len(cols["kernels"]["duration_us"]) == len(rep.kernels)
    if len(rep.kernels):
        names = set(rep.kernels["name"].astype(str))
        assert set(x for x in cols["kernels"]["name"] if x is not None) <= names
    w = rep.widget()
    json.dumps(w.header, allow_nan=False)
    assert w.selected.empty


def _report_cases():
    return [c for c in MANIFEST if c["expect"] == "report"]


def _error_cases():
    return [c for c in MANIFEST if c["expect"] == "error"]


def test_corpus_is_large_and_listed():
    assert len(MANIFEST) >= 40
    files = {p.name for p in CORPUS.iterdir()} - {"manifest.json", "README.md"}
    assert files == {c["file"] for c in MANIFEST}
    readme = (CORPUS / "README.md").read_text()
    for c in MANIFEST:
        assert f"`{c['file']}`" in readme
        # "each a small file": nothing here is bigger than a 100 KB kernel name needs.
        assert (CORPUS / c["file"]).stat().st_size <= 100_000, c["file"]


@pytest.mark.parametrize("case", _report_cases(), ids=_ids(_report_cases()))
def test_case_gives_a_report(case, tmp_path):
    path = CORPUS / case["file"]
    try:
        rep = _load(case, path)
    except ks.TraceError as e:
        if case.get("or_error"):
            assert str(path) in str(e)
            return
        raise
    assert isinstance(rep, ks.Report)
    if "kernels" in case:
        assert len(rep.kernels) == case["kernels"], rep.notes
    if "min_kernels" in case:
        assert len(rep.kernels) >= case["min_kernels"]
    if case.get("note_has"):
        assert case["note_has"] in " ".join(rep.notes), rep.notes
    text, _ = check_report(rep, tmp_path, hostile=case.get("hostile", False))
    if case.get("hostile"):
        # The text view clips names: a 100 KB name must not make a 100 KB repr.
        assert len(text) < 20_000


@pytest.mark.parametrize("case", _error_cases(), ids=_ids(_error_cases()))
def test_case_gives_a_trace_error(case, tmp_path):
    path = CORPUS / case["file"]
    with pytest.raises(ks.TraceError) as e:
        _load(case, path)
    msg = str(e.value)
    assert isinstance(e.value, ValueError)
    assert msg.startswith(f"{path}: "), msg      # names the file first
    assert case["error_has"].lower() in msg.lower(), msg
    assert len(msg) < 1000                       # a sentence, not a dump of the input
    assert "Traceback" not in msg


# -- specific outcomes, with real numbers ----------------------------------------------------

def _real():
    return ks.load(DATA / "triton_kernels.pt.trace.json.gz")


@pytest.mark.parametrize("name", ["events_out_of_order.json", "utf8_bom.json", "utf16le_bom.json",
                                  "utf16be_bom.json", "utf32_bom.json", "top_level_array_of_events.json",
                                  "gzip_two_members.json.gz", "gzip_trailing_garbage.json.gz",
                                  "not_gzip_but_named_gz.json.gz"])
def test_reencoded_real_trace_reads_the_same(name):
    """Shuffled, re-encoded or re-wrapped copies of the real Triton trace give its numbers."""
    real, rep = _real(), ks.load(CORPUS / name)
    cols = ["name", "start_us", "duration_us", "grid_x", "block_x", "registers_per_thread", "correlation"]
    a = real.kernels[cols].sort_values("start_us").reset_index(drop=True)
    b = rep.kernels[cols].sort_values("start_us").reset_index(drop=True)
    if name == "top_level_array_of_events.json":
        # No header: no baseTimeNanoseconds, so the same origin (the span) but nothing else.
        assert rep.devices.empty
    pd.testing.assert_frame_equal(a, b)
    assert rep.gpu_time_us == pytest.approx(real.gpu_time_us) == pytest.approx(127.326, abs=1e-3)
    assert rep.wall_time_us == pytest.approx(real.wall_time_us)


def test_trailing_gzip_data_is_noted():
    rep = ks.load(CORPUS / "gzip_trailing_garbage.json.gz")
    assert "ignored 100 byte(s) of trailing data after the gzip stream" in rep.notes


def test_gzip_bomb_is_refused_under_a_cap_with_bounded_memory(monkeypatch):
    path = CORPUS / "gzip_bomb.json.gz"
    monkeypatch.setenv("KERNELSCOPE_MAX_TRACE_BYTES", str(16 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ks.TraceError, match="more than 16.0 MiB of JSON.*KERNELSCOPE_MAX_TRACE_BYTES"):
            ks.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The file inflates to 64 MiB; decompression stopped at the cap (zlib gathers its output in
    # blocks and joins them, so the peak is up to twice the cap).
    assert peak < 40 << 20, peak
    monkeypatch.delenv("KERNELSCOPE_MAX_TRACE_BYTES")
    rep = ks.load(path)
    assert len(rep.kernels) == 3 and rep.gpu_time_us == pytest.approx(120.0)


def test_plain_file_over_the_cap_is_refused_before_reading(monkeypatch, tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(gzip.decompress((DATA / "launch_bound.pt.trace.json.gz").read_bytes()))
    monkeypatch.setenv("KERNELSCOPE_MAX_TRACE_BYTES", "1000000")
    with pytest.raises(ks.TraceError, match=r"big\.json: it holds more than 976\.6 KiB of JSON"):
        ks.load(p)
    monkeypatch.setenv("KERNELSCOPE_MAX_TRACE_BYTES", "lots")
    with pytest.raises(ValueError, match="KERNELSCOPE_MAX_TRACE_BYTES must be a number of bytes"):
        ks.load(p)


def test_nan_and_infinity_are_read_leniently_with_a_note():
    rep = ks.load(CORPUS / "nan_values.json")
    assert "read 3 non-standard JSON number(s) (NaN)" in rep.notes
    # The NaN-duration kernel and the NaN-ts op are dropped; the NaN occupancy is just missing.
    assert len(rep.kernels) == 2 and len(rep.ops) == 2
    assert rep.kernels["kineto_est_occupancy"].isna().sum() == 1


def test_invalid_utf8_becomes_replacement_characters():
    rep = ks.load(CORPUS / "non_utf8.json")
    names = rep.kernels["name"].tolist()
    assert names == ["caf\ufffd_kernel", "lone_\ufffd_byte", "add_kernel"]
    assert any("invalid UTF-8" in n for n in rep.notes)


def test_lone_surrogates_are_replaced():
    rep = ks.load(CORPUS / "long_name_binary.json")
    name = rep.kernels["name"].iloc[0]
    assert name == "\ufffd\u0001\u001b[31m\ufffd"
    assert "replaced unpaired UTF-16 surrogates in 1 string(s)" in rep.notes


def test_huge_integers_do_not_become_wrong_numbers():
    rep = ks.load(CORPUS / "huge_integers.json")
    k = rep.kernels.sort_values("start_us").reset_index(drop=True)
    # Values beyond int64 are dropped (missing), never wrapped around into plausible numbers.
    first = k.iloc[0]
    for col in ("correlation", "external_id", "stream", "registers_per_thread", "shared_mem_bytes", "grid_x"):
        assert pd.isna(first[col]), (col, first[col])
    assert k["registers_per_thread"].iloc[1] == 26


def test_kernels_outside_the_span_widen_it():
    rep = ks.load(CORPUS / "kernels_outside_span.json")
    k = rep.kernels
    end = float((k["start_us"] + k["duration_us"]).max())
    assert rep.wall_time_us == pytest.approx(end)
    assert any("after the profiler's span" in n for n in rep.notes)
    # The kernel 5 ms before the span moved the origin: every time stays >= 0.
    assert k["start_us"].min() == 0.0


def test_launch_joins_survive_missing_and_duplicate_partners():
    rep = ks.load(CORPUS / "kernels_without_launch.json")
    assert rep.kernels["launch_api"].isna().all()
    assert rep.kernels["op"].tolist() == ["aten::add"] * 3
    rep = ks.load(CORPUS / "duplicate_correlation.json")
    assert rep.kernels["launch_api"].tolist() == ["cuLaunchKernel"] * 3
    assert rep.kernels["launch_start_us"].nunique() == 1      # the first launch with that id


def test_strings_for_numbers_are_converted():
    rep = ks.load(CORPUS / "strings_for_numbers.json")
    k = rep.kernels
    assert k["grid_x"].tolist() == [16384] * 3 and k["registers_per_thread"].tolist() == [26] * 3
    assert k["duration_us"].tolist() == [40.0] * 3
    assert k["launch_api"].tolist() == ["cuLaunchKernel"] * 3


def test_hostile_file_names_are_escaped(tmp_path):
    """The file name reaches the report (meta source, the view's title): never as markup."""
    name = "<img src=x onerror=window.__ks_pwned=9>\"'<textarea>.json"     # no '/' in a file name
    p = tmp_path / name
    shutil.copy(CORPUS / "script_kernel_names.json", p)
    rep = ks.load(p)
    check_report(rep, tmp_path, hostile=True)
    try:
        from kernelscope.view.report import view_model
    except ImportError:
        return
    header, _ = view_model(rep)
    assert header["title"] == name      # shown as it is, as data for the browser
    bad = tmp_path / ("<script>" + MARK + "<script>.json")
    bad.write_bytes(b"{")
    with pytest.raises(ks.TraceError) as e:
        ks.load(bad)
    assert str(bad) in str(e.value)


def _load_in_child(loader, path, env=None, timeout=60):
    """Run ``ks.<loader>(path)`` in a child process: a hang or a crash there fails this test
    instead of taking the whole run down. Returns the child's one-line outcome."""
    code = ("import sys, kernelscope as ks\n"
            "try:\n"
            f"    r = ks.{loader}(sys.argv[1]); print('REPORT', len(r.kernels))\n"
            "except ks.TraceError as e:\n"
            "    print('TRACEERROR', e)\n")
    try:
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                             timeout=timeout, env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        pytest.fail(f"ks.{loader}({path}) hung for {timeout} s")
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


@pytest.mark.parametrize("loader", ["load", "load_ncu"])
def test_not_a_regular_file(tmp_path, loader):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    # Opening a FIFO for reading blocks until a writer comes; /dev/zero never ends.
    assert _load_in_child(loader, fifo) == f"TRACEERROR {fifo}: is not a regular file"
    assert _load_in_child(loader, "/dev/zero") == "TRACEERROR /dev/zero: is not a regular file"
    assert _load_in_child(loader, tmp_path).startswith(f"TRACEERROR {tmp_path}: is a directory")
    assert _load_in_child(loader, tmp_path / "none.csv") == f"TRACEERROR {tmp_path / 'none.csv'}: no such file"
    with pytest.raises(ks.TraceError, match="no such file"):
        getattr(ks, loader)(tmp_path / "a\0b.json")


def test_ncu_gzip_bomb_is_capped(tmp_path):
    """load_ncu takes gzip too: the same cap holds (a CSV of 64 MiB of blank lines)."""
    import zlib
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join([z.compress(b"\n" * (1 << 20)) for _ in range(64)]) + z.flush()
    p = tmp_path / "bomb.csv.gz"
    p.write_bytes(data)
    out = _load_in_child("load_ncu", p, env={"KERNELSCOPE_MAX_TRACE_BYTES": str(16 << 20)})
    assert out.startswith(f"TRACEERROR {p}: it holds more than 16.0 MiB"), out


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    p = tmp_path / "secret.json"
    shutil.copy(CORPUS / "utf8_bom.json", p)
    p.chmod(0)
    with pytest.raises(ks.TraceError, match=r"secret\.json: cannot be read"):
        ks.load(p)
