#!/usr/bin/env bash
# Set up everything the app and its tests need on a fresh Debian/Ubuntu machine, idempotently:
#   Debian packages Qt needs (offscreen + xcb/Xvfb), a venv in .venv, torch, the project and its test tools.
# Usage: scripts/bootstrap.sh [app|test|build]
# An existing torch in .venv (e.g. your CUDA build) is kept; otherwise torch==2.13.0 is installed
# (a local CPU build on this project's machine kind). Set PYTHON=python3.x to choose the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
purpose="${1:-app}"
PYTHON="${PYTHON:-python3}"

# Qt's runtime libraries. Offscreen (tests, export) needs the first set; a real window adds xcb; Xvfb lets the
# app start on a machine without a display. Fonts: without them every glyph is an empty box.
debs=(libgl1 libegl1 libxcb1 libglib2.0-0 libdbus-1-3 libfontconfig1 libxkbcommon0 fonts-dejavu-core)
if [ "$purpose" != "test" ]; then
  debs+=(libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0
         libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0 libxcb-randr0 libxcb-xfixes0 libxcb-sync1
         libxcb-shm0 libxcb-xinerama0 libx11-xcb1 xvfb xauth)
fi
if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for d in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || missing+=("$d")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  echo "bootstrap: no apt-get here; make sure Qt's libraries (libgl1, libegl1, libxkbcommon0, fonts) are installed" >&2
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)

if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "bootstrap: installing torch==2.13.0 (keep your own CUDA build by installing it into .venv first)" >&2
  "${PIP[@]}" "torch==2.13.0"
fi

extras="test"
[ "$purpose" = "build" ] && extras="test,build"
stamp=".venv/.bootstrap-$(cat pyproject.toml | sha1sum | cut -c1-12)-$extras"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing attention-playground[$extras] into .venv" >&2
  "${PIP[@]}" -e ".[$extras]"
  # our bytecode, written once here: an editable install compiles none of it, and where PYTHONDONTWRITEBYTECODE is
  # set (this project's machine kind) every launch would otherwise compile ~50 modules again (~30 ms)
  .venv/bin/python -m compileall -q app attention_core >/dev/null || true
  touch "$stamp"
fi
