#!/usr/bin/env bash
# Everything this round runs on the H200 (device machine, not CI), in one command:
#   bash tests/gpu_tools/run_gpu_checks.sh OUTDIR [tests] [e2e] [record] [bench] [bigtrace] [notebooks]
#   NOTEBOOKS=example_notebooks/09_training_loop.ipynb NB_LIMIT=400 bash tests/gpu_tools/run_gpu_checks.sh OUTDIR notebooks
# Wheels the image lacks come from .whl/ (IPython & co.; cupti-python with its own libcupti,
# installed apart so torch keeps its own); ncu_report is the one Nsight Compute ships.
set -u
OUT=${1:?outdir}; shift
STEPS=${*:-tests record bench notebooks}
mkdir -p "$OUT" /tmp/site /tmp/cupti_site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/cupti_site .whl/cupti_python-*.whl .whl/nvidia_cuda_cupti-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl | grep -v -e cupti_python -e nvidia_cuda_cupti)
NCU_PY=$(ls -d /opt/nvidia/nsight-compute/*/extras/python | head -1)
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false KERNELSCOPE_CUPTI_PATH=/tmp/cupti_site
# cupti-python's libcupti (13.4) first on the path, so torch loads it too (README, Hardware counters)
export PYTHONPATH=/tmp/cupti_site:/tmp/site:$PWD:$NCU_PY
run() { local t=$1; shift; echo "== $* (limit ${t}s)"; local s=$(date +%s); timeout "$t" "$@"; echo "== rc=$? in $(( $(date +%s) - s ))s: $*"; }
python3 -c "import ncu_report, cupti, IPython, kernelscope; print('imports ok', ncu_report.__file__)" 2>&1 | tail -1 || true

for step in $STEPS; do case $step in
tests)
  run 420 python3 -m pytest -o addopts="" -m gpu -v -s -p no:cacheprovider tests/capture/test_gpu_capture.py \
      tests/capture/test_gpu_cupy_events.py tests/capture/test_gpu_counters.py tests/capture/test_gpu_ncu.py \
      tests/capture/test_ranks_capture.py tests/capture/test_gpu_tuning.py tests/jupyter/test_sticky_cuda_error.py \
      tests/analysis/test_occupancy.py > "$OUT"/gpu_tests.log 2>&1
  grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|error" "$OUT"/gpu_tests.log | tail -45 ;;
e2e)
  # Issue 30 in a real Jupyter kernel (nbclient): read a report between two profiles, then
  # --stalls and --ncu with no --setup, --stalls --setup, a sticky CUDA error.
  run 200 python3 tests/gpu_tools/replay_e2e.py > "$OUT"/e2e.log 2>&1
  tail -60 "$OUT"/e2e.log ;;
record)
  run 120 python3 tests/gpu_tools/record_live_counters.py /tmp/rec_live > "$OUT"/record_live.log 2>&1
  tail -25 "$OUT"/record_live.log
  cp /tmp/rec_live/live_counters.ksreport.json.gz "$OUT"/ 2>/dev/null ;;
bench)
  run 240 python3 benchmarks/capture_overhead.py --launches 5000 --post 10000 --rounds 5 --metrics \
      --json "$OUT"/overhead_metrics.json > "$OUT"/overhead.log 2>&1
  tail -30 "$OUT"/overhead.log ;;
bigtrace)
  # The split reader on this machine's cores (16): its tests, then the 1M-event benchmark, with
  # and without workers (tiled with the repository's tools/tile_trace.py).
  run 120 python3 -m pytest -o addopts="" -q -p no:cacheprovider tests/trace/test_split_reader.py > "$OUT"/split_tests.log 2>&1
  tail -3 "$OUT"/split_tests.log
  run 300 python3 benchmarks/load_trace.py --events 1000000 --out /tmp --skip-json --skip-hta --one-process \
      --repeat 3 --json-out "$OUT"/load_trace_1m.json > "$OUT"/load_trace.log 2>&1
  tail -12 "$OUT"/load_trace.log ;;
notebooks)
  # The new tutorials first; each notebook is packed as soon as it ran, and none starts past the
  # deadline (seconds since this script began), so the call returns inside the device's limit.
  export KERNELSCOPE_REFRESH_RECORDINGS=1
  # NOTEBOOKS picks the notebooks (e.g. NOTEBOOKS=example_notebooks/09_training_loop.ipynb), NB_LIMIT
  # each one's time limit in seconds.
  for nb in ${NOTEBOOKS:-example_notebooks/06_*.ipynb example_notebooks/07_*.ipynb example_notebooks/0[1-5]_*.ipynb}; do
    if [ $SECONDS -gt ${NB_DEADLINE:-470} ]; then echo "== skipped $nb (deadline)"; continue; fi
    run ${NB_LIMIT:-150} python3 tests/gpu_tools/execute_notebook.py "$nb" >> "$OUT"/notebooks.log 2>&1
    tail -2 "$OUT"/notebooks.log
    tar czf "$OUT"/notebooks.tar.gz example_notebooks/*.ipynb example_notebooks/recordings
  done ;;
esac; done
