#!/usr/bin/env bash
# Issue 44's CUDA recordings on the H200 (device machine, not CI), in one command:
#   bash tests/gpu_tools/record_onnxruntime.sh OUTDIR WHEEL
# WHEEL is onnxruntime-gpu (1.31.1, CUDA 13; 256 MB, so it reaches the machine in pieces); the
# other wheels the image lacks (IPython & co., msgspec) come from .whl/. Writes OUTDIR/ort.tar.gz:
# the PyTorch/ONNX Runtime comparison (benchmarks/onnxruntime/cuda_compare.py), record.py's
# profiles with the CUDA provider, the GPU test's log and notebook 10 executed with its recordings.
set -u
OUT=${1:?outdir}; WHEEL=${2:?onnxruntime-gpu wheel}
mkdir -p "$OUT" /tmp/site /tmp/ortrec/cmp /tmp/ortrec/rec
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl "$WHEEL"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
run() { local t=$1; shift; echo "== $* (limit ${t}s)"; local s=$(date +%s); timeout "$t" "$@"; echo "== rc=$? in $(( $(date +%s) - s ))s"; }
python3 -c "import torch, onnxruntime as o; o.preload_dlls(); print(o.__version__, o.get_available_providers(), torch.__version__)"
run 200 python3 benchmarks/onnxruntime/cuda_compare.py /tmp/ortrec/cmp --onnx-dir /tmp > /tmp/ortrec/cmp.log 2>&1
tail -60 /tmp/ortrec/cmp.log
# record.py imports no torch: preload the CUDA libraries ONNX Runtime's provider needs first
run 120 python3 -c "import sys, runpy, onnxruntime as o; o.preload_dlls(); sys.argv = ['record.py', '/tmp/ortrec/rec', '--provider', 'CUDAExecutionProvider']; runpy.run_path('benchmarks/onnxruntime/record.py', run_name='__main__')" > /tmp/ortrec/rec.log 2>&1
tail -15 /tmp/ortrec/rec.log; rm -f /tmp/ortrec/rec/*.onnx
run 120 python3 -m pytest -o addopts="" -m gpu -q -s -p no:cacheprovider tests/capture/test_gpu_onnxruntime.py > /tmp/ortrec/gpu_test.log 2>&1
tail -25 /tmp/ortrec/gpu_test.log
KERNELSCOPE_REFRESH_RECORDINGS=1 run 200 python3 tests/gpu_tools/execute_notebook.py example_notebooks/10_which_backend.ipynb > /tmp/ortrec/nb.log 2>&1
tail -40 /tmp/ortrec/nb.log
tar czf "$OUT"/ort.tar.gz -C /tmp/ortrec cmp rec cmp.log rec.log gpu_test.log nb.log \
    -C "$PWD" example_notebooks/10_which_backend.ipynb $(ls example_notebooks/recordings/10_* 2>/dev/null)
ls -la "$OUT"
