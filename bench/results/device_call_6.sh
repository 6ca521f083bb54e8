#!/bin/bash
# the final overhead table: every row, host enqueue hidden (DeviceTimer), 20 repeats
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
MM="thread;thread, global;warp;warp, global;1 block (0);1 block (last);first 1% blocks;132 blocks;132 spread;132 blocks, global;132 blocks, regs capped;132 blocks, global, occupancy regs"
VA="thread;warp;warp, occupancy regs;1 block (0);1 block (last);first 1% blocks;132 blocks"
timeout 420 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "$VA" --out "$OUT/gpu_overhead_h200_2026-11-29_final.md" > "$OUT/overhead.log" 2>&1
echo "rc=$?"; cat "$OUT/gpu_overhead_h200_2026-11-29_final.md" | grep -v "^$"; grep -i "Traceback" -A10 "$OUT/overhead.log" | head -20
