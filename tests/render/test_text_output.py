"""Text output cannot drive a terminal, and the static HTML escapes every device field (issue 31)."""
import json
import subprocess
import sys

import kernelscope as ks
from tests.conftest import DATA

ESC = "\x1b]0;pwned\x07\x1b[2J"


def _hostile_trace(tmp_path):
    import gzip
    doc = json.loads(gzip.decompress((DATA / "attention.pt.trace.json.gz").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = f"evil{ESC}kernel"
    p = tmp_path / "esc.json"
    p.write_text(json.dumps(doc))
    return p


def test_terminal_escapes_do_not_reach_repr_or_show(tmp_path):
    p = _hostile_trace(tmp_path)
    text = repr(ks.load(p))
    assert "\x1b" not in text and "\x07" not in text and "evil\ufffd]0;pwned" in text
    out = subprocess.run([sys.executable, "-m", "kernelscope", "show", str(p)], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert b"\x1b" not in out.stdout and b"\x07" not in out.stdout and b"evil" in out.stdout
    bad = tmp_path / f"x{ESC}.json"
    bad.write_text("{")
    out = subprocess.run([sys.executable, "-m", "kernelscope", "show", str(bad)], capture_output=True, timeout=120)
    assert out.returncode == 2 and b"\x1b" not in out.stderr and b"kernelscope:" in out.stderr


def test_static_html_device_line_escapes_missing_values(tmp_path):
    import gzip
    doc = json.loads(gzip.decompress((DATA / "attention.pt.trace.json.gz").read_bytes()))
    for d in doc["deviceProperties"]:
        d.pop("computeMajor", None)
        d.pop("numSms", None)
    p = tmp_path / "nodev.json"
    p.write_text(json.dumps(doc))
    html = ks.load(p)._repr_html_()
    assert "<NA>" not in html and "None" not in html and "(sm_?0, ? SMs)" in html
