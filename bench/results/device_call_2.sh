#!/bin/bash
# leaner per-warp recorder: bench rows, instruction counts (ncu), then the GPU tests
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
MM="thread, global;1 block (0);132 blocks, global;132 blocks, global, occupancy regs"
VA="thread;warp;warp, occupancy regs;1 block (0)"
timeout 200 python3 bench/gpu_overhead.py --repeats 20 --matmul "$MM" --vector "$VA" --out "$OUT/overhead.md" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$?"; grep "^| " "$OUT/overhead.md"; grep -i "error\|Traceback" -A3 "$OUT/overhead.log" | head -20
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
timeout 120 $NCU --clock-control none --csv --metrics smsp__inst_executed.sum,gpu__time_duration.sum,launch__registers_per_thread,dram__bytes.sum \
  python3 bench/gpu_profile.py --vector "plain;warp" > "$OUT/ncu.csv" 2>"$OUT/ncu.err"
echo "ncu rc=$?"; grep -v "^==" "$OUT/ncu.csv" | awk -F'","' '{print $5" | "$(NF-2)" | "$NF}' | cut -c1-160 | tail -16
GPUVIZ_TEST_GPU=1 timeout 330 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$?"; tail -25 "$OUT/test_gpu.log"
