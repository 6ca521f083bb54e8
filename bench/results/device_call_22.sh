#!/bin/bash
# GPU baseline of the fourth session (2026-12-01, main at 2c334a7): the GPU tests (tests/test_gpu.py,
# tests/test_kernels.py) beside numba-cuda's test corpus on the GPU backend (bench/corpus_gpu.sh). The last GPU
# corpus (call 19, c343b91) predates the h15gpu compile fixes, checked only by PTX compile since.
#   bash bench/results/device_call_22.sh        (repository root; results under $OUT)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
GPUVIZ_TEST_GPU=1 timeout -s ABRT 470 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1 &
tests=$!
OUT=/tmp/corpus_gpu SHARDS=8 SHARD_TIMEOUT_S=420 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$?"
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
head -40 "$OUT/corpus_gpu.txt"
wait $tests; echo "tests rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20
grep -A20 "most recent call first" "$OUT/test_gpu.log" | head -30
