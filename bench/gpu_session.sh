#!/usr/bin/env bash
# One GPU session on a machine with an NVIDIA GPU and numba-cuda: the GPU tests, then numba-cuda's test corpus on
# gpuviz's GPU backend in shards, optionally the runaway checks of `gpuviz run --backend gpu`. It replaces the
# one-off device_call_N.sh scripts of earlier sessions (calls 24-28 ran exactly steps `tests corpus` with the
# defaults below).
#
#   bash bench/gpu_session.sh                      (repository root; results under $OUT)
#   STEPS="tests" TESTS="tests/test_gpu.py -k warp" bash bench/gpu_session.sh
#
# Environment (defaults in brackets):
#   STEPS            which steps, in order: tests, corpus, runaway   [tests corpus]
#   OUT              where the results go                             [/tmp/gpuviz_out]
#   PYTHON           the interpreter with gpuviz and numba-cuda       [python3]
#   TESTS            the GPU test files (and pytest arguments)        [tests/test_gpu.py tests/test_kernels.py]
#   TEST_WORKERS     pytest-xdist workers for the tests               [6]
#   TEST_TIMEOUT_S   time limit of the test run (SIGABRT: faulthandler prints where it hung)  [230]
#   SHARDS           corpus processes (kernels i, i+SHARDS, ...; numba's compiles are CPU-bound)  [16]
#   SHARD_TIMEOUT_S  time limit of each corpus shard                   [300]
#   COMMIT           the commit to name in the headers, where the copy's .git is not the tree's  [git HEAD]
#   CORPUS_ARGS      more arguments for each corpus shard, e.g. --round-trip (save, reopen, compare each trace)  []
#
# Results: $OUT/session.txt (the summary), $OUT/gpu_tests.log, $OUT/corpus_gpu.txt (merged counts and the launches
# that were not exact), $OUT/corpus_gpu_parts.tgz (each shard's details and log), $OUT/runaway_gpu.txt. The ones
# kept in the repository are bench/results/gpu_tests.log, corpus_gpu.txt and runaway_gpu.txt (see bench/README.md).
set -u
cd "$(dirname "$0")/.."
STEPS="${STEPS:-tests corpus}"
OUT="${OUT:-/tmp/gpuviz_out}"
PYTHON="${PYTHON:-python3}"
TESTS="${TESTS:-tests/test_gpu.py tests/test_kernels.py}"
TEST_WORKERS="${TEST_WORKERS:-6}"
TEST_TIMEOUT_S="${TEST_TIMEOUT_S:-230}"
SHARDS="${SHARDS:-16}"
SHARD_TIMEOUT_S="${SHARD_TIMEOUT_S:-300}"
mkdir -p "$OUT"
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

commit="${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo 'no git')}"
changed="$(git status --porcelain 2>/dev/null | wc -l)"
[ "$changed" -gt 0 ] && commit="$commit + $changed changed files"
header="# STEPS=\"$STEPS\" SHARDS=$SHARDS TEST_WORKERS=$TEST_WORKERS bash bench/gpu_session.sh  (commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'))"
versions="# $("$PYTHON" -c 'import platform, numpy, numba, numba_cuda; print(f"python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}, numba-cuda {numba_cuda.__version__}")' 2>&1)"
gpu="# GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
printf '%s\n%s\n%s\n' "$header" "$versions" "$gpu" | tee "$OUT/session.txt"
status=0

run_tests() {
  local s=$SECONDS rc
  # shellcheck disable=SC2086  # TESTS is a list of paths and pytest arguments
  GPUVIZ_TEST_GPU=1 timeout -s ABRT "$TEST_TIMEOUT_S" "$PYTHON" -X faulthandler -m pytest -q -p no:cacheprovider \
    -n "$TEST_WORKERS" $TESTS > "$OUT/gpu_tests.log.body" 2>&1
  rc=$?
  { echo "$header"; echo "$versions"; echo "$gpu"; echo "# pytest $TESTS: rc=$rc in $((SECONDS - s)) s"
    cat "$OUT/gpu_tests.log.body"; } > "$OUT/gpu_tests.log"
  rm -f "$OUT/gpu_tests.log.body"
  { echo "## GPU tests ($TESTS, $TEST_WORKERS workers): rc=$rc in $((SECONDS - s)) s"
    grep -E "passed|failed" "$OUT/gpu_tests.log" | tail -1
    grep -E "^(FAILED|ERROR)" "$OUT/gpu_tests.log" | head -20; } | tee -a "$OUT/session.txt"
  [ "$rc" -eq 0 ] || status=1
}

