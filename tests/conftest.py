"""Shared test setup: where the real H200 recordings live, and the gpu marker's skip."""
import pathlib

import pytest

DATA = pathlib.Path(__file__).parent / "data"


def written_out_union(intervals) -> float:
    """Length of the union of (start, end) intervals by the textbook sweep, written out apart
    from the analysis code so that tests check it against an independent computation."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


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
