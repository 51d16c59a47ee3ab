#!/usr/bin/env bash
# One piece of the GPU work, run from the repository root on a GPU machine that has JAX with CUDA
# but no TensorFlow and no internet (the project's lent device machine):
#
#   bash scripts/device_run.sh bench              # benchmarks/benchmark.py, seed preset, batch 256
#   bash scripts/device_run.sh train seed         # a full run of a preset: seed, strong, ...
#   bash scripts/device_run.sh compare            # lesson 07's five models, results/attention_vs_shift.json
#
# What it needs, carried next to the checkout (both paths are git-ignored):
#   .devcarry/wheels/*.whl           keras, namex, optree for the machine's Python (../shared/device-wheels/)
#   .devcarry/cifar10-jpeg.tar.gz    the full CIFAR-10 as class-folder JPEGs (../shared/data/)
# Set DATA to use other data (e.g. DATA=sample for a smoke test), EPOCHS to cut a run short,
# LIMIT_S to stop a piece before a per-command time limit (the run resumes when started again
# with the same runs/ folder), and OUT for where the small result files go ($OUT on the device).
set -euo pipefail
cd "$(dirname "$0")/.."

task=${1:?usage: device_run.sh bench|train PRESET|compare}
out=${OUT:-build/device}
mkdir -p "$out"
data=${DATA:-.devcarry/cifar10-jpeg.tar.gz}
limit_s=${LIMIT_S:-540}

if [ -d .devcarry/wheels ] && ! python3 -c "import keras" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .devcarry/wheels/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
export KERAS_BACKEND=${KERAS_BACKEND:-jax} PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

case "$task" in
  bench)
    # (A training run records its own images/s in run.json, the strong recipe's included.)
    python3 benchmarks/benchmark.py --batch-size "${BATCH:-256}" --steps "${STEPS:-50}" --warmup-steps 5 \
      2>&1 | tee "$out/bench_seed.log"
    cp benchmarks/results/*.json benchmarks/README.md "$out/"
    ;;
  train)
    preset=${2:?usage: device_run.sh train PRESET}
    run_dir="runs/${preset}_full"
    epochs=()
    [ -n "${EPOCHS:-}" ] && epochs=(--epochs "$EPOCHS")
    # timeout ends a piece cleanly before the command limit; the next call resumes it.
    status=0
    timeout "$limit_s" python3 -m shiftvit_lib train --preset "$preset" --data "$data" --out "$run_dir" \
      --verbose 2 "${epochs[@]}" 2>&1 | tee -a "$out/${preset}_train.log" || status=$?
    cp "$run_dir/history.csv" "$out/${preset}_history.csv" 2>/dev/null || true
    if [ -f "$run_dir/run.json" ]; then
      cp "$run_dir/run.json" "$out/${preset}_run.json"
      echo "FINISHED: $run_dir/run.json"
    else
      echo "NOT FINISHED (status $status): run the same command again to resume from the last epoch"
    fi
    ;;
  compare)
    quick=()
    [ -n "${QUICK:-}" ] && quick=(--quick)
    epochs=()
    [ -n "${EPOCHS:-}" ] && epochs=(--epochs "$EPOCHS")
    status=0
    timeout "$limit_s" python3 -m shiftvit_lib compare --data "$data" --runs runs/compare \
      --out "$out/attention_vs_shift.json" "${quick[@]}" "${epochs[@]}" 2>&1 | tee -a "$out/compare.log" \
      || status=$?
    [ -f "$out/attention_vs_shift.json" ] && echo "FINISHED" || echo "NOT FINISHED (status $status): run again to resume"
    ;;
  *)
    echo "unknown task $task: use bench, train PRESET or compare" >&2
    exit 2
    ;;
esac
