#!/usr/bin/env bash
# Build the standalone Attention Playground with PyInstaller, from a clean clone on a fresh Debian/Ubuntu machine.
#
#   scripts/build.sh              -> dist/attention-playground/attention-playground   (onedir, the default)
#   scripts/build.sh --onefile    -> dist/onefile/attention-playground                (one self-extracting file)
#
# It runs scripts/bootstrap.sh build (Debian packages incl. the xcb libraries the bundle copies, .venv, torch==2.13.0,
# the project with its [test,build] extras), then PyInstaller on build.spec, then prints the build time and size.
# Then try it: scripts/smoke_test.py (headless checks of the built executable).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=onedir
for arg in "$@"; do
  case "$arg" in
    --onefile) mode=onefile ;;
    --onedir) mode=onedir ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $arg (use --onefile or --onedir)" >&2; exit 2 ;;
  esac
done

scripts/bootstrap.sh build

# PyInstaller's own needs on Linux, beyond what bootstrap.sh installs: objdump (binutils; also gives the `strip` the
# spec uses on torch's libraries) and the shared libpython it copies into the bundle (Debian's python3 binary is
# static, the library is the libpython3.X package).
if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
  pyver=$(.venv/bin/python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  libdir=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')
  need=()
  command -v objdump >/dev/null 2>&1 && command -v strip >/dev/null 2>&1 || need+=(binutils)
  if [ ! -e "$libdir/libpython$pyver.so.1.0" ] && ! ldconfig -p 2>/dev/null | grep -q "libpython$pyver.so.1.0"; then
    need+=("libpython$pyver")
  fi
  if [ ${#need[@]} -gt 0 ]; then
    echo "build.sh: installing Debian packages: ${need[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

start=$(date +%s)
if [ "$mode" = onefile ]; then
  .venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
    --distpath dist/onefile --workpath build/onefile build.spec -- --onefile
  target=dist/onefile/attention-playground
else
  .venv/bin/pyinstaller --noconfirm --clean --log-level WARN build.spec
  target=dist/attention-playground
fi
seconds=$(( $(date +%s) - start ))

[ -e "$target" ] || { echo "build.sh: PyInstaller finished but $target is missing" >&2; exit 1; }
size_mb=$(du -sm "$target" | cut -f1)
files=$(find "$target" -type f | wc -l)
echo "build.sh: built $mode bundle $target in ${seconds}s: ${size_mb} MB, $files file(s)"
if [ "$mode" = onedir ]; then
  # the oldest glibc it runs on: the highest GLIBC_x.y any bundled library imports (docs/packaging.md quotes it)
  .venv/bin/python scripts/glibc_floor.py "$target" --top 5 | sed 's/^/build.sh: /' || true
  echo "build.sh: run it with $target/attention-playground (or --help); check it with" \
       ".venv/bin/python scripts/smoke_test.py"
else
  echo "build.sh: run it with $target; check it with .venv/bin/python scripts/smoke_test.py --exe $target"
fi
