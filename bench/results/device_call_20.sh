#!/bin/bash
# GPU check after call 19 (2026-12-01, branch h15gpu): the corpus on the GPU backend (call 19 at de28c38: 479 exact,
# 32 outputs only, 5 warned, 23 wrong, 20 refused, 0 crashed; since: namedtuple copies, literal shared shapes from callers,
# records handed to device functions, record field stores, reshapes), the front-end GPU tests first, then the rest of test_gpu.py.
#   bash bench/results/device_call_20.sh        (repository root; results under $OUT: 6 files)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
git rev-parse --short HEAD 2>/dev/null
(
  GPUVIZ_TEST_GPU=1 timeout -s ABRT 90 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py -k front_end > "$OUT/test_front_end.log" 2>&1
  echo "front_end tests rc=$?" >> "$OUT/test_front_end.log"
  GPUVIZ_TEST_GPU=1 timeout -s ABRT 440 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "not front_end" > "$OUT/test_gpu.log" 2>&1
  echo "test_gpu rc=$?" >> "$OUT/test_gpu.log"
) &
tests=$!
OUT=/tmp/corpus_gpu SHARDS=8 SHARD_TIMEOUT_S=400 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$?"
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
cp /tmp/corpus_gpu_stdout.txt "$OUT/corpus_stdout.txt"
head -40 "$OUT/corpus_gpu.txt"
wait $tests; echo "tests done"
tail -3 "$OUT/test_front_end.log"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_front_end.log" "$OUT/test_gpu.log" | head -20
grep -A30 "most recent call first" "$OUT/test_gpu.log" | head -40
