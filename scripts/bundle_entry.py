"""Entry point of the PyInstaller bundle (build.spec): ``python -m app`` without the package-relative import."""

import multiprocessing
import sys

from app.__main__ import main

if __name__ == "__main__":
    # A no-op unless something starts a process with the "spawn" method; then the frozen child needs it.
    multiprocessing.freeze_support()
    sys.exit(main())
