#!/usr/bin/env bash
# numba-cuda's own test kernels (tests/data/numba_cuda_corpus.npz) on gpuviz's GPU backend: numba-cuda on the
# real GPU, no simulator, each launch's outputs and per-thread events compared with the simulator's recording
# stored in the corpus; then the same corpus on the CPU executor, for the same counts side by side.
#
#   bash bench/corpus_gpu.sh            (from the repository root; results under $OUT, else bench/results/corpus_gpu)
#
# The GPU run is split into SHARDS processes (kernels i, i+SHARDS, ... of the sorted list; numba's compiles are CPU-bound),
# each under a time limit, then merged. Environment: PYTHON (default python3), SHARDS (4), SHARD_TIMEOUT_S (480).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/corpus_gpu}"
PYTHON="${PYTHON:-python3}"
SHARDS="${SHARDS:-4}"
SHARD_TIMEOUT_S="${SHARD_TIMEOUT_S:-480}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset NUMBA_ENABLE_CUDASIM

commit="$(git rev-parse --short HEAD 2>/dev/null || echo 'no git: see the copied tree')"
{
  echo "# bash bench/corpus_gpu.sh  (commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'))"
  "$PYTHON" - <<'EOF'
import platform, numpy, numba
print(f"# python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}", end="")
try:
    import numba_cuda
    print(f", numba-cuda {numba_cuda.__version__}")
except ImportError:
    print(", numba-cuda not installed")
EOF
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# GPU: /'
} > "$OUT/header.txt"

# 1. the GPU backend, in parallel parts
pids=()
for ((i = 0; i < SHARDS; i++)); do
  timeout "$SHARD_TIMEOUT_S" nice -n 10 "$PYTHON" bench/corpus.py --backend gpu --shard "$i/$SHARDS" \
    --details "$OUT/gpu_part$i.json" > "$OUT/gpu_part$i.txt" 2> "$OUT/gpu_part$i.log" &
  pids+=($!)
done
status=0
for ((i = 0; i < SHARDS; i++)); do
  wait "${pids[$i]}" || { echo "part $i/$SHARDS exited with $? (see $OUT/gpu_part$i.log)" >> "$OUT/header.txt"; status=1; }
done
parts=()
for ((i = 0; i < SHARDS; i++)); do
  [ -s "$OUT/gpu_part$i.json" ] && parts+=("$OUT/gpu_part$i.json")
done
{
  cat "$OUT/header.txt"
  echo "## gpuviz --backend gpu (numba-cuda on the GPU) against the simulator's recordings"
  if [ "${#parts[@]}" -gt 0 ]; then
    "$PYTHON" bench/corpus.py --backend gpu --merge "${parts[@]}" --list wrong,crashed,hung,refused
  else
    echo "no part finished: see $OUT/gpu_part*.log"
  fi
} > "$OUT/corpus_gpu.txt" 2>&1

# 2. the CPU executor on the same corpus (same counts, for comparison)
{
  echo "## gpuviz --backend cpu (the CPU executor), same corpus"
  timeout 300 nice -n 10 "$PYTHON" bench/corpus.py --backend cpu --details "$OUT/cpu.json" 2>/dev/null
} > "$OUT/corpus_cpu.txt" 2>&1

cat "$OUT/corpus_gpu.txt" "$OUT/corpus_cpu.txt"
exit $status
