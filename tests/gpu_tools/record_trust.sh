#!/usr/bin/env bash
# Issue 28's recordings on the device machine (not CI), in one command:
#   bash tests/gpu_tools/record_trust.sh OUTDIR [SCRIPT_DIR]
# SCRIPT_DIR holds record_trust.py (tests/gpu_tools by default). Writes OUTDIR/trust/ and a log.
set -u
OUT=${1:?outdir}; G=${2:-tests/gpu_tools}
T="$OUT"/trust
mkdir -p "$T" /tmp/site
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
run() { local t=$1; shift; echo "== $* (limit ${t}s)"; local s=$(date +%s); timeout "$t" "$@"; echo "== rc=$? in $(( $(date +%s) - s ))s: $*"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c "import torch, triton, jax; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__, 'jax', jax.__version__)"
ncu --version | tail -1
} 2>&1 | tee "$T"/versions.txt
run 60 python3 $G/record_trust.py jax_cell "$T" 2>&1 | grep -v -E "^\s*$" | tail -25
run 40 python3 $G/record_trust.py graph_replay "$T" 2>&1 | tail -25
run 40 python3 $G/record_trust.py l2_elementwise "$T" 2>&1 | tail -16
# a fresh process with empty compile caches: the first call is really cold
TORCHINDUCTOR_CACHE_DIR=/tmp/cold_inductor TRITON_CACHE_DIR=/tmp/cold_triton \
  run 140 python3 $G/record_trust.py cold "$T" 2>&1 | tail -30
run 80 ncu --set full --clock-control none --nvtx --nvtx-include ks/ -o "$T"/ncu_conv \
  python3 $G/record_trust.py conv_ncu "$T" 2>&1 | tail -8
xz -T0 -6 "$T"/ncu_conv.ncu-rep   # 23.6 MB -> 0.97 MB
run 30 python3 $G/record_trust.py conv_kineto "$T" 2>&1 | tail -12
ls -la "$T"
