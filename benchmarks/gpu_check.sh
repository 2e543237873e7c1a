#!/bin/bash
# One call on a lent GPU machine (the device tool): the fused kernels against the CPU, a profile,
# benchmarks/gpu.py beside PyTorch, then the CUDA test modules on the real GPU (test_cuda_ops.py last: CuPy compiles a kernel for each new
# op and dtype on a fresh machine, so it gets what time is left). Logs and JSON go under $OUT;
# a short summary is printed last.   run: bash benchmarks/gpu_check.sh [quick|full] [SECONDS]
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
unset EMBER_CUDA_SIMULATE
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import cupy, torch; print('cupy', cupy.__version__, 'torch', torch.__version__)" | tee -a "$OUT/gpu.txt"
timeout 60 python3 benchmarks/gpu_fused_check.py > "$OUT/gpu_fused.log" 2>&1
echo "gpu_fused_check.py rc=$?: $(tail -1 "$OUT/gpu_fused.log")"
timeout 60 python3 benchmarks/gpu_random_check.py > "$OUT/gpu_random.log" 2>&1
echo "gpu_random_check.py rc=$?: $(tail -1 "$OUT/gpu_random.log")"
timeout 60 python3 benchmarks/cuda_host.py > "$OUT/cuda_host.log" 2>&1
echo "cuda_host.py rc=$?"; cat "$OUT/cuda_host.log"
timeout 90 python3 benchmarks/gpu_profile.py > "$OUT/gpu_profile.log" 2>&1
echo "gpu_profile.py rc=$?"
ARGS="--quick"; [ "${1:-quick}" = full ] && ARGS=""
timeout 200 python3 benchmarks/gpu.py $ARGS --json "$OUT/gpu.json" > "$OUT/gpu_bench.log" 2>&1
echo "gpu.py rc=$?"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py \
    tests/test_cuda_allocator.py tests/test_cuda_interop.py tests/test_cuda_random.py \
    tests/test_cuda_attention.py \
    tests/test_cuda_multi_device.py > "$OUT/cuda_tests.log" 2>&1
echo "runtime tests rc=$?: $(tail -1 "$OUT/cuda_tests.log")"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cpp_extension.py \
    > "$OUT/cuda_ext.log" 2>&1
echo "extension tests rc=$?: $(tail -1 "$OUT/cuda_ext.log")"
touch "$OUT/cuda_ops.log"
if [ "${2:-150}" -gt 0 ]; then
    timeout "${2:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_cuda_ops.py \
        > "$OUT/cuda_ops.log" 2>&1
    echo "op table rc=$?: $(tail -1 "$OUT/cuda_ops.log")"
fi
grep -A200 "^case" "$OUT/gpu_bench.log" | head -50
grep -vE "^ *$|Ordered by|List reduced|ncalls" "$OUT/gpu_profile.log" | cut -c1-150 | head -40
tail -5 "$OUT/gpu_bench.log" | grep -i error
grep -hE "^FAIL|FAILED" "$OUT/gpu_fused.log" "$OUT/gpu_random.log" | head -20
grep -hE "^(FAILED|ERROR)" "$OUT/cuda_tests.log" "$OUT/cuda_ext.log" "$OUT/cuda_ops.log" | head -30
