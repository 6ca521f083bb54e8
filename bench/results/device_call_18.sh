#!/bin/bash
# Mid-session GPU check (2026-12-01, second session): the GPU tests on main after the trace schema 3 / site table
# and the language work, side by side with numba-cuda's test corpus on the GPU backend (bench/corpus_gpu.sh).
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__)'
GPUVIZ_TEST_GPU=1 timeout -s ABRT 520 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1 &
tests=$!
OUT=/tmp/corpus_gpu SHARDS=8 SHARD_TIMEOUT_S=420 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$?"
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
head -40 "$OUT/corpus_gpu.txt"
wait $tests; echo "tests rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2; grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20; grep -A30 "most recent call first" "$OUT/test_gpu.log" | head -40
