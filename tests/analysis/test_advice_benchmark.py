"""The advice benchmark (benchmarks/advice): its H200 pairs are complete, the scoring runs on them,
and the table published in benchmarks/advice/README.md is the one the code gives today."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADVICE = ROOT / "benchmarks" / "advice"


@pytest.fixture(scope="module")
def score():
    sys.path.insert(0, str(ADVICE))
    try:
        import score as mod
        yield mod
    finally:
        sys.path.remove(str(ADVICE))


def test_every_pair_was_recorded_with_its_realized_gain():
    sys.path.insert(0, str(ADVICE))
    try:
        from workloads import WORKLOADS
    finally:
        sys.path.remove(str(ADVICE))
    results = json.loads((ADVICE / "recordings" / "results.json").read_text())
    assert len(WORKLOADS) >= 24 and set(results) == set(WORKLOADS)
    for name, r in results.items():
        assert "error" not in r, name
        assert r["before_ms"] > 0 and r["after_ms"] > 0 and r["gain_ms"] == pytest.approx(r["before_ms"] - r["after_ms"])
        for v in ("before", "after"):
            assert (ADVICE / "recordings" / f"{name}.{v}.ksreport.json.gz").exists(), (name, v)
    # Every family of finding the issue names has a pair.
    fams = {r["family"] for r in results.values()}
    assert {"launch-bound", "syncs", "pageable copies", "serialized copies", "misaligned GEMM", "fp32 GEMM",
            "uncoalesced", "spills", "tiny grid", "cold start", "host-bound", "unfused elementwise"} <= fams


def test_the_published_table_is_todays(score):
    rows = score.score()
    table = score.markdown(rows)
    readme = (ADVICE / "README.md").read_text()
    assert table in readme, "benchmarks/advice/README.md is stale: run `python benchmarks/advice/score.py --markdown`"
    s = score.summary(rows)
    assert s["pairs"] == len(rows) >= 24
    # A right first item whose fix made the step slower would be listed; none is.
    assert s["slower"] == []
