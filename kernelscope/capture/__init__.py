"""Live capture: record a region of Python with torch.profiler (see :class:`profile`).

>>> from kernelscope.capture import profile
>>> with profile() as prof:                  # doctest: +SKIP
...     step()
"""
from kernelscope.capture.recorder import ProfilerBusyError, active, profile

__all__ = ["ProfilerBusyError", "active", "profile"]
