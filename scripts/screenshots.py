"""Re-take the README's screenshots from the real window (run it on a screen, e.g. under Xvfb):

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py docs/screenshots

Every picture is taken after driving the window through its models, the way a learner would get there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def settle(app, seconds: float = 0.3) -> None:  # type: ignore[no-untyped-def]
    end = time.time() + seconds
    while time.time() < end:
        app.processEvents()
        time.sleep(0.01)


def playground(window, app, out: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    m, written = window.playground, []

    def shot(name: str) -> None:
        settle(app)
        path = out / f"{name}.png"
        window.grab().save(str(path))
        written.append(path)

    window.load_preset("it-animal-street")
    window.pipeline.heatmaps["weights"].cellClicked.emit(0, 1)
    shot("playground-qkv")
    window.load_preset("cat-sat-mat")
    shot("playground-projection")
    window.edits.set_cell("X", 0, 0, 3.0)  # an edit with a pinned cell: story, maps and explanation follow
    m.pin("weights", 0, 1)
    shot("playground-edited-pinned")
    window.edits.apply("Mask: causal", lambda m: m.set_mask("causal"))
    m.pin("masked", 0, 2)
    shot("playground-mask")
    window.load_preset("lesson-random-4x8")
    window.edits.apply("2 heads", lambda m: m.set_heads(2))
    window.view_tabs.setCurrentWidget(window.multihead)
    settle(app)
    window.multihead.head_maps[1].cellClicked.emit(2, 1)
    shot("playground-multihead")
    window.view_tabs.setCurrentWidget(window.pipeline)
    window.load_preset("cat-sat-mat")
    window.edits.apply("heads", lambda m: m.set_heads(3))  # refused: the message shows next to the inputs
    shot("playground-error")
    window.set_theme("dark")
    m.unpin()
    shot("playground-dark")
    window.set_theme("light")
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1280x800")
    args = parser.parse_args()
    from PySide6.QtCore import QSettings

    from app.gui import make_application
    from app.main_window import MainWindow

    app = make_application()
    MainWindow.detect_devices = False
    args.out.mkdir(parents=True, exist_ok=True)
    settings = QSettings(str(args.out / ".screenshots.ini"), QSettings.Format.IniFormat)
    from app import create_main_window

    window = create_main_window(settings=settings)
    window.confirm_on_close = False
    w, h = (int(v) for v in args.size.split("x"))
    window.resize(w, h)
    window.show()
    settle(app, 1.0)
    written = playground(window, app, args.out)
    (args.out / ".screenshots.ini").unlink(missing_ok=True)
    for p in written:
        print(p)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
