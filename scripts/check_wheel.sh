#!/usr/bin/env bash
# The wheel as a Python user gets it: build the sdist and the wheel (from the sdist, in an isolated build
# environment, as pip, pipx and uv do), install the wheel into a NEW virtual environment outside the checkout, and
# from another folder run the installed command: --version, lessons --list (every bundled lesson), export of a
# preset to PNG and CSV, train --steps 5, inspect of the model it trained, and --self-test offscreen.
#
#   scripts/check_wheel.sh          # prints the wheel's size and file count and the clean-install time
#   KEEP=1 scripts/check_wheel.sh   # keep the scratch folder (its path is printed)
#   TORCH_INDEX=https://download.pytorch.org/whl/cpu scripts/check_wheel.sh   # the pipx route exactly as the README
#
# It also installs the wheel as the README's pipx route does and fails when that venv is 2 GB or more.
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

# the pipx route of the README: `pipx install --pip-args="--extra-index-url <torch's CPU wheel index>" .` must give
# a venv under 2 GB (torch's CUDA build made it 5.1-6 GB). With TORCH_INDEX (that CPU index) it runs as the README
# writes it; without (the default: CI has no network but its package mirrors), pip's own indexes are used with torch
# pinned to $TORCH, as the venv above is (this project's machine kind: a local CPU build, beside a CUDA one that an
# unpinned install takes, 6,045 MB measured).
step "the pipx route: its venv under 2 GB"
TORCH_INDEX="${TORCH_INDEX:-}"
"$PYTHON" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q --disable-pip-version-check "pipx>=1.4"
echo "$TORCH" >"$work/torch-pin.txt"
pip_args="${TORCH_INDEX:+--extra-index-url $TORCH_INDEX}"
pip_args="${pip_args:---constraint $work/torch-pin.txt}"
PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx/bin" PIPX_MAN_DIR="$work/pipx/man" \
    "$work/tools/bin/pipx" install ${pip_args:+--pip-args="$pip_args"} "$wheel" >"$work/pipx.log" 2>&1 \
    || { tail -20 "$work/pipx.log"; fail "pipx install"; }
pipx_venv="$work/pipx/venvs/attention-playground"
pipx_mb=$(du -sm "$pipx_venv" | cut -f1)
pipx_torch=$("$pipx_venv/bin/python" -c "import torch; print(torch.__version__, 'cuda' if torch.version.cuda else 'cpu')")
echo "check_wheel: pipx route: venv $pipx_mb MB (limit 2048), torch $pipx_torch"
[ "$pipx_mb" -lt 2048 ] || fail "the pipx venv is $pipx_mb MB, over 2 GB (torch $pipx_torch)"
"$work/pipx/bin/attention-playground" --version >/dev/null || fail "pipx's attention-playground does not run"

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
