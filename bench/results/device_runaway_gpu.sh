#!/bin/bash
# Issue 16 on a real GPU (for the lead's batched GPU run): an endless kernel under `gpuviz run --backend gpu`
# is stopped by the launch watch after the 10 s watchdog (the host waits in the driver; ending the worker
# frees the GPU), naming the kernel and the loop that cannot end; a 2G-event launch stops the program at the
# launch after the counting pass. Expected: endless rc=3 in ~10 s + start-up, stderr has
# "endless_kernel.py:8:" and "has run on the GPU for 10 s"; huge rc=1 with "would record" and "--run-untraced".
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
cat > "$OUT/huge_2g.py" <<'PY'
import numpy as np
from numba import cuda

@cuda.jit
def two_accesses(a, out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(64):
        acc += a[(i + k) % n]
        out[(i + k) % n] = acc

a = np.ones(1024, np.float32)
out = np.zeros(1024, np.float32)
two_accesses[65536, 256](a, out, 1024)
print("done", out[:2])
PY
s=$(date +%s.%N); timeout 120 python3 -m gpuviz run --backend gpu tests/user_scripts/endless_kernel.py -o "$OUT/endless.gpuviz" > "$OUT/run_endless_gpu.log" 2>&1; rc=$?
echo "endless rc=$rc in $(echo "$(date +%s.%N) - $s" | bc) s"; grep -E "has run on the GPU|endless_kernel.py:8|stopped" "$OUT/run_endless_gpu.log" | head -5
s=$(date +%s.%N); timeout 300 python3 -m gpuviz run --backend gpu "$OUT/huge_2g.py" -o "$OUT/huge.gpuviz" > "$OUT/run_huge_gpu.log" 2>&1; rc=$?
echo "huge rc=$rc in $(echo "$(date +%s.%N) - $s" | bc) s"; grep -E "would|run-untraced|done" "$OUT/run_huge_gpu.log" | head -5
