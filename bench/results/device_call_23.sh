#!/bin/bash
# GPU check of the fourth session's GPU-backend work (2026-12-01): array views, tuple members, .real/.imag atomics
# and the corpus harness's module-per-function rebuild. First the GPU tests alone (tests/test_gpu.py,
# tests/test_kernels.py; pytest-xdist, 6 workers: they took 428 s in one process in call 18), then numba-cuda's
# corpus on the GPU backend (bench/corpus_gpu.sh) with the machine to itself.
#   bash bench/results/device_call_23.sh        (repository root; results under $OUT)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
s=$(date +%s)
GPUVIZ_TEST_GPU=1 timeout -s ABRT 230 python3 -X faulthandler -m pytest -q -p no:cacheprovider -n 6 tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - s )) s"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20
s=$(date +%s)
OUT=/tmp/corpus_gpu SHARDS=14 SHARD_TIMEOUT_S=270 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$? in $(( $(date +%s) - s )) s"
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
head -30 "$OUT/corpus_gpu.txt"
