"""Theoretical occupancy (issue 3 fills this in)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def annotate_occupancy(kernels: pd.DataFrame, devices: pd.DataFrame) -> pd.DataFrame:
    k = kernels
    k["theoretical_occupancy"] = np.nan
    k["occupancy_limiter"] = None
    k["waves"] = np.nan
    return k
