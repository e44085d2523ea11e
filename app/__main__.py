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
    args = sys.argv[1:] if argv is None else argv

    def run() -> int:
        from app.cli import main as cli_main

        return cli_main(args)

    if argv is not None:  # called in-process (tests): the caller owns the signals
        from app.common.entry import guarded

        return guarded(run, args)
    from app.common import stopping

    try:  # a process of its own: Ctrl+C and SIGTERM are ours from the first moment
        stopping.install()
        from app.common.entry import finish, guarded

        code = guarded(run, args)
    except stopping.Stopped:
        # The signal came before guarded's try (importing the entry, in its first lines): the stop stays pending,
        # and guarded reports it as any other stop (one "stopped" line, 130 / 143) without running the command.
        from app.common.entry import finish, guarded

        code = guarded(run, args)
    finish(code)
    return code


if __name__ == "__main__":
    main()
