#!/bin/bash
# the per-warp overflow test: a part of a slot overflows, is counted, and the worst-case layout holds every record
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
GPUVIZ_TEST_GPU=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "overflow" > "$OUT/test_overflow.log" 2>&1
echo "rc=$?"; grep -E "passed|failed" "$OUT/test_overflow.log" | tail -2; grep -E "^(FAILED|ERROR)|Error|assert" -A3 "$OUT/test_overflow.log" | head -40
