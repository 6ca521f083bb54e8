#!/bin/bash
# per-warp recorder with a straight-line path for converged warps: time, instructions, warp-mode tests
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
timeout 120 python3 bench/gpu_overhead.py --repeats 20 --matmul "1 block (0)" --vector "warp;warp, occupancy regs" --out "$OUT/overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| " "$OUT/overhead.md"; grep -i "Traceback" -A12 "$OUT/overhead.log" | head -30
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
timeout 120 $NCU --clock-control none --section SourceCounters -f -o "$OUT/src" python3 bench/gpu_profile.py --vector "warp" > "$OUT/ncu.log" 2>&1
$NCU --import "$OUT/src.ncu-rep" --page source --print-source sass --csv > "$OUT/source.csv" 2> "$OUT/source.err"; rm -f "$OUT/src.ncu-rep"
echo "ncu done"
GPUVIZ_TEST_GPU=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py -k "warp or unrecorded or occupancy or equals_cpu_executor" > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/test_gpu.log"; grep -E "^(FAILED|ERROR)|Error" "$OUT/test_gpu.log" | head
