#!/usr/bin/env bash
# Set up (first run only) and launch Attention Playground. Extra arguments go to the app.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh app
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "$#" -eq 0 ]; then
  echo "run.sh: no display found; starting the app on a virtual screen (xvfb-run)" >&2
  exec xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app "$@"
fi
exec .venv/bin/python -m app "$@"
