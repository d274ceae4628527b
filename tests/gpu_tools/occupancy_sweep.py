"""Record occupancy ground truth on a real GPU (run on the device machine, not in CI).

Launches one CuPy RawKernel family over a sweep of block sizes, register counts
(``--maxrregcount``), static and dynamic shared memory (past 48 KB, with the opt-in attribute),
carveout preferences and named barriers, and for every launch asks the driver's occupancy
calculator (``cuOccupancyMaxActiveBlocksPerMultiprocessor``) how many blocks fit per SM.
Run under Nsight Compute to get its view of the same launches:

    python tests/gpu_tools/occupancy_sweep.py plan               # list the launches (no GPU)
    ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details \\
        -k regex:ks_occ --log-file OUT/ncu.csv python tests/gpu_tools/occupancy_sweep.py run OUT

``run`` writes ``OUT/occupancy_api.csv`` (one row per launch, in launch order, so row i is
ncu's launch ID i) and ``OUT/device.json`` (the device's properties).
tests/analysis/test_occupancy.py checks kernelscope's calculator against both files once committed.
"""
from __future__ import annotations

import csv
import ctypes
import json
import os
import sys

KB = 1024
SOURCE = r"""
extern "C" __global__ void NAME(float* out, int n, int ndyn) {
    extern __shared__ float dyn[];
#if STATIC_FLOATS > 0
    __shared__ float st[STATIC_FLOATS];
#endif
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = out[(tid * 7 + i * 131) % n];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] = acc[i] * acc[(i + r + 1) % NACC] + 1.0f;
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < NACC; ++i) s += acc[i] * (float)(i + 1);
#if STATIC_FLOATS > 0
    st[threadIdx.x % STATIC_FLOATS] = s;
#endif
    if (ndyn > 0) dyn[threadIdx.x % ndyn] = s;
    BARRIERS
    __syncthreads();
#if STATIC_FLOATS > 0
    s += st[(threadIdx.x + 1) % STATIC_FLOATS];
#endif
    if (ndyn > 0) s += dyn[(threadIdx.x + 1) % ndyn];
    if (s == 1234.5f) out[tid % n] = s;   // practically never: keeps the work alive
}
"""


def kernel_name(maxrreg, static_bytes, barriers, nacc):
    return f"ks_occ_r{maxrreg}_s{static_bytes}_b{barriers}_a{nacc}"


