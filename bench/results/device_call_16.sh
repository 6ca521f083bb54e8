#!/bin/bash
# Mid-session GPU check (2026-12-01): GPU tests on main after the schema-2 trace file, the executor fixes and the
# runner's watchdog; `gpuviz run --backend gpu` of a program that imports numba.cuda before gpuviz (numpy 2.5 shim).
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__)'
cat > /tmp/numba_first.py <<'PY'
from numba import cuda
import numpy as np
@cuda.jit
def bump(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1
a = cuda.to_device(np.zeros(100, np.float32))
bump[4, 32](a)
print("sum", a.copy_to_host().sum())
PY
timeout 120 python3 -m gpuviz run /tmp/numba_first.py --backend gpu -o "$OUT/numba_first.gpuviz" > "$OUT/run_numba_first.log" 2>&1
echo "run rc=$?"; tail -5 "$OUT/run_numba_first.log"
timeout 60 python3 -m gpuviz info "$OUT/numba_first.gpuviz" 2>&1 | head -12
GPUVIZ_TEST_GPU=1 timeout 420 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py -x > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$?"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2; grep -E "^(FAILED|ERROR)|Error|assert" -A3 "$OUT/test_gpu.log" | head -40
