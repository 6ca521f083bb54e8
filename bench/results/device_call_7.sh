#!/bin/bash
# re-record the shipped GPU timing sets with the host's enqueue hidden (the traces stay as they are)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
cp assets/recordings/index.json assets/recordings/mandelbrot_waves.gpuviz "$OUT/"
timeout 420 python3 -m gpuviz.timing.record_assets --out "$OUT" --timings-only --date 2026-11-29 > "$OUT/record.log" 2>&1
echo "rc=$?"; tail -60 "$OUT/record.log"; rm -f "$OUT/mandelbrot_waves.gpuviz"
