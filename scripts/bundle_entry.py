"""Entry point of the PyInstaller bundle (build.spec): ``python -m app`` without the package-relative import.

``app.__main__.main`` runs every command under ``app.common.entry.guarded`` (Ctrl+C: exit 130/143 and one line;
an unexpected error: exit 1, one line and a crash log; never a traceback). If even importing the app fails (a module
the build left out), this file says so in one line, with the traceback in a crash log in the temporary folder,
instead of PyInstaller's "Failed to execute script" and a traceback.
"""

import multiprocessing
import sys


def _import_failed(exc: BaseException) -> int:
    import os
    import tempfile
    import traceback

    path = os.path.join(tempfile.gettempdir(), f"attention-playground-crash-{os.getpid()}.log")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=fh)
        where = f"; details in {path}"
    except OSError:
        where = ""
    print(f"attention-playground: this build cannot start ({type(exc).__name__}: {exc}){where}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    # A no-op unless something starts a process with the "spawn" method; then the frozen child needs it.
    multiprocessing.freeze_support()
    try:
        from app.__main__ import main
    except KeyboardInterrupt:  # Ctrl+C while the bundle was still starting
        print("attention-playground: stopped", file=sys.stderr)
        sys.exit(130)
    except BaseException as exc:  # noqa: BLE001 - the point: no traceback for the user
        sys.exit(_import_failed(exc))
    main()  # ends the process itself (app.common.entry.finish)
