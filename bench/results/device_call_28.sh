#!/bin/bash
# First GPU call of the sixth session (2026-12-02), on main with the session's changes (gpuviz/ui, tests, bench: no
# capture code changed since the fifth session's last call): the same commands as device_call_27.sh (the GPU tests,
# tests/test_gpu.py and tests/test_kernels.py on 6 xdist workers, then numba-cuda's whole corpus in 16 shards), run
# through it; the corpus record's first line names device_call_27.sh, the record kept says which call it was.
#   bash bench/results/device_call_28.sh        (repository root; results under $OUT)
exec bash "$(dirname "$0")/device_call_27.sh" "$@"