run_corpus() {
  local s=$SECONDS parts=() pids=() i work="$OUT/corpus_gpu_parts"
  mkdir -p "$work"
  for ((i = 0; i < SHARDS; i++)); do
    timeout "$SHARD_TIMEOUT_S" nice -n 10 "$PYTHON" bench/corpus.py --backend gpu --shard "$i/$SHARDS" \
      --details "$work/part$i.json" ${CORPUS_ARGS:-} > "$work/part$i.txt" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < SHARDS; i++)); do
    wait "${pids[$i]}" || { echo "corpus part $i/$SHARDS exited with $? (see part$i.txt)" | tee -a "$OUT/session.txt"; status=1; }
    [ -s "$work/part$i.json" ] && parts+=("$work/part$i.json")
  done
  { echo "$header"; echo "$versions"; echo "$gpu"
    echo "# numba-cuda's corpus on the GPU backend against the simulator's recordings: $SHARDS shards, ${#parts[@]} wrote their results, $((SECONDS - s)) s"
    if [ "${#parts[@]}" -gt 0 ]; then
      "$PYTHON" bench/corpus.py --backend gpu --merge "${parts[@]}" --list wrong,crashed,hung,refused,"outputs only",warned
    else
      echo "no shard finished: see corpus_gpu_parts.tgz"
    fi; } > "$OUT/corpus_gpu.txt" 2>&1
  tar czf "$OUT/corpus_gpu_parts.tgz" -C "$OUT" corpus_gpu_parts && rm -rf "$work"
  { echo "## corpus on the GPU backend ($SHARDS shards, $((SECONDS - s)) s)"; sed -n '5,14p' "$OUT/corpus_gpu.txt"; } | tee -a "$OUT/session.txt"
}

run_runaway() {
  # an endless kernel is stopped by the launch watch after the 10 s watchdog, naming the kernel and its loop
  # (expected: exit 1-3 in ~10 s + start-up, "endless_kernel.py:8:" and "has run on the GPU for 10 s"); a launch
  # that would record 2G events stops the program at the launch ("would record", "--run-untraced")
  local s rc
  cat > "$OUT/huge_2g.py" <<'PY'
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
  { echo "$header"; echo "$versions"; echo "$gpu"; } > "$OUT/runaway_gpu.txt"
  s=$SECONDS
  timeout 120 "$PYTHON" -m gpuviz run --backend gpu tests/user_scripts/endless_kernel.py -o "$OUT/endless.gpuviz" > "$OUT/run_endless.log" 2>&1
  rc=$?
  { echo "endless (gpu): rc=$rc in $((SECONDS - s)) s"; grep -E "has run on the GPU|endless_kernel.py:8|stopped" "$OUT/run_endless.log" | head -5; } >> "$OUT/runaway_gpu.txt"
  s=$SECONDS
  timeout 300 "$PYTHON" -m gpuviz run --backend gpu "$OUT/huge_2g.py" -o "$OUT/huge.gpuviz" > "$OUT/run_huge.log" 2>&1
  rc=$?
  { echo "huge 2G-event (gpu): rc=$rc in $((SECONDS - s)) s"; grep -E "would|run-untraced|done" "$OUT/run_huge.log" | head -5; } >> "$OUT/runaway_gpu.txt"
  rm -f "$OUT/endless.gpuviz" "$OUT/huge.gpuviz"
  { echo "## runaway"; tail -n +4 "$OUT/runaway_gpu.txt"; } | tee -a "$OUT/session.txt"
}

for step in $STEPS; do
  case "$step" in
    tests) run_tests ;;
    corpus) run_corpus ;;
    runaway) run_runaway ;;
    *) echo "gpu_session.sh: unknown step '$step' (tests, corpus, runaway)" >&2; exit 2 ;;
  esac
done
exit $status
