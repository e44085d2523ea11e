#!/usr/bin/env bash
# Set up (first run only) and run the whole test suite headless, plus ruff.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh test
export QT_QPA_PLATFORM=offscreen
.venv/bin/ruff check .
.venv/bin/python -m pytest -q "$@"
