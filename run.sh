#!/usr/bin/env bash
# ShiftViT, step by step: set up and run the main job or the tests.
#
#   bash run.sh main   set up, execute every lesson on the bundled CIFAR-10 sample (quick mode)
#                      into build/lessons/ (notebooks + HTML), render the Manim animations, and
#                      build the website (as `site` does)
#   bash run.sh site   set up the virtual environment with the `site` extra, then build the
#                      lessons' website from the notebooks' stored outputs into build/site/
#                      (Sphinx, offline, warnings are errors; website/build.py)
#                      `main` and `site` first refuse a stale Korean edition (build_korean.py --check)
#   bash run.sh test   set up, then run the library, animation, website (in Chromium) and notebook
#                      (nbval) tests
#   bash run.sh test-fast  the inner loop: ruff (lint, and the library's format), then the library tests not marked slow (no notebooks,
#                      no renders, no training runs), in under 2 minutes on a 2-core CPU; sets up
#                      only when $VENV is missing. Extra arguments go to pytest (e.g. tests/core/test_data.py)
#   bash run.sh test-colab  Colab's default runtime in .venv-colab: its preinstalled packages at
#                      their exact versions (.ci/colab-default-runtime.txt), then this project
#                      installed as lesson 00 does; fails if that changed a preinstalled package,
#                      then runs the library tests and every lesson (nbval)
#   bash run.sh setup  only set up
#
# Set-up: Debian's pango/cairo headers for Manim and Chromium for the website's browser test
# (installed with apt-get when missing),
# a virtual environment in .venv (it sees packages already installed system-wide, so a
# machine that has TensorFlow does not download it again; SHIFTVIT_ISOLATED=1 makes it
# see none), and this project in it.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=${SHIFTVIT_VENV:-.venv}
EXTRAS=dev,anim,jax,site  # the extras installed into $VENV
WITH_TORCH=1

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "error: need root (or sudo) to run: $*" >&2; exit 1; fi
}

apt_install() {
  echo "==> installing Debian packages: $*"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@"
}

setup_system() {
  # Manim renders text with Pango and draws with Cairo; pycairo and ManimPango build against them.
  local missing=()
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  if ! pkg-config --exists pangocairo 2>/dev/null; then missing+=(libpango1.0-dev libcairo2-dev); fi
  command -v gcc >/dev/null || missing+=(build-essential)
  # pycairo and ManimPango have no Linux wheels: they compile against Python's headers.
  local include
  include=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  [ -f "$include/Python.h" ] || missing+=(python3-dev)
  fc-list 2>/dev/null | grep -qi "DejaVu Sans" || missing+=(fonts-dejavu-core)
  # tests/project/test_site.py drives Debian's headless Chromium (a browser test of the website).
  command -v chromium >/dev/null || missing+=(chromium)
  if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || { echo "error: please install: ${missing[*]}" >&2; exit 1; }
    apt_install "${missing[@]}"
  fi
}

setup_python() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    # SHIFTVIT_ISOLATED=1 ignores system-wide packages (a clean install, as on a fresh machine).
    local site=--system-site-packages
    [ "${SHIFTVIT_ISOLATED:-0}" = 1 ] && site=
    if ! "$PYTHON" -m venv $site "$VENV" 2>/dev/null; then
      rm -rf "$VENV"
      apt_install python3-venv  # Debian ships venv's pip bootstrap separately
      "$PYTHON" -m venv $site "$VENV"
    fi
  fi
  echo "==> installing shiftvit_lib with its $EXTRAS extras into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
  [ "$WITH_TORCH" = 1 ] || return 0
  # PyTorch, the third Keras backend, only in its CPU build: a plain `pip install torch`
  # would pull several GB of CUDA libraries. Where pip finds no CPU wheel (PyPI has none;
  # a local wheel or PyTorch's CPU index has), the PyTorch-backend tests are skipped.
  if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "torch==2.13.0+cpu" \
      >/dev/null 2>&1 || echo "note: no PyTorch CPU build available; the PyTorch-backend tests will be skipped"
  fi
}

setup() {
  setup_system
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
  "$VENV/bin/python" -m pytest tests notebooks --nbval-lax --nbval-current-env -m "not slow or colab" \
    --random-order -p no:cacheprovider "$@"
}

run_fast_tests() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  echo "==> ruff (lint: library and tests; format: the library)"
  "$VENV/bin/python" -m ruff check shiftvit_lib tests
  "$VENV/bin/python" -m ruff format --check shiftvit_lib
  echo "==> the fast tier: library tests not marked slow (the full suite: bash run.sh test)"
  "$VENV/bin/python" -m pytest -m "not slow" -q --random-order -p no:cacheprovider --durations=15 "$@"  # testpaths: tests/
}

main_job() {
  export SHIFTVIT_QUICK=1 TF_CPP_MIN_LOG_LEVEL=3
  "$VENV/bin/python" scripts/run_lessons.py --out build/lessons
  "$VENV/bin/python" animations/render.py --quality low --mp4-dir build/animations --gif-dir build/animations
  build_site
}

check_korean() {
  # The Korean edition ships only when it is translated from the current English (as the tests
  # require): a stale, missing or number-changed cell, or a variant the glossary rules out, stops
  # `main` and `site` before anything is set up or published. Standard library only.
  if ! "$PYTHON" scripts/build_korean.py --check; then
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
  # --random-order: tests in a new order each run (the seed is printed in the header; repeat a run
  # with --random-order-seed=N); each lesson's cells keep their order (tests/conftest.py).
  # --durations=15: the 15 slowest tests end the report.
  "$VENV/bin/python" -m pytest tests notebooks --nbval-lax --nbval-current-env --random-order \
    -p no:cacheprovider --durations=15 "$@"
}

case "${1:-}" in
  setup) setup ;;
  main) check_korean; setup; main_job ;;
  site)
    check_korean
    EXTRAS=site                  # the build needs neither Manim, JAX, PyTorch nor Chromium
    WITH_TORCH=0
    setup_python
    build_site ;;
  test) shift; setup; run_tests "$@" ;;
  test-fast) shift; [ -x "$VENV/bin/python" ] || setup; run_fast_tests "$@" ;;
  test-colab)
    shift
    VENV=${SHIFTVIT_VENV:-.venv-colab}
    setup_colab
    run_colab_tests "$@" ;;
  *) echo "usage: bash run.sh {main|site|test|test-fast|test-colab|setup}" >&2; exit 2 ;;
esac
