"""CUDA events from CuPy in a process that never imported torch (run on the H200:
``python -m pytest -m gpu tests/test_gpu_cupy_events.py -v``).

The region runs in a fresh interpreter so that torch is really absent when ``ks.profile()`` starts;
the child prints one JSON line that the test checks.
"""
import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError
except Exception:  # noqa: BLE001 - no driver raises CUDARuntimeError, or worse
    pytest.skip("no CUDA device", allow_module_level=True)

CHILD = textwrap.dedent("""
    import json, sys
    import cupy as cp
    import kernelscope as ks
    assert "torch" not in sys.modules
    x = cp.random.standard_normal((2048, 2048), dtype=cp.float32)
    cp.cuda.Device().synchronize()
    with ks.profile() as prof:
        for _ in range(5):
            y = x @ x
            z = cp.fft.fft(y[0])
            s = (y * 2 + 1).sum()
        cp.cuda.Device().synchronize()
    rep = prof.report
    k = rep.kernels
    print(json.dumps({"source": rep.meta.get("cuda_event_source"), "event_us": rep.meta.get("cuda_event_us"),
                      "kernels": int(len(k)), "gpu_us": float(k["duration_us"].sum()),
                      "backends": sorted(set(k["backend"])), "other": int((k["backend"] == "other").sum()),
                      "findings": [f.kind for f in rep.findings]}))
""")


def test_cupy_only_region_is_timed_with_cupy_events():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(r)
    assert r["source"] == "cupy"
    assert r["kernels"] >= 15 and r["other"] == 0
    assert {"cuBLAS", "cuFFT", "CuPy"} <= set(r["backends"])
    # the events bracket the kernels: wall time on the GPU is at least the kernels' busy time
    assert r["event_us"] and r["event_us"] >= 0.5 * r["gpu_us"]
    assert "empty_capture" not in r["findings"]
