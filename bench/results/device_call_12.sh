#!/bin/bash
# bench/gpu_overhead.py, every row, on the final recorder
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
timeout 420 python3 bench/gpu_overhead.py --repeats 20 --out "$OUT/gpu_overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| \|^- " "$OUT/gpu_overhead.md"; grep -i "error\|Traceback" -A5 "$OUT/overhead.log" | head -30
