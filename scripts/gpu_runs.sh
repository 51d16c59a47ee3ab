#!/usr/bin/env bash
# All of issues 39 and 45's GPU work in ONE call on a bare, offline GPU machine (JAX with CUDA, no
# TensorFlow, no Keras, no internet), from the repository root:
#
#   OUT=$OUT bash scripts/gpu_runs.sh [--profile full|tiny]
#
# 1. the archive decoded once into the array cache ($SHIFTVIT_CACHE) on the CPU;
# 2. `train --preset strong` on the full data (100 epochs), then `--preset seed`, each with the
#    CLI's defaults (mixed_bfloat16 on a GPU, XLA) and `--verbose 2`, each followed by a profile of
#    one epoch (benchmarks/profile_epoch.py: a JAX trace and summary.json);
# 3. if time is left, `train --preset cpu` and a short benchmark (benchmarks/benchmark.py).
# Every stage has a time guard taken from one budget (GPU_BUDGET_S, default 540 s): a stage
# that cannot start in what is left is skipped, and one still running when the budget ends is
# stopped; the log says which. The records (run.json, history.csv, logs, versions) go to
# results/gpu_<device>/ and, packed after every stage, to $OUT/records.tar.gz; the whole log
# goes to $OUT/gpu_log.txt. Only these two files are written under $OUT.
#
# Needs in the git-ignored .devcarry/: the wheels of ../shared/device-wheels/ and
# ../shared/data/cifar10-jpeg.tar.gz. A CPU smoke test (tests/project/test_gpu_runs.py):
#   GPU_RUNS_NO_INSTALL=1 PYTHON=.venv/bin/python OUT=/tmp/x bash scripts/gpu_runs.sh --profile tiny
# (tiny: the `quick` preset for every stage, the bundled sample, --limit 10, one epoch;
# GPU_RUNS_TINY=1 says the same).
case "${1:-} ${2:-}" in
  "--profile tiny") GPU_RUNS_TINY=1 ;;
  "--profile full" | " ") ;;
  *) echo "gpu_runs: usage: bash scripts/gpu_runs.sh [--profile full|tiny]"; exit 2 ;;
