"""Importing the evented base (and so psygnal) leaves ``importlib.metadata`` unloaded, as the launch's first frame
needs nothing else of it, while psygnal still reports its real version; with another thread alive it is a plain
import. Each case in a fresh interpreter: the test process has importlib.metadata loaded already."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "thread":
    threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
import app.common.evented
import psygnal
loaded = "importlib.metadata" in sys.modules
import importlib.metadata
print(json.dumps({"loaded": loaded, "version": psygnal.__version__,
                  "real_after": hasattr(importlib.metadata, "distribution"),
                  "real_version": importlib.metadata.version("psygnal")}))
"""


def probe(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(ROOT), mode], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_psygnal_is_imported_without_importlib_metadata_and_knows_its_version():
    expected = importlib.metadata.version("psygnal")  # the real lookup, in this process
    alone = probe("alone")
    assert alone["loaded"] is False
    assert alone["version"] == expected == alone["real_version"]
    assert alone["real_after"] is True  # the stand-in is gone: a later import gets the real module


def test_with_another_thread_alive_the_import_is_plain():
    threaded = probe("thread")
    assert threaded["loaded"] is True
    assert threaded["version"] == importlib.metadata.version("psygnal")
