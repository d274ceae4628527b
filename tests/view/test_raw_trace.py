"""The raw Chrome trace behind a report, for the view's "Perfetto" button: which file it is
(``meta["raw_trace"]``, in the payload header as ``raw_trace``), and the bytes the live widget
sends when asked (``kernelscope.view.widget.raw_trace_bytes``): that file only, and only a trace."""
import shutil

import kernelscope as ks
from kernelscope.view.report import view_model
from kernelscope.view.widget import raw_trace_bytes
from tests.conftest import DATA


def test_a_loaded_trace_is_its_own_raw_trace(tmp_path):
    src = tmp_path / "step.pt.trace.json.gz"
    shutil.copy(DATA / "mlp_train.pt.trace.json.gz", src)
    rep = ks.load(src)
    assert rep.meta["raw_trace"] == str(src.resolve())
    header, _ = view_model(rep)
    assert header["raw_trace"] == {"name": "step.pt.trace.json.gz", "path": str(src.resolve()), "exists": True}
    name, data, error = raw_trace_bytes(rep)
    assert (name, error) == ("step.pt.trace.json.gz", None) and data == src.read_bytes()
    # A report saved from it remembers the trace; once the file is gone the view says so.
    back = ks.load(rep.save(tmp_path / "step.ksreport.json.gz"))
    assert back.meta["raw_trace"] == str(src.resolve())
    src.unlink()
    assert view_model(back)[0]["raw_trace"]["exists"] is False
    name, data, error = raw_trace_bytes(back)
    assert data is None and "not there" in error


def test_only_traces_are_sent(tmp_path):
    """A report file's meta is input like any other: a raw_trace naming some other file sends nothing."""
    rep = ks.load(DATA / "attention.pt.trace.json.gz")
    secret = tmp_path / "id_rsa"
    secret.write_text("not a trace")
    rep.meta["raw_trace"] = str(secret)
    name, data, error = raw_trace_bytes(rep)
    assert data is None and error
    rep.meta.pop("raw_trace")
    assert view_model(rep)[0]["raw_trace"] is None
    assert raw_trace_bytes(rep)[1] is None and "--trace" in raw_trace_bytes(rep)[2]
