#!/usr/bin/env bash
# Set up (first run only), then check in order, stopping at the first failure:
#   ruff (lint), mypy (types of attention_core and app/models), lint-imports (architecture contracts), pytest.
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
.venv/bin/python -m pytest -q "$@"
