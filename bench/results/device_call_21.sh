#!/bin/bash
# Final GPU check of the session (2026-12-01): issue 16 on a real GPU (an endless kernel under `gpuviz run
# --backend gpu` stopped by the watchdog with its line; a 2G-event launch stopped at the launch), then the GPU tests
# (tests/test_gpu.py, tests/test_kernels.py) beside numba-cuda's corpus on the GPU backend (bench/corpus_gpu.sh).
#   bash bench/results/device_call_21.sh        (repository root; results under $OUT: 7 files)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
cat > /tmp/huge_2g.py <<'PY'
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
ms() { echo $(( $(date +%s%N) / 1000000 )); }
s=$(ms); timeout 120 python3 -m gpuviz run --backend gpu tests/user_scripts/endless_kernel.py -o /tmp/endless.gpuviz > "$OUT/run_endless_gpu.log" 2>&1; rc=$?
echo "endless (gpu): rc=$rc in $(( $(ms) - s )) ms" | tee -a "$OUT/run_endless_gpu.log"; grep -E "has run on the GPU|endless_kernel.py:8|stopped" "$OUT/run_endless_gpu.log" | head -5
s=$(ms); timeout 200 python3 -m gpuviz run --backend gpu /tmp/huge_2g.py -o /tmp/huge.gpuviz > "$OUT/run_huge_gpu.log" 2>&1; rc=$?
echo "huge 2G-event (gpu): rc=$rc in $(( $(ms) - s )) ms" | tee -a "$OUT/run_huge_gpu.log"; grep -E "would|run-untraced|done" "$OUT/run_huge_gpu.log" | head -5
GPUVIZ_TEST_GPU=1 timeout -s ABRT 470 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1 &
tests=$!
OUT=/tmp/corpus_gpu SHARDS=6 SHARD_TIMEOUT_S=380 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$?"
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
head -32 "$OUT/corpus_gpu.txt"
wait $tests; echo "tests rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20
grep -A20 "most recent call first" "$OUT/test_gpu.log" | head -30
