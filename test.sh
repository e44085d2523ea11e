#!/usr/bin/env bash
# Set up (first run only), then check in order, stopping at the first failure:
#   ruff (lint), mypy (types of attention_core and of app's models, widgets, shell and qt/ parts), lint-imports
#   (architecture contracts), pytest (the whole suite on two workers; ./test.sh tests/<folder> or -k runs that part
#   in one process).
# Configuration of all four lives in pyproject.toml. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh test
export QT_QPA_PLATFORM=offscreen
echo "== ruff" >&2
.venv/bin/ruff check .
echo "== mypy" >&2
.venv/bin/mypy
echo "== lint-imports" >&2
.venv/bin/lint-imports
echo "== pytest" >&2
# the whole suite on two workers (pytest-xdist; TEST_WORKERS=0 for one process); a chosen part in this process
if [ $# -eq 0 ] && [ "${TEST_WORKERS:-2}" != "0" ]; then
  set -- -n "${TEST_WORKERS:-2}" --dist loadfile --durations=15
  # one torch/BLAS thread per worker: two workers that each start two spinning threads on two cores oversubscribe
  # them (tests/core + tests/pretrained: 131 s wall with the default, 86 s with one thread each, quiet machine)
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
fi
.venv/bin/python -m pytest -q "$@"
