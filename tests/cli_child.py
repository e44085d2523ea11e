"""``app.cli.main`` on many argvs in one child process, for the tests of refusals: each exit code and stderr, and
whether torch or Qt got imported by the end (a refusal must come before any work)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import contextlib, io, json, sys
from app.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append({"argv": argv, "code": code, "err": err.getvalue()})
print(json.dumps({"results": results, "torch": "torch" in sys.modules,
                  "qt": any(m.startswith("PySide6") for m in sys.modules)}))
"""


def run_many(argvs: list[list[str]], cwd: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``app.cli.main`` on each argv in one child process; each one's code and stderr, and whether torch or Qt
    got imported on the way (a refusal must come before any work)."""
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argvs)], cwd=cwd, capture_output=True, text=True,
                       timeout=300, env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