def kernel_source(maxrreg, static_bytes, barriers, nacc):
    # named barriers 1..barriers-1 with immediate ids, so ptxas counts exactly these
    bars = " ".join(f'asm volatile("bar.sync {i};");' for i in range(1, barriers))
    return (SOURCE.replace("NAME", kernel_name(maxrreg, static_bytes, barriers, nacc))
            .replace("STATIC_FLOATS", str(static_bytes // 4)).replace("NACC", str(nacc))
            .replace("BARRIERS", bars))


def plan():
    """The launches, in order: dicts of kernel variant + launch configuration."""
    L = []

    def add(tag, threads, maxrreg=32, static=0, dyn=0, barriers=0, nacc=64, grid=264, carveout=None):
        L.append(dict(tag=tag, threads=threads, maxrreg=maxrreg, static=static, dyn=dyn, barriers=barriers,
                      nacc=nacc, grid=grid, carveout=carveout))

    for t in [32, 33, 64, 96, 100, 128, 160, 192, 224, 250, 256, 288, 320, 384, 448, 512, 544, 640, 768,
              896, 1000, 1024]:
        add("threads", t)
    for r in [16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 128, 136, 152, 168, 184, 200, 216, 232, 255]:
        for t in [96, 128, 256, 384, 640]:
            add("registers", t, maxrreg=r, nacc=160)
    for t in [128, 512]:
        for d in range(0, 16 * KB + 1, 1024):
            add("dyn_fine", t, dyn=d)
    for t in [128, 1024]:
        for d in [1, 4000, 24 * KB, 40000, 48 * KB, 48 * KB + 4, 64 * KB, 80000, 96 * KB, 100 * KB, 120000,
                  132 * KB, 150000, 164 * KB, 180000, 196 * KB, 210000, 226 * KB, 227 * KB]:
            add("dyn_large", t, dyn=d)
    for s in [16, 4 * KB, 12 * KB, 32 * KB, 48 * KB]:
        add("static", 128, static=s)
        add("static+dyn", 256, static=s, dyn=20000)
    for c in [0, 10, 25, 50, 75, 100]:
        add("carveout", 256, dyn=8 * KB, carveout=c)
        add("carveout", 128, carveout=c)
    for b in [2, 4, 8, 16]:
        for t in [128, 384]:
            add("barriers", t, barriers=b)
    for r, t, d in [(64, 256, 40000), (128, 128, 100 * KB), (96, 512, 30000), (40, 192, 12000),
                    (168, 384, 200000), (255, 128, 0), (255, 256, 60000), (56, 1024, 10000)]:
        add("mixed", t, maxrreg=r, dyn=d, nacc=160)
    for g in [1, 131, 132, 133, 1000, 10000]:
        add("grid", 256, grid=g)
    # impossible launches last (the driver refuses them; ncu records nothing for them)
    add("impossible", 1025)
    add("impossible", 1024, maxrreg=255, nacc=160)
    add("impossible", 128, dyn=227 * KB + 1)
    return L


def run(outdir, only_impossible=False):
    import cupy as cp
    import numpy as np

    os.makedirs(outdir, exist_ok=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    with open(os.path.join(outdir, "device.json"), "w") as f:  # noqa: SIM115
        json.dump({k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in props.items()
                   if isinstance(v, (int, float, str, bytes))}, f, indent=1)
    libcuda = ctypes.CDLL("libcuda.so.1")
    occ = libcuda.cuOccupancyMaxActiveBlocksPerMultiprocessor
    occ.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

    n = 1 << 22
    out = cp.ones(n, dtype=cp.float32)
    kernels = {}
    launched = 0
    cols = ["tag", "kernel", "threads", "grid", "maxrreg", "num_regs", "static", "static_smem", "dyn", "carveout",
            "barriers", "nacc", "api_rc", "api_blocks", "launched", "ncu_id", "error"]
    f = open(os.path.join(outdir, "impossible.csv" if only_impossible else "occupancy_api.csv"), "w", newline="")  # noqa: SIM115 - flushed per row, closed after the sweep
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for i, p in enumerate(plan()):
        if (p["tag"] == "impossible") != only_impossible and only_impossible:
            continue    # the impossible pass tries only the designed-impossible launches
        if p["tag"] == "impossible" and not only_impossible:
            continue    # their driver errors would end a profiled (ncu) process
        key = (p["maxrreg"], p["static"], p["barriers"], p["nacc"])
        if key not in kernels:
            kernels[key] = cp.RawKernel(kernel_source(*key), kernel_name(*key),
                                        options=(f"--maxrregcount={p['maxrreg']}",))
        k = kernels[key]
        row = dict(p, kernel=kernel_name(*key), error="", api_blocks=-1)
        try:
            k.compile() if hasattr(k, "compile") else None
            func = k.kernel.ptr
            row["num_regs"] = k.num_regs
            row["static_smem"] = k.shared_size_bytes
            if p["dyn"] > 48 * KB - p["static"]:
                k.max_dynamic_shared_size_bytes = p["dyn"]
            if p["carveout"] is not None:
                k.preferred_shared_memory_carveout = p["carveout"]
            blocks = ctypes.c_int(-1)
            rc = occ(ctypes.byref(blocks), ctypes.c_void_p(func), p["threads"], p["dyn"])
            row["api_blocks"] = blocks.value if rc == 0 else -1
            row["api_rc"] = rc
            if row["api_blocks"] <= 0 and not only_impossible:
                # under ncu a refused launch ends the profiled process, so the sweep skips
                # the launches the driver's calculator refuses; ``impossible`` tries them
                row.update(launched=0, ncu_id=-1, error="skipped")
            else:
                ndyn = p["dyn"] // 4
                k((p["grid"],), (p["threads"],), (out, np.int32(n), np.int32(ndyn)), shared_mem=p["dyn"])
                cp.cuda.Device().synchronize()
                row["launched"] = 1
                row["ncu_id"] = launched
                launched += 1
        except Exception as e:  # noqa: BLE001 - an impossible launch: record what the driver said
            row["launched"] = 0
            row["ncu_id"] = -1
            row["error"] = f"{type(e).__name__}: {e}"[:200]
        finally:
            # put the attributes back: the driver may weigh them when it picks a carveout
            if p["dyn"] > 48 * KB - p["static"]:
                try:
                    k.max_dynamic_shared_size_bytes = 48 * KB - k.shared_size_bytes
                except Exception:  # noqa: BLE001 - best effort
                    pass
            if p["carveout"] is not None:
                try:
                    k.preferred_shared_memory_carveout = -1
                except Exception:  # noqa: BLE001 - best effort
                    pass
        w.writerow(row)
        f.flush()   # keep what was recorded if the run is cut short
        print(i, row["kernel"], p["threads"], p["dyn"], row.get("num_regs"), row["api_blocks"], row["error"],
              flush=True)
    f.close()
    print("launched", launched, "of", i + 1, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        for p in plan():
            print(p)
        print(len(plan()), "launches")
    elif sys.argv[1] == "source":
        print(kernel_source(*[int(x) for x in sys.argv[2:6]]))
    elif sys.argv[1] == "impossible":
        run(sys.argv[2], only_impossible=True)
    else:
        run(sys.argv[2])
