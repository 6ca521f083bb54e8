#!/bin/bash
# per-SASS-instruction execution counts of the per-warp vector add recorder (ncu source page)
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuviz_out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
timeout 150 $NCU --clock-control none --section SourceCounters --section LaunchStats -f -o "$OUT/src" \
  python3 bench/gpu_profile.py --vector "warp" > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncu.log"
$NCU --import "$OUT/src.ncu-rep" --page source --print-source sass --csv > "$OUT/source.csv" 2> "$OUT/source.err"
echo "export rc=$?"; head -c 300 "$OUT/source.csv"; wc -l "$OUT/source.csv"; head -5 "$OUT/source.err"
rm -f "$OUT/src.ncu-rep"
