#!/usr/bin/env bash
# ShiftViT, step by step: set up and run the main job or the tests.
#
#   bash run.sh main   set up, execute every lesson on the bundled CIFAR-10 sample (quick mode)
#                      into build/lessons/ (notebooks + HTML), render the Manim animations into
#                      build/animations/, and build the website into build/site/ (as `site` does,
#                      from the lessons' committed outputs). It writes only under build/ and .venv/
#   bash run.sh site   set up the virtual environment with the `site` extra, then build the
#                      lessons' website from the notebooks' stored outputs into build/site/
#                      (Sphinx, offline, warnings are errors; website/build.py)
#                      `main` and `site` first refuse a stale Korean edition (build_korean.py --check)
#   bash run.sh test   set up (Chromium too), then run the library, animation, website (in Chromium)
#                      and notebook (nbval) tests
#   bash run.sh test-fast  the inner loop: ruff (lint, and the library's format), then the library
#                      tests not marked slow (no notebooks, no renders, no training runs); sets up
#                      only when $VENV is missing. Extra arguments go to pytest (e.g.
#                      tests/core/test_data.py)
#   bash run.sh test-colab  Colab's default runtime in .venv-colab: its preinstalled packages at
#                      their exact versions (.ci/colab-default-runtime.txt), then this project
#                      installed as lesson 00 does; fails if that changed a preinstalled package,
#                      then runs the library tests and every lesson (nbval)
#   bash run.sh setup  only set up (what `test` needs)
#
# Times on a 2-core CPU, after set-up: main about 12 min, test about 37 min, test-fast about 2 min.
# Set-up on a fresh machine adds about 5 min (apt and pip, measured once on a fresh clone). The times
# come from results/timings.json, which `python scripts/run_lessons.py --measure` writes; a test
# fails when one stated here, in README.md or in a time card is more than 20 % off it.
#
# Set-up: Debian's Pango/Cairo headers for Manim (and, for the tests, Chromium for the website's
# browser test), installed with apt-get when missing; a virtual environment in .venv that sees
# no package installed system-wide; this project in it. apt's and pip's output goes to
# build/setup.log, which an error names.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=${SHIFTVIT_VENV:-.venv}
LOG=build/setup.log  # apt's and pip's full output
# Python's bytecode caches under build/ too, so no __pycache__ appears in the source tree.
export PYTHONPYCACHEPREFIX="$PWD/build/pycache"
EXTRAS=dev,anim,jax,site  # the extras installed into $VENV
WITH_TORCH=1

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "error: need root (or sudo) to run: $*" >&2; exit 1; fi
}

quietly() {
  # Run a set-up command with its output in $LOG; on failure, its last lines and the log's name.
  local what=$1
  shift
  mkdir -p "$(dirname "$LOG")"
  echo "--- $what: $*" >>"$LOG"
  if ! "$@" >>"$LOG" 2>&1; then
    echo "error: $what failed; the last lines of its output (all of it: $LOG):" >&2
    tail -n 15 "$LOG" | sed 's/^/    /' >&2
    exit 1
  fi
}

apt_install() {
  echo "==> installing Debian packages: $* (apt's output: $LOG)"
  quietly "apt-get update" as_root apt-get update -q
  quietly "apt-get install" as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "$@"
}

pip_install() {
  quietly "pip install" "$VENV/bin/python" -m pip install --disable-pip-version-check "$@"
}

setup_system() {
  # Manim renders text with Pango and draws with Cairo; pycairo and ManimPango build against them.
  # $1 = test adds Chromium, which only the tests start.
  local missing=()
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  if ! pkg-config --exists pangocairo 2>/dev/null; then missing+=(libpango1.0-dev libcairo2-dev); fi
  command -v gcc >/dev/null || missing+=(build-essential)
  # pycairo and ManimPango have no Linux wheels: they compile against Python's headers.
  local include
  include=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  [ -f "$include/Python.h" ] || missing+=(python3-dev)
  fc-list 2>/dev/null | grep -qi "DejaVu Sans" || missing+=(fonts-dejavu-core)
  # tests/project/test_site.py drives Debian's headless Chromium (a browser test of the website), and
  # website/check_site.py needs a Korean font to draw the Korean pages: both only for the tests.
  if [ "${1:-}" = test ]; then
    command -v chromium >/dev/null || missing+=(chromium)
    fc-list :lang=ko 2>/dev/null | grep -q . || missing+=(fonts-nanum)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || { echo "error: please install: ${missing[*]}" >&2; exit 1; }
    apt_install "${missing[@]}"
  fi
}

