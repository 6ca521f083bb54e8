#!/bin/bash
# tiled matmul, chosen blocks recorded per warp (all accesses, shared included) against thread mode
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
MM="132 blocks;132 blocks, warp;first 1% blocks;first 1% blocks, warp;1 block (last)"
timeout 200 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "" --out "$OUT/mm_warp_blocks.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| \|^- " "$OUT/mm_warp_blocks.md"; grep -i "error\|Traceback" -A5 "$OUT/overhead.log" | head -30
