#!/bin/bash
# Final GPU check (2026-12-01) on main after this session's landings: the GPU tests (traces equal to the CPU
# executor's on every bundled kernel, per-warp mode, SM ids, timestamps) and `gpuviz run --backend gpu` of
# programs that import numba.cuda before gpuviz (numpy 2.5 shim in the worker) and launch several kernels.
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__)'
timeout 120 python3 -m gpuviz run --backend gpu tests/user_scripts/imports_numba_first.py -o "$OUT/numba_first.gpuviz" > "$OUT/run_numba_first.log" 2>&1
echo "imports_numba_first rc=$?"; grep -E "row_stack|launch|Error|error" "$OUT/run_numba_first.log" | head -8
timeout 180 python3 -m gpuviz run --backend gpu tests/user_scripts/several_kernels.py -o "$OUT/several.gpuviz" -- 70 > "$OUT/run_several.log" 2>&1
echo "several_kernels rc=$?"; tail -8 "$OUT/run_several.log"
# faulthandler prints every thread's stack if the run outlives its limit (the mid-session run hung ~30 s after its summary)
GPUVIZ_TEST_GPU=1 timeout -s ABRT 480 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2; grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20; grep -A30 "most recent call first" "$OUT/test_gpu.log" | head -60