setup_python() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    # It sees no system-wide package: what the host has installed (and its conflicts) stays out.
    if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
      rm -rf "$VENV"
      apt_install python3-venv  # Debian ships venv's pip bootstrap separately
      "$PYTHON" -m venv "$VENV"
    fi
  elif grep -qs "include-system-site-packages = true" "$VENV/pyvenv.cfg"; then
    echo "note: $VENV sees the packages installed system-wide (an older run.sh made it so); pip may" \
      "report their conflicts. Remove $VENV to start clean."
  fi
  echo "==> installing shiftvit_lib with its $EXTRAS extras into $VENV (pip's output: $LOG)"
  pip_install -e ".[$EXTRAS]"
  # setuptools leaves its build metadata beside the source; the installed copy does not read it.
  rm -rf shiftvit_lib.egg-info
  [ "$WITH_TORCH" = 1 ] || return 0
  # PyTorch, the third Keras backend, only in its CPU build: a plain `pip install torch`
  # would pull several GB of CUDA libraries. Where pip finds no CPU wheel (PyPI has none;
  # a local wheel or PyTorch's CPU index has), the PyTorch-backend tests are skipped.
  if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    echo "==> PyTorch's CPU build, if one is available (pip's output: $LOG)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "torch==2.13.0+cpu" \
      >>"$LOG" 2>&1 || echo "note: no PyTorch CPU build available; the PyTorch-backend tests will be skipped"
  fi
}

setup() {
  setup_system "${1:-test}"
  setup_python
}

COLAB_PINS=.ci/colab-default-runtime.txt
# Test tooling Colab does not preinstall; added after the project's install has been checked.
COLAB_TEST_TOOLS=("nbval>=0.11" "hypothesis>=6.100" "pytest-random-order>=1.1")

setup_colab() {
  # A fresh, isolated venv (no system packages) with Colab's packages, as a learner's runtime has them.
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  local pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
  echo "==> Colab's preinstalled packages into $VENV ($COLAB_PINS)"
  "${pip[@]}" install -q -r "$COLAB_PINS"
  "${pip[@]}" freeze --all >"$VENV/freeze-colab.txt"
  echo "==> installing shiftvit_lib as lesson 00 does on Colab (pip install, no extras, no flags)"
  "${pip[@]}" install -q .
  "${pip[@]}" freeze --all >"$VENV/freeze-installed.txt"
  "$VENV/bin/python" .ci/colab_pins.py check "$VENV/freeze-colab.txt" "$VENV/freeze-installed.txt" \
    --step "installing shiftvit_lib"
  echo "    (Colab's packages and the project installed and checked in $SECONDS s since run.sh started)"
  echo "==> test tooling Colab lacks: ${COLAB_TEST_TOOLS[*]}"
  "${pip[@]}" install -q -c "$COLAB_PINS" "${COLAB_TEST_TOOLS[@]}"
  "${pip[@]}" freeze --all >"$VENV/freeze-tools.txt"
  "$VENV/bin/python" .ci/colab_pins.py check "$VENV/freeze-colab.txt" "$VENV/freeze-tools.txt" \
    --step "installing the test tooling"
}

run_colab_tests() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  export PYDEVD_DISABLE_FILE_VALIDATION=1  # Colab's debugpy warns on stderr at every kernel start
  echo "==> the tests on Colab's package set, in $VENV:"
  "$VENV/bin/python" - <<'PY'
import sys
from importlib.metadata import version as v
print(f"    Python {sys.version.split()[0]}, TensorFlow {v('tensorflow')}, Keras {v('keras')}, "
      f"JAX {v('jax')}, NumPy {v('numpy')}, IPython {v('ipython')}")
PY
  # Slow tests ran in the first environment; the tests marked `colab` (a training run, the GPU
  # path's mixed precision/XLA/data-parallel checks on both backends) run here even when slow,
  # and so does every lesson (nbval; lesson 08's SavedModel export among them).
  local seed
  seed=$(random_seed)
  "$VENV/bin/python" -m pytest tests notebooks --nbval-lax --nbval-current-env -m "not slow or colab" \
    --random-order "$seed" -p no:cacheprovider --durations=15 "$@"
}

random_seed() {
  # pytest-random-order's seed, printed first so that an order-dependent failure can be repeated.
  local seed=${SHIFTVIT_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}
  echo "    test order: --random-order-seed=$seed (add it after the command to repeat this order)" >&2
  echo "--random-order-seed=$seed"
}

