"""``attention-playground`` / ``python -m app``: no arguments launch the window; subcommands work headless.

Everything runs under ``app.common.entry.guarded``: Ctrl+C and SIGTERM stop a command cleanly (exit 130 / 143), a
refusal exits 2 with its reason, and an unexpected error exits 1 with one line and a crash log, never a traceback.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: this process's arguments) and return its exit code. Called without
    ``argv`` (the console script, ``python -m app``, the bundle) it ends the process itself, with ``os._exit``
    after a stop (``app.common.entry.finish``)."""
    if argv is None:  # a process of its own: Ctrl+C and SIGTERM are ours from the first moment
        from app.common import stopping

        stopping.install()
    from app.common.entry import finish, guarded

    args = sys.argv[1:] if argv is None else argv

    def run() -> int:
        from app.cli import main as cli_main

        return cli_main(args)

    code = guarded(run, args)
    if argv is None:
        finish(code)
    return code


if __name__ == "__main__":
    main()
