"""Plausible input that once raised something other than TraceError (issue 31, the outside
review's minimal files): each gives a Report whose every view renders, or a TraceError that
names the file and the problem."""
import copy
import gzip
import json
import re

import pytest

import kernelscope as ks
from tests.conftest import DATA
from tests.trace.test_corpus import check_report

MLP = json.loads(gzip.decompress((DATA / "mlp_train.pt.trace.json.gz").read_bytes()))


def _mlp(change):
    doc = copy.deepcopy(MLP)
    change(doc["traceEvents"])
    return doc


def _views(tmp_path, doc, name="t.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    rep = ks.load(p)
    check_report(rep, tmp_path)
    rep.roofline
    from kernelscope.jupyter.server import report_payload
    report_payload(str(p))          # what the server answers (it answered 500)
    return rep


def _drop_arg(cat, key):
    def change(evs):
        for e in evs:
            if e.get("cat") == cat:
                e.get("args", {}).pop(key, None)
    return change


def test_no_cpu_op_has_an_external_id(tmp_path):
    rep = _views(tmp_path, _mlp(_drop_arg("cpu_op", "External id")))
    assert len(rep.kernels) and rep.kernels["op"].isna().all()


def test_no_runtime_call_has_a_correlation(tmp_path):
    rep = _views(tmp_path, _mlp(_drop_arg("cuda_runtime", "correlation")))
    assert len(rep.kernels)


def test_a_cpu_op_without_a_thread_id(tmp_path):
    def change(evs):
        next(e for e in evs if e.get("cat") == "cpu_op").pop("tid")
    rep = _views(tmp_path, _mlp(change))
    assert len(rep.ops) == len(ks.load(DATA / "mlp_train.pt.trace.json.gz").ops)


def test_a_list_inside_input_type(tmp_path):
    def change(evs):
        for e in evs:
            a = e.get("args") or {}
            if e.get("cat") == "cpu_op" and isinstance(a.get("Input type"), list) and a["Input type"]:
                a["Input type"][0] = ["float"]
    rep = _views(tmp_path, _mlp(change))
    assert isinstance(rep.roofline, type(rep.kernels))


def test_an_integer_of_5000_digits(tmp_path):
    def change(evs):
        next(e for e in evs if e.get("cat") == "kernel")["args"]["stream"] = "BIG"
    text = json.dumps(_mlp(change)).replace('"BIG"', "9" * 5000)
    rep = _views(tmp_path, text)
    assert any("integer(s) of more than 4,000 digits" in n for n in rep.notes)
    (tmp_path / "only.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": '
                                        + "9" * 5000 + "}]}")
    with pytest.raises(ks.TraceError, match=r"only.json: "):
        ks.load(tmp_path / "only.json")


def test_a_lone_surrogate_in_a_field_we_do_not_read(tmp_path):
    def change(evs):
        evs[0]["args"]["note"] = "\ud800x"     # a high half with no low half after it
    rep = _views(tmp_path, _mlp(change))
    assert len(rep.kernels) == len(ks.load(DATA / "mlp_train.pt.trace.json.gz").kernels)
    doc = dict(MLP, comment="\udc00")
    assert len(_views(tmp_path, doc, "b.json").kernels)
    # a file that is really cut still says so
    (tmp_path / "cut.json").write_text(json.dumps(_mlp(change))[:5000])
    with pytest.raises(ks.TraceError, match=r"cut.json: the JSON ends early"):
        ks.load(tmp_path / "cut.json")


NCU = (DATA / "ncu_triton_kernels.csv").read_text()


def test_ncu_export_with_grid_size_two_to_the_63(tmp_path):
    p = tmp_path / "grid.csv"
    p.write_text(NCU.replace('"(1056, 1, 1)"', '"(9223372036854775808, 1, 1)"', 1)
                 .replace('"Grid Size","","1,056"', '"Grid Size","","9223372036854775808"', 1))
    rep = ks.load_ncu(p)
    check_report(rep, tmp_path)
    assert rep.kernels["grid_x"].isna().sum() >= 1


def test_ncu_export_with_a_fractional_id(tmp_path):
    p = tmp_path / "id.csv"
    p.write_text(re.sub(r'^"0",', '"1.5",', NCU, count=1, flags=re.M))
    with pytest.raises(ks.TraceError, match=r"id.csv: the 'ID' column holds values that are not launch numbers"):
        ks.load_ncu(p)


@pytest.mark.parametrize("arg", [3, None, b"x.csv", 2.5])
def test_load_ncu_of_something_that_is_not_a_path(arg):
    with pytest.raises(ks.TraceError, match="expected the path of an Nsight Compute report or CSV export"):
        ks.load_ncu(arg)


def test_a_saved_report_with_a_list_where_text_belongs(tmp_path):
    """Found by the tampered-report fuzz family: a list as a kernel's backend."""
    rep = ks.load(DATA / "mlp_train.pt.trace.json.gz")
    d = rep.to_dict()
    d["tables"]["kernels"]["data"]["kernel_backend"][0] = []
    d["tables"]["kernels"]["data"]["name"][1] = {"x": 1}
    p = tmp_path / "t.ksreport.json"
    p.write_text(json.dumps(d))
    back = _views(tmp_path, p.read_text(), "t.ksreport.json")
    assert any("kernels.kernel_backend" in n and "kernels.name" in n for n in back.notes)
    assert len(back.kernels) == len(rep.kernels)
