"""Live PM sampling beside torch.profiler: ``ks.profile(metrics=True)`` / ``%%kernelprofile --metrics``.

Through NVIDIA's ``cupti-python`` (``cupti.pm_sampling.Collector``): configure single-pass
metrics, sample GPU-wide every ``interval_us`` while the region runs (no kernel replay), decode
after, evaluate each sample's metrics on the host. CUPTI's timestamps are not Kineto's: while
torch.profiler runs, Kineto installs its own timestamp callback and CUPTI counts TSC ticks. So we
read ``(time.time_ns(), cuptiGetTimestamp())`` pairs back to back when sampling starts and stops
and map the samples linearly onto the trace's clock (:func:`kernelscope.trace.counters.clock_map`).

Every failure leaves the ordinary profile intact and says why in the report's notes: the package
missing, counters not permitted, a GPU too old for time-interval sampling, a metric refused,
CUPTI's profiler already in use.

Finding cupti-python: ``import cupti``, else the directory named by ``KERNELSCOPE_CUPTI_PATH``
appended to ``sys.path``. Its PM sampling needs libcupti 13.3+ in the process, and torch loads its
own at import (13.0.x for torch built against CUDA 13.0): an older one refuses the configuration
(ERROR_INVALID_PARAMETER on the H200), so :func:`loaded_cupti_version` is checked first and the note
says how to get the newer one loaded (README, Hardware counters).
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time

from kernelscope.trace.counters import DEFAULT_METRICS, SOURCE_LIVE

INSTALL_HINT = ('pip install "kernelscope[counters]" (or pip install --target DIR "cupti-python==13.4.*" '
                '"nvidia-cuda-cupti==13.4.*" and start Python with DIR first on PYTHONPATH, or set '
                'KERNELSCOPE_CUPTI_PATH=DIR before torch is imported)')
DEFAULT_INTERVAL_US = 20.0
# Host memory: CUPTI's counter-data image costs ~5 KB per sample and metric (31.0 KiB per sample
# for the 6 default metrics on the H200, measured). The samples are decoded in one call, into an
# image sized to the region (a second decode after the stop returns nothing: checked on the H200,
# where a 250-slot first decode kept 249 and the rest were gone), so the total is capped; the values
# kept cost 8 bytes per sample and metric.
MAX_SAMPLES = int(os.environ.get("KERNELSCOPE_PM_MAX_SAMPLES", "20000"))
# Device memory CUPTI's hardware buffer takes while sampling.
HW_BUFFER_BYTES = 256 << 20

# CUPTI's profiler initialize/deinitialize is process-wide and a second deinitialize crashes the
# process (torch's own PmSampler counts its users for the same reason): count ours.
_lock = threading.Lock()
_users = 0


def import_cupti():
    """``(cupti.cupti, cupti.pm_sampling)``; raises ImportError with the install hint.

    >>> import_cupti()                                     # doctest: +SKIP
    """
    extra = os.environ.get("KERNELSCOPE_CUPTI_PATH")
    try:
        from cupti import cupti, pm_sampling  # noqa: F401
        return cupti, pm_sampling
    except ImportError:
        if not extra:
            raise ImportError(f"PM sampling needs NVIDIA's cupti-python: {INSTALL_HINT}") from None
    for d in extra.split(os.pathsep):
        if d and d not in sys.path:
            sys.path.append(d)
    try:
        from cupti import cupti, pm_sampling  # noqa: F401
    except ImportError as e:
        raise ImportError(f"PM sampling needs NVIDIA's cupti-python; KERNELSCOPE_CUPTI_PATH={extra} "
                          f"did not provide it ({e}): {INSTALL_HINT}") from None
    return cupti, pm_sampling


# cupti-python's PM sampling (13.3+) fills CUPTI 13.3 structs: an older libcupti already in the
# process (torch loads its own at import) rejects them with ERROR_INVALID_PARAMETER (seen on the H200).
MIN_CUPTI_VERSION = 130300


def loaded_cupti_version() -> int | None:
    """``cuptiGetVersion`` of the libcupti already loaded in this process (e.g. 130001 for the one
    torch 2.11+cu130 ships), or None when none is loaded. Never loads one itself.

    >>> loaded_cupti_version() is None or loaded_cupti_version() > 0       # doctest: +SKIP
    True
    """
    import ctypes
    for name in ("libcupti.so.13", "libcupti.so.12", "libcupti.so"):
        try:
            lib = ctypes.CDLL(name, mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        v = ctypes.c_uint32(0)
        try:
            if lib.cuptiGetVersion(ctypes.byref(v)) == 0:
                return int(v.value)
        except AttributeError:
            continue
    return None


def resolve_metrics(metrics) -> list:
    """The metric list for ``metrics=True`` (the defaults), a name or a list of names.

    >>> resolve_metrics(True)[:1], resolve_metrics("dram__bytes.sum")
    (['sm__cycles_active.avg'], ['dram__bytes.sum'])
    """
    if metrics is True:
        return list(DEFAULT_METRICS)
    if isinstance(metrics, str):
        return [m.strip() for m in metrics.split(",") if m.strip()]
    out = [str(m).strip() for m in metrics]
    if not out or not all(out):
        raise ValueError("metrics must be True or a list of CUPTI metric names")
    return out


def _calibrate(cu, tries=5):
    """One (unix ns, CUPTI timestamp) pair: the tightest of a few back-to-back reads."""
    best = None
    for _ in range(tries):
        a = time.time_ns()
        c = cu.get_timestamp()
        b = time.time_ns()
        if best is None or b - a < best[2]:
            best = ((a + b) // 2, int(c), b - a)
    return best[0], best[1]


class PmSampling:
    """One PM-sampling session on one device, driven by :class:`kernelscope.capture.profile`.

    ``prepare()`` before torch.profiler starts (enable + configure; refusals end here), ``start()``
    and ``stop()`` right inside the profiled region (calibration pairs around the sampling),
    ``collect()`` after the profiler stopped (decode, evaluate, disable). Problems go to
    ``self.notes``; ``self.ok`` turns False and the region still records as usual.

    >>> pm = PmSampling(True, 20, 0)                  # doctest: +SKIP
    >>> pm.prepare(); pm.start(); step(); pm.stop(); pm.collect()   # doctest: +SKIP
    """

    def __init__(self, metrics, interval_us, device_index, max_samples=None):
        self.metrics = resolve_metrics(metrics)
        self.interval_us = float(interval_us or DEFAULT_INTERVAL_US)
        if not math.isfinite(self.interval_us) or self.interval_us < 1:
            raise ValueError("interval_us must be at least 1 (microseconds)")
        self.device_index = int(device_index)
        self.max_samples = int(max_samples or MAX_SAMPLES)
        self.notes = []
        self.ok = False
        self.calibration = []
        self.result = None
        self._col = None
        self._cu = None
        self._started = None
        self._elapsed_ns = None
        self._counted = False

    # -- before the region -----------------------------------------------------------------
    def prepare(self):
        try:
            cu, pm = import_cupti()
        except ImportError as e:
            self.notes.append(f"hardware counters were not sampled: {e}")
            return
        self._cu = cu
        loaded = loaded_cupti_version()
        if loaded is not None and loaded < MIN_CUPTI_VERSION:
            self.notes.append(
                f"hardware counters were not sampled: the libcupti already loaded in this process is "
                f"{loaded // 10000}.{loaded // 100 % 100} (torch loads its own at import), and cupti-python's PM "
                f"sampling needs {MIN_CUPTI_VERSION // 10000}.{MIN_CUPTI_VERSION // 100 % 100} or newer. Install "
                "nvidia-cuda-cupti>=13.4 into the same environment as torch (pip install \"kernelscope[counters]\"; "
                "pip warns that torch pinned an older one, and torch runs with the newer), or put the directory "
                "holding cupti-python and its nvidia-cuda-cupti first on PYTHONPATH before Python starts, then "
                "restart the kernel")
            return
        col = pm.Collector(self.device_index)
        try:
            col.enable()
        except PermissionError:
            self.notes.append("hardware counters were not sampled: this user may not read GPU performance "
                              "counters (CUPTI ERROR_INSUFFICIENT_PRIVILEGES). Run as root, or load the "
                              "driver with NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's "
                              "ERR_NVGPUCTRPERM page)")
            return
        except Exception as e:  # noqa: BLE001 - CUPTI raises several types; each is a note
            self.notes.append(f"hardware counters were not sampled: PM sampling could not start ({_why(e)}); "
                              "another tool may hold CUPTI's profiler (Nsight Compute or Systems, DCGM "
                              "profiling, Triton's Proton, torch's own PM sampler)")
            return
        self._col = col
        global _users
        with _lock:
            _users += 1
        self._counted = True
        try:
            col.configure(metrics=self.metrics, sampling_interval=int(round(self.interval_us * 1000)),
                          hardware_buffer_size=HW_BUFFER_BYTES,
                          trigger_mode=pm.TriggerMode.GPU_TIME_INTERVAL)
        except Exception as e:  # noqa: BLE001 - CUPTI raises several types; each is a note
            self.notes.append("hardware counters were not sampled: " + self._refusal(e))
            self._release()
            return
        self.ok = True

    def _refusal(self, e) -> str:
        """Why configure failed, with the metrics this GPU would accept where we can tell."""
        msg = _why(e)
        if "not supported" not in msg.lower():
            return f"PM sampling could not be configured ({msg})"
        accepted, refused = [], []
        for m in self.metrics:
            try:
                self._col.configure(metrics=[m], sampling_interval=int(round(self.interval_us * 1000)),
                                    hardware_buffer_size=HW_BUFFER_BYTES)
                accepted.append(m)
            except Exception:  # noqa: BLE001 - CUPTI raises several types; any of them refuses the metric
                refused.append(m)
        if refused and accepted:
            return (f"this GPU cannot sample {', '.join(refused)} in one pass with PM sampling "
                    f"(refused); these were accepted alone: {', '.join(accepted)}. Pass metrics=[...] "
                    "with the accepted ones")
        if refused:
            return ("PM sampling with a GPU time interval is not supported here (it needs an Ampere "
                    "GA10x, Ada, Hopper or newer GPU; Turing and A100 lack it), or none of the metrics "
                    f"is available: {', '.join(refused)}")
        return (f"these metrics do not fit one pass together: {', '.join(self.metrics)}; each works "
                "alone, so sample fewer at once")

    # -- around the region ------------------------------------------------------------------
    def start(self):
        if not self.ok:
            return
        try:
            self.calibration.append(_calibrate(self._cu))
            self._col.start()
            self._started = time.monotonic_ns()
        except Exception as e:  # noqa: BLE001 - CUPTI raises several types; each is a note
            self.notes.append(f"hardware counters were not sampled: sampling did not start ({_why(e)}); "
                              "another tool may hold CUPTI's profiler (Nsight, DCGM profiling, a "
                              "second PM sampler)")
            self.ok = False
            self._release()

    def stop(self):
        if not self.ok or self._started is None:
            return
        try:
            self._col.stop()
            self._elapsed_ns = time.monotonic_ns() - self._started
            self.calibration.append(_calibrate(self._cu))
        except Exception as e:  # noqa: BLE001 - CUPTI raises several types; each is a note
            self.notes.append(f"hardware counters were lost: sampling did not stop cleanly ({_why(e)})")
            self.ok = False
            self._release()

    # -- after the region -------------------------------------------------------------------
    def collect(self):
        """``(start_ts, end_ts, values, info)`` of the samples, or None (see ``notes``)."""
        if not self.ok or self._elapsed_ns is None:
            self._release()
            return None
        import numpy as np
        expected = int(self._elapsed_ns / (self.interval_us * 1000)) + 2
        want = min(expected + 16, self.max_samples + 1)   # +1: CUPTI's first sample starts at 0
        starts, ends, vals = [], [], []
        t0 = time.perf_counter()
        image_bytes, slots = 0, 0
        capped = False
        try:
            data = self._col.decode(max_samples=want)
            image_bytes = int(getattr(getattr(data, "_image", None), "nbytes", 0))
            slots = want
            n = int(data.num_completed_samples)
            starts.extend(int(x) for x in data._start_timestamps[:n])
            ends.extend(int(x) for x in data._end_timestamps[:n])
            vals.extend(data[i].metric_values for i in range(n))
            del data
            capped = expected > self.max_samples
        except MemoryError:
            self.notes.append("some PM samples were lost: the region outran CUPTI's hardware buffer; "
                              "sample less often (a larger interval_us)")
        except Exception as e:  # noqa: BLE001 - CUPTI's data, any shape: a note, the profile stands
            self.notes.append(f"PM samples could not be decoded ({_why(e)}); the profile is intact")
            if not starts:
                self._release()
                return None
        finally:
            decode_s = time.perf_counter() - t0
            self._release()
        if capped:
            self.notes.append(
                f"PM sampling kept the first {self.max_samples:,} samples ({self.max_samples * self.interval_us / 1e3:.0f} ms "
                f"of a {self._elapsed_ns / 1e6:.0f} ms region) to bound host memory; sample less often "
                "(a larger interval_us) or raise KERNELSCOPE_PM_MAX_SAMPLES to cover it all")
        info = {"source": SOURCE_LIVE, "interval_us": self.interval_us, "device_index": self.device_index,
                "max_samples": self.max_samples, "capped": bool(capped), "decode_s": decode_s,
                "image_bytes": image_bytes,
                # CUPTI sizes the image by sample slots asked for, filled or not
                "image_bytes_per_sample": image_bytes / slots if slots else None,
                "values_bytes": len(vals) * len(self.metrics) * 8,
                "clock_note": "sampling may lock the GPU clocks (the SM clock column shows what they ran at)"}
        return (np.array(starts, dtype=np.uint64), np.array(ends, dtype=np.uint64),
                np.array(vals, dtype=np.float64).reshape(len(vals), len(self.metrics)), info)

    def _release(self):
        """Disable the collector; deinitialize CUPTI's profiler only when no user of ours is left."""
        col, self._col = self._col, None
        if col is None:
            return
        global _users
        with _lock:
            if self._counted:
                _users -= 1
                self._counted = False
            last = _users == 0
        try:
            if last:
                col.disable()        # disables the PM object, then deinitializes the profiler once
            else:
                fin = getattr(col, "_finalizer", None)
                if fin is not None:
                    fin.detach()     # keep the process-wide profiler for the other user
                _disable_only(col)
        except Exception as e:  # noqa: BLE001 - CUPTI raises several types; each is a note
            self.notes.append(f"PM sampling did not shut down cleanly ({_why(e)})")


def _disable_only(col):
    from cupti import cupti as cu
    p = cu.PmSamplingDisableParams()
    p.struct_size = cu.PM_SAMPLING_DISABLE_PARAMS_STRUCT_SIZE
    p.p_pm_sampling_object = col._pm_sampling_object
    cu.pm_sampling_disable(p.ptr)


def _why(e) -> str:
    return f"{type(e).__name__}: {e}"[:300]
