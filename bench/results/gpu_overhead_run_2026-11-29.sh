#!/bin/bash
# The one device call of the 2026-11-29 follow-up (scalar launch parameters, register cap): the chosen bench
# rows with the new recorder, the GPU tests on the same tree, then the same rows with the recorder before.
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}
mkdir -p "$OUT"
MM="132 blocks, global;132 blocks, global, occupancy regs;1 block (0);first 1% blocks"
VA="warp;warp, occupancy regs;1 block (0);first 1% blocks"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
timeout 100 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "$VA" --out "$OUT/after.md" > "$OUT/after.log" 2>&1
echo "after rc=$?"
GPUVIZ_TEST_GPU=1 timeout 130 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test_gpu.log"
timeout 50 python3 bench/gpu_overhead.py --impl before --repeats 20 --matmul "132 blocks, global;1 block (0);first 1% blocks" \
  --vector "warp;1 block (0);first 1% blocks" --out "$OUT/before.md" > "$OUT/before.log" 2>&1
echo "before rc=$?"
grep "^| " "$OUT/after.md" "$OUT/before.md" 2>/dev/null
tail -5 "$OUT/after.log"
