#!/bin/bash
# the GPU tests on the final per-warp recorder (thread-mode layout and parameters changed too); the per-warp
# test over every bundled kernel passed in device_call_10 on the same recorder code, so four of them here
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
K="not test_warp_mode_records_every_converged_lane_exactly or vector_add or mandelbrot or reduce_warp_shuffle or attention_fused"
GPUVIZ_TEST_GPU=1 timeout 400 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "$K" > "$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2; grep -E "^(FAILED|ERROR)|Error|assert" "$OUT/test_gpu.log" | head -30
cd "$OUT" && tar czf results.tgz *.log
