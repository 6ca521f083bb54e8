#!/bin/bash
# Final GPU call of the fourth session (2026-12-01), on main with every capture change of the session: the GPU
# tests (tests/test_gpu.py, tests/test_kernels.py; 6 xdist workers), then numba-cuda's corpus on the GPU backend
# (bench/corpus_gpu.sh, 16 shards by kernel) beside the re-recording of the shipped mandelbrot traces (the kernel
# changed in the third session: STORE_EVERY=4), which go back under $OUT with their index.
#   bash bench/results/device_call_24.sh        (repository root; results under $OUT: 8 files)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
python3 -c 'import numpy, numba, numba_cuda; print("numpy", numpy.__version__, "numba", numba.__version__, "numba-cuda", numba_cuda.__version__)'
s=$(date +%s)
GPUVIZ_TEST_GPU=1 timeout -s ABRT 220 python3 -X faulthandler -m pytest -q -p no:cacheprovider -n 6 tests/test_gpu.py tests/test_kernels.py > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - s )) s"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -2
grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head -20
cp -r assets/recordings /tmp/rec
( s=$(date +%s); nice -n 5 python3 -m gpuviz.timing.record_assets --out /tmp/rec --only mandelbrot > /tmp/record.log 2>&1
  echo "record_assets --only mandelbrot rc=$? in $(( $(date +%s) - s )) s" >> /tmp/record.log ) &
rec=$!
s=$(date +%s)
OUT=/tmp/corpus_gpu SHARDS=16 SHARD_TIMEOUT_S=270 bash bench/corpus_gpu.sh > /tmp/corpus_gpu_stdout.txt 2>&1
echo "corpus rc=$? in $(( $(date +%s) - s )) s"
wait $rec; cat /tmp/record.log
cp /tmp/corpus_gpu/corpus_gpu.txt /tmp/corpus_gpu/corpus_cpu.txt /tmp/record.log "$OUT/"
cp /tmp/rec/mandelbrot.gpuviz /tmp/rec/mandelbrot_waves.gpuviz /tmp/rec/index.json "$OUT/"
tar czf "$OUT/corpus_gpu_parts.tgz" -C /tmp corpus_gpu
head -30 "$OUT/corpus_gpu.txt"
