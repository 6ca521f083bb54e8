#!/bin/bash
# record-per-lane staging in the per-warp recorder: its GPU tests, bench rows, instruction counts (ncu)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
GPUVIZ_TEST_GPU=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "warp" > "$OUT/test_warp.log" 2>&1
echo "warp tests rc=$?"; grep -E "passed|failed" "$OUT/test_warp.log" | tail -2; grep -E "^(FAILED|ERROR)|Error" "$OUT/test_warp.log" | head -20
VA="plain;warp;warp, occupancy regs;1 block (0)"
timeout 150 python3 bench/gpu_overhead.py --repeats 20 --matmul "" --vector "$VA" --out "$OUT/overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| " "$OUT/overhead.md"; grep -i "error\|Traceback" -A3 "$OUT/overhead.log" | head -20
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
timeout 100 $NCU --clock-control none --csv --metrics smsp__inst_executed.sum,gpu__time_duration.sum,launch__registers_per_thread,dram__bytes.sum \
  python3 bench/gpu_profile.py --vector "plain;warp" > "$OUT/ncu.csv" 2>"$OUT/ncu.err"
echo "ncu rc=$?"; grep -v "^==" "$OUT/ncu.csv" | awk -F'","' '{print $5" | "$(NF-2)" | "$NF}' | cut -c1-160 | tail -16
timeout 100 $NCU --clock-control none --section SourceCounters -f -o "$OUT/src" python3 bench/gpu_profile.py --vector "warp" > "$OUT/ncu_src.log" 2>&1
$NCU --import "$OUT/src.ncu-rep" --page source --print-source sass --csv > "$OUT/source.csv" 2> "$OUT/source.err"
echo "source rc=$?"; wc -l "$OUT/source.csv"; rm -f "$OUT/src.ncu-rep"
cd "$OUT" && tar czf results.tgz *.log *.md *.json *.csv gpu.txt 2>/dev/null; ls -la "$OUT" | head
