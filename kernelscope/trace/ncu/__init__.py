"""Nsight Compute readers: CSV exports (``export``) and ``.ncu-rep`` reports (``report``)."""
