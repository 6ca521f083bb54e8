#!/bin/bash
# the GPU tests on the final recorder: tests/test_gpu.py and tests/test_kernels.py
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
GPUVIZ_TEST_GPU=1 timeout 330 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py > "$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2; grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head
GPUVIZ_TEST_GPU=1 timeout 230 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py > "$OUT/test_kernels.log" 2>&1
echo "test_kernels rc=$?"; grep -E "passed|failed" "$OUT/test_kernels.log" | tail -2; grep -E "^(FAILED|ERROR)" "$OUT/test_kernels.log" | head
