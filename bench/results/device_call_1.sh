#!/bin/bash
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
MM="thread, global;1 block (0);132 blocks;132 blocks, global;132 blocks, global, occupancy regs"
VA="thread;warp;warp, occupancy regs;1 block (0);1 block (last);132 blocks"
timeout 240 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "$VA" --out "$OUT/overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"
grep "^| " "$OUT/overhead.md"; tail -3 "$OUT/overhead.log"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
echo "ncu=$NCU"
timeout 200 $NCU --set full --clock-control none -f -o "$OUT/profile" python3 bench/gpu_profile.py --sass "$OUT/sass.txt" > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"; tail -5 "$OUT/ncu.log"
$NCU --import "$OUT/profile.ncu-rep" --csv --page details --print-units base > "$OUT/profile.csv" 2>&1
$NCU --import "$OUT/profile.ncu-rep" --page details --print-units base > "$OUT/profile.txt" 2>&1
ls -la "$OUT"
