"""Warp stalls sampled live by Proton, on the real H200 recording in tests/data/counters/.

``proton_workload.hatchet`` is Proton's PC sampling of the workload's step; the Kineto trace
``proton_workload.pt.trace.json.gz`` is the same step profiled right after, in the same process.
"""
import json

import pytest

import kernelscope as ks
from kernelscope.analysis.stalls import REASONS
from kernelscope.capture.stalls import SOURCE, attach_stalls, sample_stalls
from kernelscope.trace.demangle import demangle, name_key
from kernelscope.trace.proton import read_hatchet
from tests.conftest import DATA

REC = DATA / "counters"


def stalled_report():
    rep = ks.load(REC / "proton_workload.pt.trace.json.gz")
    notes = attach_stalls(rep.trace, read_hatchet(REC / "proton_workload.hatchet"))
    return ks.Report(rep.trace), notes


def test_hatchet_reads_every_kernel():
    c = read_hatchet(REC / "proton_workload.hatchet")
    assert len(c) == 5
    assert set(c["launches"]) == {1, 2}
    spin = c[c["name"].str.contains("spin_kernel")].iloc[0]
    assert spin["symbol"].startswith("_ZN2at4cuda")
    assert spin["name"] == "at::cuda::(anonymous namespace)::spin_kernel(long)"
    assert spin["stalled_wait"] == 701 and spin["time_us"] == pytest.approx(507.105)
    # Proton's counts include 'selected' (issuing): a stall count of its own
    raw = json.loads((REC / "proton_workload.hatchet").read_text())[0]["children"]
    assert sum(v for n in raw for k, v in n["metrics"].items() if k.startswith("stalled_")) == \
        sum(n["metrics"]["num_stalled_samples"] for n in raw)


def test_stalls_match_the_profiled_kernels():
    rep, notes = stalled_report()
    assert notes == []
    s = rep.stalls
    assert len(s) == 5 and set(s["source"]) == {SOURCE}
    assert set(s["name"]) == set(rep.kernels["name"])
    assert s["in_profiled_run"].all()
    by = s.set_index("name")
    top = dict(zip(rep.kernels["short_name"], rep.kernels["top_stall"]))
    # a memory-bound reduction and elementwise kernel wait on global memory; the spin kernel on
    # its own dependent instructions
    assert top["reduce sum"] == "long_scoreboard" and top["elementwise Mul (vectorized x4)"] == "long_scoreboard"
    assert top["spin_kernel"] == "wait"
    reduce = by.loc[[n for n in by.index if "reduce_kernel" in n][0]]
    assert reduce["long_scoreboard"] == pytest.approx(56237 / (61408 - 488))
    assert "selected" not in s.columns
    # shares over the reasons sum to 1 per kernel, in the one vocabulary
    cols = [c for c in s.columns if c in REASONS]
    assert (s[cols].sum(axis=1) - 1).abs().max() < 1e-9
    assert set(rep.kernels["stall_source"]) == {SOURCE}
    assert rep.meta["stalls"]["kernels_matched"] == 5


def test_saved_report_keeps_the_stalls(tmp_path):
    rep, _ = stalled_report()
    back = ks.load(rep.save(tmp_path / "s.ksreport.json.gz"))
    assert back.stalls["top_stall"].tolist() == rep.stalls["top_stall"].tolist()
    assert back.kernels["top_stall"].tolist() == rep.kernels["top_stall"].tolist()
    assert back.meta["stalls"]["source"] == SOURCE


def test_unmatched_kernels_are_named():
    """The PM workload's Kineto trace has a reduction the stall run never sampled under that
    name, and the stall run's names are matched loosely (whitespace) before giving up."""
    rep = ks.load(REC / "pm_workload.pt.trace.json.gz")
    c = read_hatchet(REC / "proton_workload.hatchet")
    c.loc[0, "name"] = c.loc[0, "name"].replace("(", " (")         # another demangler's spacing
    c.loc[1, ["name", "symbol"]] = ["ks_other_kernel", "ks_other_kernel"]
    notes = attach_stalls(rep.trace, c)
    assert any("ran in the stall-sampling run but not in the profiled run: ks_other_kernel" in n for n in notes)
    assert any("got no stall samples" in n for n in notes)
    assert rep.trace.stalls["in_profiled_run"].sum() == 4


def test_demangle_and_keys():
    assert demangle("not_mangled") == "not_mangled"
    assert demangle("_Zgarbage") == "_Zgarbage"
    assert name_key("void at::f<int>(int)") == name_key("at::f<int> (int)")


def test_no_gpu_says_so():
    counts, notes, info, error = sample_stalls(lambda: None)
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("has a GPU")
    assert counts is None and error is None and "need a CUDA device" in notes[0]


def test_not_a_hatchet(tmp_path):
    p = tmp_path / "x.hatchet"
    p.write_text('{"traceEvents": []}')
    with pytest.raises(ks.TraceError, match="not a Proton profile"):
        read_hatchet(p)
    p.write_text("[1, 2")
    with pytest.raises(ks.TraceError, match="not valid JSON"):
        read_hatchet(p)
