#!/bin/bash
# One call on a lent GPU machine (the device tool), sized to a lease: the raw kernels against the
# CPU and PyTorch, benchmarks/gpu.py beside PyTorch, the host time per op, then the CUDA test
# modules (the op table on the GPU included) with pytest-xdist, 12 workers. The logs go back as
# $OUT/logs.tgz (a call returns at most 8 files), the figures as $OUT/gpu.json, and CuPy's and
# ember's and Triton's build caches as $OUT/gpucache.tgz: a later call that carries it (saved in the
# repository as .gpucache.tgz, which git ignores) and starts with `tar xzf .gpucache.tgz`
# compiles nothing again (~1 minute less on a fresh machine).
#   run: bash benchmarks/gpu_check.sh [SECONDS for the whole script, default 520]
# CHECKS (default "fused random blas foreach special_values") names the correctness checks to
# run; HOST_TIME=0 leaves out benchmarks/cuda_host.py (for a second call in one lease),
# ATTENTION=0 the fused attention's check (benchmarks/gpu_attention_check.py); TUNE=1 adds
# benchmarks/gpu_attention_tune.py.
set -u
START=$SECONDS
BUDGET=${1:-520}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
LOGS=$OUT/logs; mkdir -p "$LOGS"
# wheels the machine lacks (bytecode, for Dynamo's resume functions), carried as .whl (carry it):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl bytecode
if [ -d .whl ] && ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
        .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export CUPY_CACHE_DIR=$PWD/.gpucache/cupy EMBER_CACHE_DIR=$PWD/.gpucache/ember \
    TRITON_CACHE_DIR=$PWD/.gpucache/triton
unset EMBER_CUDA_SIMULATE
left() { echo $((BUDGET - (SECONDS - START))); }
stage() {  # stage NAME SECONDS COMMAND...: run with a timeout, log to $LOGS/NAME.log
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
    echo "[$name] rc=$? $((SECONDS - t0)) s: $(tail -1 "$LOGS/$name.log" | cut -c1-150)"
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader \
    | tee "$LOGS/gpu.txt"
python3 -c "import cupy, torch, xdist; print('cupy', cupy.__version__, 'torch', torch.__version__, 'xdist', xdist.__version__)" | tee -a "$LOGS/gpu.txt"
stage smoke 60 python3 -c "import ember; x = ember.randn(64, 64, device='cuda'); print('smoke', float((x @ x).sum()), ember.cuda.get_device_name())"
# correctness checks, four at once (no timing in them); then each timed part alone
CHECKS=${CHECKS-fused random blas foreach special_values}
for c in $CHECKS; do
    timeout 90 python3 benchmarks/gpu_${c}_check.py > "$LOGS/check_$c.log" 2>&1 &
done
wait
for c in $CHECKS; do echo "[check_$c] $(tail -1 "$LOGS/check_$c.log" | cut -c1-150)"; done
# ATTENTION=0 leaves out the fused attention's check against PyTorch (its tests still run)
[ "${ATTENTION:-1}" = 1 ] && stage attention 150 python3 benchmarks/gpu_attention_check.py
stage gpu_bench 260 python3 benchmarks/gpu.py --json "$OUT/gpu.json"
stage capture 60 python3 benchmarks/gpu_capture_check.py  # the whole GPT step in one graph
stage capture_compiled 90 python3 benchmarks/gpu_capture_check.py --compiled  # Inductor's graphs
# TUNE=1: the fused attention's precisions and block sizes (Triton compiles each: ~2 minutes)
[ "${TUNE:-0}" = 1 ] && stage attention_tune 200 python3 benchmarks/gpu_attention_tune.py
[ "${HOST_TIME:-1}" = 1 ] && stage cuda_host 50 python3 benchmarks/cuda_host.py
T=$(( $(left) - 25 ))
if [ "$T" -gt 20 ]; then
    # -v: each test's name and result as it ends (a stage cut short still names its failures)
    stage tests "$T" python3 -m pytest -v -p no:cacheprovider -n 12 --dist load --maxfail=300 --timeout 90 --tb=short -rfE \
        tests/test_cuda.py tests/test_cuda_allocator.py tests/test_cuda_interop.py \
        tests/test_cuda_random.py tests/test_cuda_attention.py tests/test_cuda_multi_device.py \
        tests/test_cuda_autograd_threads.py tests/test_cuda_tunable.py tests/test_cuda_ops.py \
        tests/test_inductor_cudagraphs.py \
        tests/test_distributed_nccl.py tests/test_cpp_extension.py::test_seed11_scale_on_the_gpu
fi
echo "==== summary ($((SECONDS - START)) s)"
[ -f "$LOGS/attention.log" ] && grep -E "^FAIL|^time|failures" "$LOGS/attention.log"
grep -hE "^FAIL" "$LOGS"/check_*.log | head -20
[ -f "$LOGS/check_special_values.log" ] && grep -v "^    " "$LOGS/check_special_values.log" | head -40
grep -vE "^  |^Traceback" "$LOGS/capture_compiled.log" | tail -8
grep -A40 "^case" "$LOGS/gpu_bench.log" | head -30
grep -iE "error|Traceback" "$LOGS/gpu_bench.log" | head -5
[ -f "$LOGS/cuda_host.log" ] && tail -14 "$LOGS/cuda_host.log"
[ -f "$LOGS/attention_tune.log" ] && cat "$LOGS/attention_tune.log"
grep -E "(FAILED|ERROR) tests" "$LOGS/tests.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort -u | cut -c1-200 | head -30
grep -E "^E  " "$LOGS/tests.log" | cut -c1-200 | head -30
tail -2 "$LOGS/tests.log"
tar czf "$OUT/gpucache.tgz" .gpucache 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -r "$LOGS"
