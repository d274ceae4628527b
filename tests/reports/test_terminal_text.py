"""Names from the input (kernel and file names) never reach a terminal as escapes (issue 46, item 6):
the text views and TraceError messages show each control character as U+FFFD."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import kernelscope as ks

CORPUS = Path(__file__).parent.parent / "corpus"
# Control characters but tab and newline: ESC starts a terminal escape, BEL ends a title one.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
ESCAPES = "k\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_comparison_text_has_no_terminal_escapes():
    # A real corpus file whose kernel name holds ESC [31m (a colour escape), against itself.
    rep = ks.load(CORPUS / "long_name_binary.json")
    assert "\x1b[31m" in rep.kernels["name"].iloc[0]
    text = repr(ks.compare(rep, rep, labels=("a\x1b[2J", "b\x07")))
    assert not CONTROL.search(text), repr(CONTROL.findall(text))
    assert "\ufffd[31m" in text         # the name still shows, its escape made inert


def test_trace_error_message_has_no_terminal_escapes(tmp_path):
    missing = tmp_path / f"{ESCAPES}.json"
    with pytest.raises(ks.TraceError) as e:
        ks.load(missing)
    assert not CONTROL.search(str(e.value)) and str(e.value).endswith(": no such file")
    bad = tmp_path / f"{ESCAPES}.ksreport.json"
    shutil.copy(CORPUS / "report_truncated.ksreport.json", bad)
    with pytest.raises(ks.TraceError, match="damaged") as e:
        ks.load(bad)
    assert not CONTROL.search(str(e.value)) and "k\ufffd]0;pwned\ufffd" in str(e.value)
