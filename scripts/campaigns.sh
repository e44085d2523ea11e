#!/usr/bin/env bash
# The campaigns at their full counts, after ./test.sh (which runs them small: tests/campaign_size.py): the interrupt
# campaign (30 Ctrl+C / SIGTERM per command instead of 6), the close campaign (100 runs + 4 fresh processes instead
# of 16 + 1) and the window monkey (3,000 events instead of 600), on the day's seed (CAMPAIGN_SEED=<n> to replay
# one). Two workers, one file each at a time, the longest first (tests/conftest.py's order): ~1,100 worker-seconds,
# ~10 min on 2 quiet cores.
# Extra arguments go to pytest. .ci/run runs it after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
export QT_QPA_PLATFORM=offscreen CAMPAIGNS=full OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
echo "== campaigns (full counts, seed ${CAMPAIGN_SEED:-$(date +%Y%m%d)})" >&2
.venv/bin/python -m pytest -q -n "${TEST_WORKERS:-2}" --dist loadfile --durations=5 \
  tests/test_interrupts_experiment_to_gui.py tests/shell/test_close_campaign.py tests/test_interrupts.py \
  tests/shell/test_monkey.py "$@"