esac
if [ -z "${GPU_RUNS_NO_INSTALL:-}" ]; then
  T=$(mktemp -d) && python3 -m pip install -q --no-index --no-deps --target $T .devcarry/*.whl && export PYTHONPATH=$T:$PWD KERAS_BACKEND=jax || { echo "gpu_runs: installing .devcarry/*.whl failed: copy ../shared/device-wheels/*.whl into .devcarry/"; exit 2; }
else
  export PYTHONPATH=$PWD KERAS_BACKEND=${KERAS_BACKEND:-jax}
fi
set -uo pipefail
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3
: "${OUT:?set OUT to the folder whose files come back (the folder the device tool returns)}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu_log.txt") 2>&1

PY=${PYTHON:-python3}
BUDGET=${GPU_BUDGET_S:-540}
RESERVE=15  # seconds kept back for packing the records at the end
export SHIFTVIT_CACHE=${SHIFTVIT_CACHE:-${GPU_RUNS_ROOT:-$PWD}/runs/gpu_cache}

if [ -n "${GPU_RUNS_TINY:-}" ]; then
  DATA=${GPU_RUNS_DATA:-sample}
  TRAIN_ARGS=(--limit 10 --epochs 1)
  declare -A PRESET_OF=([seed]=quick [strong]=quick [cpu]=quick)
  declare -A MIN_S=([bench]=1 [seed]=1 [strong]=1 [cpu]=1 [profile]=1)
  PROFILE_ARGS=(--limit 10 --warmup-steps 1) PROFILE_CAP=$BUDGET  # a busy CPU takes minutes to load JAX
  # Five stages train the same quick model: JAX compiles its step once and reads it back after
  # (on a busy 2-core CPU a tiny training stage took 62 s instead of 121 s, 2026-11-28).
  export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-$SHIFTVIT_CACHE/jax}
  export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
  # quick, as the other stages: its shift-op table has a row the keras-io split cannot run (stage 1's
  # 24 channels), reported as "not run"; seed has 16 blocks to compile, quick 4.
  BENCH_ARGS=(--preset quick --variants xla_mixed --batch-size 4 --steps 1 --warmup-steps 1 --no-save)
else
  DATA=${GPU_RUNS_DATA:-.devcarry/cifar10-jpeg.tar.gz}
  TRAIN_ARGS=()
  declare -A PRESET_OF=([seed]=seed [strong]=strong [cpu]=cpu)
  # The least time a stage needs to finish on an H200 (../shared/gpu-runs/2026-11-26-h200:
  # seed 129 s of training incl. 43 s of compilation, then the test split; strong the same
  # network for 100 epochs at, we expect, about seed's rate; cpu 30 epochs of a smaller model;
  # a profile: the compilation and one epoch).
  declare -A MIN_S=([bench]=40 [seed]=150 [strong]=200 [cpu]=90 [profile]=50)
  PROFILE_ARGS=() PROFILE_CAP=90
  BENCH_ARGS=(--preset seed --variants xla_mixed --batch-size 256 --steps 50 --warmup-steps 5 --no-save)
fi

left() { echo $((BUDGET - SECONDS - RESERVE)); }
say() { echo "[gpu_runs $(date -u +%H:%M:%S) +${SECONDS}s, $(left) s left] $*"; }

if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
else
  GPU_NAME=${GPU_RUNS_DEVICE:-cpu}
fi
DEVICE=$(echo "$GPU_NAME" | tr 'A-Z' 'a-z' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\{1,\}/_/g' -e 's/^_//' -e 's/_$//')
ROOT=${GPU_RUNS_ROOT:-$PWD}  # the test points this at a temporary folder
RECORDS=$ROOT/results/gpu_${DEVICE}${GPU_RUNS_TINY:+_tiny}
RUNS=$ROOT/runs/gpu_${DEVICE}
mkdir -p "$RECORDS" "$RUNS"

pack() {  # the records folder as ONE file under $OUT, replaced atomically
  tar -czf "$OUT/records.tar.gz.part" -C "$(dirname "$RECORDS")" "$(basename "$RECORDS")" \
    && mv -f "$OUT/records.tar.gz.part" "$OUT/records.tar.gz"
}

say "device: $GPU_NAME -> records in $RECORDS; budget ${BUDGET} s"
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "data: $DATA"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "cpu cores: $(nproc)"
  "$PY" -c "import sys, numpy, jax, keras; print('python', sys.version.split()[0], '| numpy', numpy.__version__, '| jax', jax.__version__, '| keras', keras.__version__, '| devices', jax.devices())"
} > "$RECORDS/machine.txt" 2>&1
cat "$RECORDS/machine.txt"
pack

# The archive is decoded on the CPU (JAX kept off the GPU).
say "decoding $DATA into the array cache in the background"
JAX_PLATFORMS=cpu "$PY" -c "import sys; from shiftvit_lib import load_cifar10; print(load_cifar10(sys.argv[1]).summary())" "$DATA" \
  > "$RECORDS/data_load.log" 2>&1 &
LOADER=$!

stage() {  # stage NAME CAP_S LOGFILE COMMAND...: run under the time guard (at most CAP_S), then pack
  local name=$1 cap=$2 log=$3; shift 3
  local budget; budget=$(left)
  [ "$budget" -gt "$cap" ] && budget=$cap
  if [ "$budget" -lt "${MIN_S[$name]:-${MIN_S[profile]}}" ]; then
    say "SKIPPED $name: $budget s left, it needs more"
    echo "skipped: $budget s left of the budget, not enough" > "$RECORDS/${name}_skipped.txt"
    pack; return 0
  fi
  say "START $name (time guard $budget s): $*"
  local start=$SECONDS status=0
  timeout --signal=TERM --kill-after=5 "$budget" "$@" > >(tee "$log") 2>&1 || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    say "STOPPED $name by the time guard after $((SECONDS - start)) s (what it wrote is kept)"
  else
    say "END $name: exit status $status after $((SECONDS - start)) s"
  fi
  pack
}

say "waiting for the array cache"
if wait "$LOADER"; then
  say "data ready: $(head -1 "$RECORDS/data_load.log")"
else
  say "FAILED to load $DATA (see data_load.log); no training"
  pack; exit 1
fi

for name in strong seed cpu; do
  preset=${PRESET_OF[$name]}
  stage "$name" "$BUDGET" "$RECORDS/${name}_train.log" "$PY" -m shiftvit_lib train --preset "$preset" --data "$DATA" \
    --out "$RUNS/$name" --verbose 2 "${TRAIN_ARGS[@]}"
  for file in run.json history.csv; do
    [ -f "$RUNS/$name/$file" ] && cp "$RUNS/$name/$file" "$RECORDS/${name}_$file"
  done
  pack
  [ "$name" = cpu ] || stage "${name}_profile" "$PROFILE_CAP" "$RECORDS/${name}_profile.log" "$PY" benchmarks/profile_epoch.py \
    --preset "$preset" --data "$DATA" --out "$RECORDS/${name}_profile" "${PROFILE_ARGS[@]}"
done
stage bench 90 "$RECORDS/bench.txt" "$PY" benchmarks/benchmark.py "${BENCH_ARGS[@]}"
say "done; records: $RECORDS (packed in \$OUT/records.tar.gz), log: \$OUT/gpu_log.txt"
sleep 1  # let tee write the last lines
