#!/usr/bin/env bash
# Record this round's real recordings on the device machine (not CI): real-world traces, JAX's
# own trace, per-rank traces, full Nsight Compute reports, PM samples and Proton PC samples.
#   bash tests/gpu_tools/record_all.sh OUTDIR a|b     (a: traces, ranks, PM; b: Proton, Nsight Compute)
# Wheels the image lacks come from .whl/ (IPython & co. for the notebooks; helion 1.4.0;
# cupti-python with its own libcupti, installed apart so torch keeps its own).
set -u
OUT=${1:?outdir}
PHASE=${2:-a}
G=tests/gpu_tools
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"/wild "$OUT"/ncu "$OUT"/counters /tmp/site /tmp/cupti_site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/cupti_site .whl/cupti_python-*.whl .whl/nvidia_cuda_cupti-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl | grep -v -e cupti_python -e nvidia_cuda_cupti)
export PYTHONPATH=/tmp/site:$PWD
run() { local t=$1; shift; echo "== $* (limit ${t}s)"; local s=$(date +%s); timeout "$t" "$@"; echo "== rc=$? in $(( $(date +%s) - s ))s: $*"; }

{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c "import torch, triton, jax, cupy; print('torch', torch.__version__, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__)"
ncu --version | tail -1; ncu --help | grep -i -E "compress|nvtx-include|import-source" | head
ls /opt/nvidia/nsight-compute/*/extras/python 2>/dev/null
python3 -c "import torch.profiler._cupti" 2>&1 | tail -1
} 2>&1

if [ "$PHASE" = a ]; then
# Phase A (GPU shared; timings in these traces are not the point): wild traces, JAX, ranks.
( for w in jax_in_torch cupy_libs torch_libs helion_kernels gpt2_infer bert_infer; do
    run 150 python3 $G/record_wild.py $w "$OUT"/wild; done ) > "$OUT"/wild/log_a.txt 2>&1 &
( for w in llama_train resnet50_train compiled_maxautotune_free vit_compiled; do
    run 200 python3 $G/record_wild.py $w "$OUT"/wild; done
  run 90 python3 $G/record_wild.py jax_own "$OUT"/wild
  run 120 torchrun --nproc_per_node 2 $G/record_ranks.py "$OUT"/wild ) > "$OUT"/wild/log_b.txt 2>&1 &
wait
cat "$OUT"/wild/log_a.txt "$OUT"/wild/log_b.txt | grep -v -E "^\s*$" | grep -E "==|events|Error|error|rank|jax_own" | tail -60

# PM sampling with the GPU to itself.
PYTHONPATH=/tmp/site:$PWD:/tmp/cupti_site run 60 python3 $G/record_counters.py probe "$OUT"/counters 2>&1 | tail -40
PYTHONPATH=/tmp/site:$PWD:/tmp/cupti_site run 90 python3 $G/record_counters.py pm "$OUT"/counters 2>&1 | tail -30
fi
if [ "$PHASE" = b ]; then
# Phase B (GPU alone): Proton, then Nsight Compute.
run 120 python3 $G/record_wild.py helion_kernels "$OUT"/wild 2>&1 | tail -5
run 120 python3 $G/record_counters.py proton "$OUT"/counters 2>&1 | tail -15
run 90 python3 $G/record_counters.py both "$OUT"/counters 2>&1 | tail -8
run 120 ncu --clock-control none --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg --csv --log-file "$OUT"/counters/ncu_validation.csv python3 $G/record_counters.py plain 2>&1 | tail -5
for w in torch_ops triton_kernels attention; do
  run 150 ncu --set full --import-source yes --clock-control none --nvtx --nvtx-include ks/ -o "$OUT"/ncu/$w python3 $G/record_ncu.py $w 2>&1 | tail -4
  run 60 python3 $G/record_ncu.py $w --kineto "$OUT"/ncu 2>&1 | tail -3
done
run 200 ncu --set full --import-source yes --clock-control none --nvtx --nvtx-include ks/ -c 10 -o "$OUT"/ncu_big python3 $G/record_ncu.py resnet50 2>&1 | tail -3
fi
ls -la "$OUT"/wild "$OUT"/ncu "$OUT"/counters "$OUT"
