#!/usr/bin/env bash
# CI step: build the PyInstaller bundle and smoke-test it, when the build inputs changed.
#
#   scripts/ci_bundle.sh            # build + smoke test if the last commit (or the working tree) touched an input
#   scripts/ci_bundle.sh --always   # build + smoke test regardless (also: BUNDLE_CI=always)
#   BUNDLE_CI=never scripts/ci_bundle.sh   # skip
#
# CI runs on a fresh clone, so nothing cached survives between runs: the rule is "build when the last commit
# (HEAD~1..HEAD) or uncommitted changes touch a build input". Without a HEAD~1 (first commit, shallow clone) it
# builds. Build inputs: build.spec, pyproject.toml, scripts/{build.sh,bootstrap.sh,bundle_entry.py,smoke_test.py,
# ci_bundle.sh}, app/, attention_core/, resources/.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${BUNDLE_CI:-auto}"
[ "${1:-}" = "--always" ] && mode=always

inputs='^(build\.spec|pyproject\.toml|scripts/(build\.sh|bootstrap\.sh|bundle_entry\.py|smoke_test\.py|ci_bundle\.sh)|app/|attention_core/|resources/)'

case "$mode" in
  never|skip) echo "ci_bundle: BUNDLE_CI=$mode, skipping the bundle build"; exit 0 ;;
  always) reason="always" ;;
  auto)
    if ! git rev-parse --verify -q HEAD~1 >/dev/null 2>&1; then
      reason="no HEAD~1 to compare with"
    else
      changed=$( { git diff --name-only HEAD~1 HEAD; git diff --name-only HEAD; \
                   git ls-files --others --exclude-standard; } | sort -u | grep -E "$inputs" || true)
      if [ -z "$changed" ]; then
        echo "ci_bundle: no build input changed in the last commit; skipping the bundle build"
        exit 0
      fi
      count=$(echo "$changed" | wc -l)
      reason="$count input file(s) changed: $(echo "$changed" | head -5 | tr '\n' ' ')"
    fi ;;
  *) echo "ci_bundle: BUNDLE_CI must be auto, always or never (got $mode)" >&2; exit 2 ;;
esac

echo "ci_bundle: building the bundle ($reason)"
start=$(date +%s)
scripts/build.sh
.venv/bin/python scripts/smoke_test.py --no-timing
echo "ci_bundle: build + smoke test took $(( $(date +%s) - start ))s"
