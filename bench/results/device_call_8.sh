#!/bin/bash
# re-record every shipped GPU trace and both timing sets with the final recorder and the held timing measure
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
timeout 420 python3 -m gpuviz.timing.record_assets --out "$OUT" --date 2026-11-29 > "$OUT/record.log" 2>&1
echo "rc=$?"; grep -v "^[0-9]" "$OUT/record.log" | grep -v "Warning\|warn(" | head -40; du -sh "$OUT"
