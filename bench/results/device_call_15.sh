#!/bin/bash
# thread mode with 32-bit positions and state (32 registers in the split matmul kernel instead of 40): bench rows,
# then every thread-mode GPU test
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
MM="thread, global;1 block (0);1 block (last);first 1% blocks;132 blocks;132 spread;132 blocks, global"
VA="thread;warp;first 1% blocks"
timeout 110 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "$VA" --out "$OUT/thread32.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| \|^- " "$OUT/thread32.md"; grep -i "error\|Traceback" -A5 "$OUT/overhead.log" | head -20
GPUVIZ_TEST_GPU=1 timeout 270 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py -k "not warp" > "$OUT/test_thread.log" 2>&1
echo "thread tests rc=$?"; grep -E "passed|failed" "$OUT/test_thread.log" | tail -2; grep -E "^(FAILED|ERROR)|Error|assert" -A3 "$OUT/test_thread.log" | head -30
