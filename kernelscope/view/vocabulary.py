"""The names and colours the browser draws with, sent in every payload's header from the Python
tables that own them (``tests/test_vocabulary.py`` fails on a copy in ``js/src``)."""
from __future__ import annotations

from kernelscope.analysis.backend_rules import BACKENDS, COPY_COLORS
from kernelscope.analysis.findings.base import SEVERITIES
from kernelscope.analysis.ncu_kernels import LEVELS
from kernelscope.analysis.occupancy import LIMITERS
from kernelscope.analysis.timeline import CAUSES
from kernelscope.trace.ncu.export import COMPARED_METRICS

# Host spans on the timeline: CPU ops, runtime/driver calls, and the host-blocking sync calls.
HOST_COLORS = {"op": "#8c9bb0", "annotation": "#b8a06a", "runtime": "#c4c4c4", "sync": "#9467bd"}


def vocabulary() -> dict:
    """The names and colours the browser draws with, from the Python tables that own them
    (sent in every payload's header, so the JS holds no copy): backend colours and copy
    directions (``analysis.backend_rules``), idle-gap causes (``analysis.timeline.CAUSES``),
    occupancy limiters and their short forms (``analysis.occupancy.LIMITERS``), the Nsight
    Compute metrics shown beside ours (``trace.ncu.COMPARED_METRICS``), host span colours, and
    the closed sets a payload value must belong to before it may name a class: finding
    severities (``analysis.findings.SEVERITIES``) and memory levels (``analysis.ncu_kernels``).

    >>> vocabulary()["backends"]["cuBLAS"], vocabulary()["limiters"]["shared_mem"]
    ('#4e79a7', 'smem')
    >>> vocabulary()["severities"], vocabulary()["levels"]
    (['high', 'medium', 'low', 'info'], ['dram', 'l2', 'l1'])
    """
    return {
        "backends": dict(BACKENDS), "copies": dict(COPY_COLORS), "host": dict(HOST_COLORS),
        "causes": {c: {"text": x.text, "legend": x.legend, "color": x.color} for c, x in CAUSES.items()},
        "limiters": dict(LIMITERS),
        # A saved notebook's payload is untrusted: the view takes a class from these lists only.
        "severities": list(SEVERITIES), "levels": list(LEVELS),
        "ncu": [{"label": label, "column": col, "ours": ours} for label, col, ours in COMPARED_METRICS],
    }
