#!/bin/bash
# First GPU call of the sixth session (2026-12-02), on main with the session's changes (gpuviz/ui, tests, bench: no
# capture code changed since the fifth session's last call): the GPU tests (tests/test_gpu.py, tests/test_kernels.py;
# 6 xdist workers), then numba-cuda's whole corpus, 16 shards by kernel.
#   bash bench/results/device_call_28.sh        (repository root; results under $OUT)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
s=$(date +%s)
GPUVIZ_TEST_GPU=1 timeout -s ABRT 230 python3 -X faulthandler -m pytest -q -p no:cacheprovider -n 6 tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - s )) s"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20
s=$(date +%s)
for i in $(seq 0 15); do
  timeout 300 nice -n 10 python3 bench/corpus.py --backend gpu --shard $i/16 --details /tmp/g$i.json > /tmp/g$i.txt 2>&1 &
done
wait
echo "corpus parts done in $(( $(date +%s) - s )) s; $(ls /tmp/g*.json | wc -l) of 16 wrote their results"
{ echo "# bash bench/results/device_call_28.sh (commit $(git rev-parse --short HEAD 2>/dev/null || echo "no git"), $(date -u '+%Y-%m-%d %H:%M UTC'))"
  python3 bench/corpus.py --backend gpu --merge /tmp/g*.json --list wrong,crashed,hung,refused,"outputs only",warned; } > "$OUT/corpus_gpu.txt" 2>&1
head -16 "$OUT/corpus_gpu.txt"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp $(cd /tmp && ls g*.json g*.txt)
