"""Start the Qt application and show the main window (or run the self-test and exit)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from app.widgets.application import make_application  # noqa: F401 (the name scripts and tests use)


def run(self_test_dir: str | None = None) -> int:
    """Show the window and enter the event loop. With ``self_test_dir`` (may be ""), render every view to PNG
    there, print the paths and exit 0 (1 if any render failed)."""
    import os

    headless = sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if headless and not os.environ.get("QT_QPA_PLATFORM"):
        if self_test_dir is None:
            print("attention-playground: no display found (DISPLAY is not set). Start it with ./run.sh, which uses "
                  "a virtual screen, or set QT_QPA_PLATFORM=offscreen.", file=sys.stderr)
            return 2
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # the self-test renders to files; no screen needed
    app = make_application()
    from app import create_main_window
    from app.widgets.qt_compat import delete_now

    if self_test_dir is not None:  # no background torch imports: closing would wait for them
        from app.shell.main_window import MainWindow
        from app.training.qt.panel import TrainingPanel

        MainWindow.detect_devices = False
        TrainingPanel.warm_up_torch = False
    window = create_main_window()
    window.show()
    if self_test_dir is None:
        code = app.exec()
        delete_now(window, flush=True)  # see qt_compat: deleting it in PySide's exit hook can segfault
        return code
    out = Path(self_test_dir) if self_test_dir else Path(tempfile.mkdtemp(prefix="attention-self-test-"))
    app.processEvents()
    written = window.self_test(out)
    written.append(out / "flow.png")  # the Playground's Flow view (issue 13)
    window.tab.flow.export(written[-1])
    tab = window.tab  # the Vectors tab, and the 3D tab where OpenGL works (elsewhere it shows why not)
    written += tab.vectors.self_test(out)
    tab.view_tabs.setCurrentWidget(tab.surface)
    app.processEvents()
    written += tab.surface.self_test(out)
    tab.view_tabs.setCurrentWidget(tab.pipeline)
    written += window.lab.self_test(out)  # the Lab tab and its plots
    for path in written:
        print(path)
    ok = bool(written) and all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in written)
    window.setWindowModified(False)
    window.close()
    delete_now(window, flush=True)
    return 0 if ok else 1
