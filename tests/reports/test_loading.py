"""ks.load decides what a file is from its parsed top level, never from byte positions."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import kernelscope as ks

DATA = Path(__file__).parent.parent / "data"
TRITON = DATA / "triton_kernels.pt.trace.json.gz"


def _saved(tmp_path) -> dict:
    rep = ks.load(TRITON)
    return json.loads(Path(rep.save(tmp_path / "run.ksreport.json")).read_text())


def test_reindented_report_loads(tmp_path):
    """A saved report re-indented by json.dump(d, f, indent=2) is still a report (it was read
    as "not a torch.profiler trace": the loader looked for its marker in the first 200 bytes)."""
    d = _saved(tmp_path)
    path = tmp_path / "reindented.json"
    with open(path, "w") as f:
        json.dump(d, f, indent=2)
    assert b'"format":"kernelscope.report"' not in path.read_bytes()[:200]
    rep = ks.load(path)
    orig = ks.load(TRITON)
    assert rep.kernels["name"].tolist() == orig.kernels["name"].tolist()
    assert rep.summary()["total_us"].tolist() == pytest.approx(orig.summary()["total_us"].tolist())


def test_report_with_keys_in_another_order_loads(tmp_path):
    d = _saved(tmp_path)
    path = tmp_path / "reordered.json.gz"
    path.write_bytes(gzip.compress(json.dumps(dict(reversed(list(d.items())))).encode()))
    assert len(ks.load(path).kernels) == len(ks.load(TRITON).kernels)


def test_a_trace_that_names_the_report_format_early_is_still_a_trace(tmp_path):
    """The other side of byte sniffing: a trace whose first bytes hold the report's marker (in
    a nested object, not at its top level)."""
    doc = json.loads(gzip.decompress(TRITON.read_bytes()))
    doc = {"distributedInfo": {"format": "kernelscope.report"}, **doc}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc, separators=(",", ":")))
    assert b'"format":"kernelscope.report"' in path.read_bytes()[:200]
    assert len(ks.load(path).kernels) == len(ks.load(TRITON).kernels)


def test_a_damaged_report_says_so(tmp_path):
    d = _saved(tmp_path)
    text = json.dumps(d, indent=2)
    cut = tmp_path / "cut.ksreport.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(ks.TraceError, match="cut.ksreport.json: the report file is damaged"):
        ks.load(cut)
    # Named like a trace, the same bytes are just JSON that ends early.
    other = tmp_path / "cut.json"
    other.write_text(text[: len(text) // 2])
    with pytest.raises(ks.TraceError, match="cut.json: the JSON ends early"):
        ks.load(other)


def test_another_format_is_named(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"format": "someone.else", "rows": []}))
    with pytest.raises(ks.TraceError, match="not a torch.profiler trace: its top level says it is a 'someone.else'"):
        ks.load(path)


@pytest.mark.parametrize("source", [None, 3, 2.5, {"a": 1}, [None], ["x.json", 7]])
def test_load_ranks_of_no_path_says_what_it_was_given(source):
    # Issue 46: these raised TypeError ("'NoneType' object is not iterable") from deep inside.
    with pytest.raises(ks.TraceError, match="not a path"):
        ks.load_ranks(source)


@pytest.mark.parametrize("version", ["drop", None, "1", True, 0, [1]])
def test_a_report_without_a_valid_version_is_damaged_not_newer(tmp_path, version):
    # Issue 46: a report with no version said "report format version None is newer than ...".
    d = _saved(tmp_path)
    if version == "drop":
        del d["version"]
    else:
        d["version"] = version
    path = tmp_path / "nov.ksreport.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ks.TraceError, match="nov.ksreport.json: the report file is damaged: it has no valid "
                                            "format version") as e:
        ks.load(path)
    assert "newer" not in str(e.value)
