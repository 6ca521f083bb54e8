#!/bin/bash
# Last GPU call of the fourth session (2026-12-01), 334 s of device time left: the GPU tests of tuple arguments,
# views and in-place kernels on the tuple write-back fix, beside the re-recording of the shipped mandelbrot traces;
# then the two corpus modules no earlier call finished (test_atomics, test_math: 14 shards by kernel).
#   bash bench/results/device_call_25.sh        (repository root; results under $OUT)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
cp -r assets/recordings /tmp/rec
( timeout 170 python3 -m gpuviz.timing.record_assets --out /tmp/rec --only mandelbrot > "$OUT/record.log" 2>&1
  echo "record rc=$?" >> "$OUT/record.log" ) &
rec=$!
s=$(date +%s)
GPUVIZ_TEST_GPU=1 timeout -s ABRT 65 python3 -X faulthandler -m pytest -q -p no:cacheprovider -n 6 tests/test_gpu.py -k "tuple or front_end_views or in_place" > "$OUT/test_gpu.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - s )) s"; grep -E "passed|failed" "$OUT/test_gpu.log" | tail -1; grep -E "^(FAILED|ERROR)" "$OUT/test_gpu.log" | head
s=$(date +%s)
for i in $(seq 0 13); do
  timeout 110 nice -n 10 python3 bench/corpus.py --backend gpu --only test_atomics test_math --shard $i/14 --details /tmp/am$i.json > /tmp/am$i.txt 2>&1 &
done
wait
echo "corpus parts done in $(( $(date +%s) - s )) s"; ls /tmp/am*.json | wc -l
python3 bench/corpus.py --backend gpu --merge /tmp/am*.json --list wrong,crashed,hung,refused,"outputs only" > "$OUT/corpus_gpu_atomics_math.txt" 2>&1
head -14 "$OUT/corpus_gpu_atomics_math.txt"
cat "$OUT/record.log" | tail -4
cp /tmp/rec/mandelbrot.gpuviz /tmp/rec/mandelbrot_waves.gpuviz /tmp/rec/index.json "$OUT/" 2>/dev/null
