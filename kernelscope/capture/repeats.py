"""Per-repeat statistics for ``--repeat N``: moved to :mod:`kernelscope.analysis.repeats` (pure
functions over a Report's tables, which the comparison's noise reads too); this path stays."""
from __future__ import annotations

from kernelscope.analysis.repeats import REPEAT_MARK, per_repeat_totals, repeat_windows

__all__ = ["REPEAT_MARK", "per_repeat_totals", "repeat_windows"]
