#!/usr/bin/env bash
# The wheel as a Python user gets it: build the sdist and the wheel (from the sdist, in an isolated build
# environment, as pip, pipx and uv do), install the wheel into a NEW virtual environment outside the checkout, and
# from another folder run the installed command: --version, lessons --list (every bundled lesson), export of a
# preset to PNG and CSV, train --steps 5, inspect of the model it trained, and --self-test offscreen.
#
#   scripts/check_wheel.sh          # prints the wheel's size and file count and the clean-install time
#   KEEP=1 scripts/check_wheel.sh   # keep the scratch folder (its path is printed)
#
# torch is installed first, pinned as the bootstrap pins it (torch==2.13.0: a local CPU build on this project's
# machine kind); the wheel's own range (torch>=2.2) then installs nothing more. Without that pin pip would take a
# CUDA build of several GB.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
TORCH="${TORCH:-torch==2.13.0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/check-wheel-XXXXXX")"
cleanup() { if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "check_wheel: kept $work"; fi; }
trap cleanup EXIT
fail() { echo "check_wheel: FAIL: $*" >&2; exit 1; }
step() { echo "== check_wheel: $*" >&2; }

# build (the venv's `build` front end; the backend comes from PyPI into an isolated environment)
[ -x .venv/bin/python ] || scripts/bootstrap.sh test
.venv/bin/python -c "import build" 2>/dev/null || .venv/bin/python -m pip install -q --disable-pip-version-check "build>=1.2,<2"
step "build sdist + wheel"
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "build"; }
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)

# the wheel holds every file of resources/, inside the app
.venv/bin/python - "$wheel" "$ROOT/resources" <<'EOF'
import sys, zipfile
from pathlib import Path
wheel, res = Path(sys.argv[1]), Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
want = [p.relative_to(res).as_posix() for p in res.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
missing = [f for f in want if f"app/resources/{f}" not in names]
if missing:
    sys.exit(f"check_wheel: FAIL: not in the wheel: {missing}")
print(f"check_wheel: wheel {wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB, {len(names)} files "
      f"({len(want)} resource files, all present)")
EOF
echo "check_wheel: sdist $(basename "$sdist"): $(du -k "$sdist" | cut -f1) KiB"

# a new virtual environment, outside the checkout
step "clean install into a new venv"
seconds() { "$PYTHON" -c "print(f'{$2 - $1:.1f}')"; }
start=$(date +%s.%N)
"$PYTHON" -m venv "$work/venv"
PIP=("$work/venv/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" "$TORCH"
mid=$(date +%s.%N)
"${PIP[@]}" "$wheel"
end=$(date +%s.%N)
echo "check_wheel: clean install $(seconds "$start" "$end") s: venv + $TORCH $(seconds "$start" "$mid") s, the wheel" \
     "and its other dependencies $(seconds "$mid" "$end") s (pip's cache as it was); venv $(du -sm "$work/venv" | cut -f1) MB"

exe="$work/venv/bin/attention-playground"
[ -x "$exe" ] || fail "no attention-playground script in the venv"
[ -x "$work/venv/bin/attention-playground-gui" ] || fail "no attention-playground-gui script in the venv"
elsewhere="$work/elsewhere"
mkdir -p "$elsewhere"
cd "$elsewhere"
export QT_QPA_PLATFORM=offscreen PYTHONPATH=""  # nothing of the checkout on the path
location=$("$work/venv/bin/python" -c "import app, app.common.resources as r; print(app.__file__); print(r.resource_root())")
case "$location" in "$ROOT"*|*$'\n'"$ROOT"*) fail "the app came from the checkout: $location" ;; esac
echo "check_wheel: app and resources from $(echo "$location" | tr '\n' ' ')"

step "--version"
version=$("$exe" --version)
[[ "$version" == "attention-playground "* ]] || fail "--version printed '$version'"
echo "check_wheel: $version"

step "lessons --list"
"$exe" lessons --list >lessons.txt
listed=$(wc -l <lessons.txt)
bundled=$(ls "$ROOT"/resources/lessons/*.json | wc -l)
[ "$listed" -eq "$bundled" ] && [ "$bundled" -gt 0 ] || fail "lessons --list listed $listed of $bundled lessons"
echo "check_wheel: $listed lessons listed"

step "export a preset to PNG and CSV"
"$exe" export --preset cat-sat-mat --view weights --out weights.png >/dev/null
"$exe" export --preset cat-sat-mat --view weights --out weights.csv >/dev/null
head -c 8 weights.png | od -An -tx1 | grep -q "89 50 4e 47" || fail "weights.png is not a PNG"
grep -q "cat" weights.csv || fail "weights.csv names no token: $(head -3 weights.csv)"
echo "check_wheel: weights.png $(du -k weights.png | cut -f1) KiB, weights.csv $(wc -l <weights.csv) lines"

step "train --steps 5"
"$exe" train --steps 5 --out run >train.json 2>train.log || { tail -5 train.log; fail "train"; }
[ -f run/model.safetensors ] || fail "train wrote no run/model.safetensors"

step "inspect the trained model"
"$exe" inspect --model run --text "3 5 7 9 SEP" --out grid.png >inspect.json
"$exe" inspect --model run --text "3 5 7 9 SEP" --out grid.json >/dev/null
head -c 8 grid.png | od -An -tx1 | grep -q "89 50 4e 47" || fail "inspect's grid.png is not a PNG"
grep -q '"heads"' grid.json || fail "inspect's grid.json holds no heads: $(head -c 200 grid.json)"
echo "check_wheel: inspect: $(cut -c1-120 inspect.json)"

step "--self-test offscreen"
"$exe" --self-test shots >selftest.txt
pngs=$(find shots -name '*.png' | wc -l)
[ "$pngs" -gt 0 ] || fail "--self-test wrote no PNG ($(tail -3 selftest.txt))"
echo "check_wheel: --self-test rendered $pngs PNGs"
echo "check_wheel: OK"
