"""Shared test setup: where the real H200 recordings live, and the gpu marker's skip."""
import pathlib

import pytest

DATA = pathlib.Path(__file__).parent / "data"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (runs on the H200 machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
