#!/bin/bash
# per-warp recorder with converged records numbered per lane, diverged ones apart, lane-linear indices without a
# vote: overhead rows and instruction counts first (short), then the warp-mode GPU tests
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
VA="thread;warp;warp, occupancy regs;1 block (0)"
timeout 150 python3 bench/gpu_overhead.py --repeats 20 --matmul "warp" --vector "$VA" --out "$OUT/overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| " "$OUT/overhead.md"; grep -i "error\|Traceback" -A5 "$OUT/overhead.log" | head -30
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
timeout 100 $NCU --clock-control none --section SourceCounters -f -o "$OUT/src" python3 bench/gpu_profile.py --vector "warp" > "$OUT/ncu_src.log" 2>&1
$NCU --import "$OUT/src.ncu-rep" --page source --print-source sass --csv > "$OUT/source.csv" 2> "$OUT/source.err"
echo "source rc=$?"; rm -f "$OUT/src.ncu-rep"
GPUVIZ_TEST_GPU=1 timeout 330 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py -k "warp" > "$OUT/test_warp.log" 2>&1
echo "warp tests rc=$?"; grep -E "passed|failed" "$OUT/test_warp.log" | tail -2; grep -E "^(FAILED|ERROR)|Error|assert" "$OUT/test_warp.log" | head -30
cd "$OUT" && tar czf results.tgz *.log *.md *.json *.csv gpu.txt 2>/dev/null