run_fast_tests() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  echo "==> ruff (lint: library and tests; format: the library)"
  "$VENV/bin/python" -m ruff check shiftvit_lib tests
  "$VENV/bin/python" -m ruff format --check shiftvit_lib
  echo "==> the fast tier: library tests not marked slow (the full suite: bash run.sh test)"
  local seed workers=()
  seed=$(random_seed)
  # Both cores: pytest-xdist's two workers take whole files (a module's fixtures stay in one process).
  # Each worker collects and orders the tests itself, so the random order's seed must be given
  # (random_seed) for both to agree. A venv without xdist: one process. Only the fast tier: the full
  # suite on two workers (2026-11-28, fresh clone, quiet) took 2,171 + 1,256 s of pytest against
  # 2,237 + 1,006 s in one process, as its training runs already use both cores.
  "$VENV/bin/python" -c "import xdist" 2>/dev/null && workers=(-n 2 --dist loadfile)
  # -q hides pytest-random-order's header, so the seed is printed above; a seed given after the
  # command comes later on the line and wins.
  # -p no:nbval: the fast tier runs no notebook, and nbval's import (nbformat, jupyter_client) costs each
  # worker a few seconds.
  "$VENV/bin/python" -m pytest -m "not slow" -q --random-order "$seed" -p no:cacheprovider -p no:nbval \
    --durations=15 "${workers[@]}" "$@"  # testpaths: tests/
}

main_job() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  echo "==> executing the 9 lessons in quick mode into build/lessons/"
  "$VENV/bin/python" scripts/run_lessons.py --out build/lessons
  echo "==> rendering the animations into build/animations/"
  "$VENV/bin/python" animations/render.py --quality low --mp4-dir build/animations --gif-dir build/animations
  echo "==> building the website into build/site/"
  build_site
  cat <<EOF
==> done in $((SECONDS / 60)) min $((SECONDS % 60)) s. Written:
    build/lessons/      the executed lessons: NN_*.ipynb and NN_*.html (open the HTML in a browser);
                        their training runs in build/lessons/notebooks/runs/
    build/animations/   the animations, MP4 and GIF (low quality)
    build/site/         the website: open build/site/index.html. It shows the lessons' committed
                        outputs (notebooks/*.ipynb), not the ones this run produced
    $LOG    apt's and pip's output;  $VENV/  the virtual environment
EOF
}

check_korean() {
  # The Korean edition ships only when it is translated from the current English (as the tests
  # require): a stale, missing or number-changed cell, or a variant the glossary rules out, stops
  # `main` and `site` before anything is set up or published. Standard library only.
  # Before anything is set up: it writes nothing, not even bytecode (build/ stays unmade).
  if ! env -u PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE=1 "$PYTHON" scripts/build_korean.py --check; then
    echo "error: notebooks/ko/ is not in step with the English lessons (above); translate the cells" \
      "named (python scripts/build_korean.py todo), rebuild (python scripts/build_korean.py), then retry" >&2
    exit 1
  fi
}

build_site() {
  # The website of the lessons, from the outputs stored in notebooks/*.ipynb (nothing is run).
  "$VENV/bin/python" website/build.py --out build/site
}

run_tests() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  export SHIFTVIT_REQUIRE_BROWSER=1  # the website's browser test fails, not skips, without Chromium
  export SHIFTVIT_RENDER_ANIMATION=1  # lesson 02 renders its Manim scene (the anim extra is here)
  echo "==> ruff (lint: library, tests, scripts, lessons; format: the library)"
  "$VENV/bin/python" -m ruff check --exclude "$VENV" .
  "$VENV/bin/python" -m ruff format --check shiftvit_lib
  # --random-order: tests in a new order each run (the seed is printed first; repeat a run by adding
  # the --random-order-seed=N it shows); each lesson's cells keep their order (tests/conftest.py).
  # --durations=15: the 15 slowest tests end the report.
  local seed
  seed=$(random_seed)
  "$VENV/bin/python" -m pytest tests notebooks --nbval-lax --nbval-current-env --random-order "$seed" \
    -p no:cacheprovider --durations=15 "$@"
}

case "${1:-}" in
  setup) setup test ;;
  main)
    echo "run.sh main: set-up (about 5 min the first time), then the 9 lessons in quick mode, the animations and the website, about 12 min on a 2-core CPU; all into build/"
    check_korean
    setup main
    main_job ;;
  site)
    check_korean
    EXTRAS=site                  # the build needs neither Manim, JAX, PyTorch nor Chromium
    WITH_TORCH=0
    echo "run.sh site: set-up, then the website from the lessons' committed outputs into build/site/"
    setup_python
    build_site ;;
  test) shift; setup test; run_tests "$@" ;;
  test-fast) shift; [ -x "$VENV/bin/python" ] || setup test; run_fast_tests "$@" ;;
  test-colab)
    shift
    VENV=${SHIFTVIT_VENV:-.venv-colab}
    setup_colab
    run_colab_tests "$@" ;;
  *) echo "usage: bash run.sh {main|site|test|test-fast|test-colab|setup}" >&2; exit 2 ;;
esac
