"""Recordings several analysis test modules share: the H200 training loops of
benchmarks/training/record.py (each module reads its own copy once)."""
import pytest

import kernelscope as ks
from tests.conftest import DATA

TRAINING = DATA / "training"


@pytest.fixture(scope="module")
def lm():
    """The transformer LM's 12 recorded steps (profile_memory, shapes, stacks)."""
    return ks.load(TRAINING / "lm_steps.pt.trace.json.gz")


@pytest.fixture(scope="module")
def leak():
    """The same loop keeping every step's loss and a copy of its logits."""
    return ks.load(TRAINING / "leak_steps.pt.trace.json.gz")
