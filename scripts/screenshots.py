"""Re-take the README's screenshots from the real window (run it on a screen, e.g. under Xvfb):

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py docs/screenshots
    xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python scripts/screenshots.py --layouts docs/screenshots

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
    export = out / "playground-export.png"  # through the view's own export, as the context menu does
    window.pipeline.heatmaps["weights"].export(export)
    written.append(export)
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


def training(window, app, out: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    """Train at a watchable speed, scrub, try, ablate, save and load: each picture after the change it shows."""
    import tempfile

    from attention_core.tiny.config import TrainConfig

    written: list[Path] = []
    panel, s = window.training_panel, window.training
    window.tabs.setCurrentWidget(panel)

    def shot(name: str, seconds: float = 0.4) -> None:
        settle(app, seconds)
        path = out / f"{name}.png"
        window.grab().save(str(path))
        written.append(path)

    def run_until(done) -> None:  # type: ignore[no-untyped-def]
        end = time.time() + 120
        while not done() and time.time() < end:
            app.processEvents()
            time.sleep(0.01)

    run_until(lambda: s.run_state == "paused")  # the untrained preview (after the torch warm-up)
    shot("training-start")
    s.set_speed(20.0)
    s.start()
    run_until(lambda: s.history.latest is not None and s.history.latest.step >= 12)
    shot("training-middle", 0.1)
    s.set_speed(None)
    run_until(lambda: s.run_state == "finished")
    shot("training-end")
    s.seek(4)
    panel.tryit.input.setText(" ".join(map(str, s.probe or ())))
    panel.tryit.submit()
    shot("training-scrubbed-tryit")
    s.go_live()
    s.toggle_head(1, 0)
    s.toggle_head(1, 1)
    panel.tabs.setCurrentWidget(panel.ablation)
    shot("training-ablation")
    s.restore_heads()
    with tempfile.TemporaryDirectory() as tmp:
        s.save(Path(tmp) / "model.safetensors")
        s.reset()
        run_until(lambda: s.run_state == "paused")
        s.load(Path(tmp) / "model.safetensors")
        run_until(lambda: s.run_state == "loaded")
        shot("training-loaded")
        (Path(tmp) / "model.history.safetensors").unlink()
        s.load(Path(tmp) / "model.safetensors")
        run_until(lambda: s.run_state == "loaded" and len(s.history) == 2)
        shot("training-loaded-no-history")
    cfg = s.config
    panel.form.set_config(TrainConfig(**{**cfg.to_dict(), "causal": False}))
    s.start(new_run=True)
    run_until(lambda: s.run_state == "finished")
    shot("training-no-causal")
    return written


def presenting(window, app, out: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    """Presentation mode (F11: side panels hidden, larger fonts), one map alone (double-click), and the whole
    pipeline exported as one figure through File > Export pipeline figure's function."""
    from app.playground.qt.exports import export_pipeline_figure

    written: list[Path] = []
    window.load_preset("cat-sat-mat")
    window.edits.apply("Mask: causal", lambda m: m.set_mask("causal"))
    p = window.presenter
    p.set_presenting(True)
    settle(app, 1.0)
    for name, action in (("present-steps", None), ("present-solo-weights", lambda: p.show_alone("steps", "weights"))):
        if action is not None:
            action()
        settle(app, 0.8)
        path = out / f"{name}.png"
        window.grab().save(str(path))
        written.append(path)
    p.set_presenting(False)
    settle(app, 0.5)
    path = out / "pipeline-export.png"
    export_pipeline_figure(path, window.playground)
    written.append(path)
    return written


LAYOUT_SIZES = ("1024x640", "1280x800", "1920x1080")


def layouts(window, app, out: Path, sizes: tuple[str, ...] = LAYOUT_SIZES) -> list[Path]:  # type: ignore[no-untyped-def]
    """Both tabs at each size, light and dark, in their most crowded states: the Playground in cross mode with
    padding and 5 keys, the Training tab after a run without the causal mask (its note shown) with a Try it
    result. Files: ``layout-<size>-<theme>-<tab>.png``."""
    from attention_core.tiny.config import TrainConfig

    written: list[Path] = []
    window.edits.apply("cross", lambda m: m.set_mode("projection", "cross"))
    window.edits.apply("Lk", lambda m: m.set_dim("Lk", 5))
    window.edits.apply("padding", lambda m: m.set_mask("padding"))
    window.edits.apply("pad", lambda m: m.toggle_padding(4))
    panel, s = window.training_panel, window.training
    window.tabs.setCurrentWidget(panel)
    end = time.time() + 120
    while s.run_state != "paused" and time.time() < end:
        settle(app, 0.1)
    panel.form.set_config(TrainConfig(**{**s.config.to_dict(), "causal": False}))
    s.start(new_run=True)
    end = time.time() + 180
    while s.run_state != "finished" and time.time() < end:
        settle(app, 0.1)
    panel.tryit.input.setText(" ".join(map(str, s.probe or ())))
    panel.tryit.submit()
    for size in sizes:
        w, h = (int(v) for v in size.split("x"))
        window.resize(w, h)
        for theme in ("light", "dark"):
            window.set_theme(theme)
            for tab in ("playground", "training"):
                window.tabs.setCurrentIndex(0 if tab == "playground" else window.tabs.indexOf(panel))
                settle(app, 0.6)
                path = out / f"layout-{size}-{theme}-{tab}.png"
                window.grab().save(str(path))
                written.append(path)
                if window.size().width() != w:
                    print(f"warning: asked for {size}, the window is {window.width()}x{window.height()}")
    window.set_theme("light")
    return written


def model_tab(window, app, out: Path, folder: Path, text: str = "") -> list[Path]:  # type: ignore[no-untyped-def]
    """Open a model folder in the Model tab, type a text, hover a token, enlarge a head, then open it in the
    Playground, edit one of its cells and undo: each picture after the change it shows."""
    written: list[Path] = []
    host = window.inspect
    session = host.model

    def shot(name: str) -> None:
        settle(app, 0.5)
        path = out / f"{name}.png"
        window.grab().save(str(path))
        written.append(path)

    def idle() -> None:
        end = time.time() + 120
        while (session.load_state == "loading" or session.tracing) and time.time() < end:
            settle(app, 0.1)

    tab = host.show()
    session.load(folder)
    idle()
    if text:
        tab.text_edit.setText(text)
        tab.trace_button.click()
        idle()
    session.hover(max(0, len(session.trace.tokens) // 2) if session.trace else None)
    shot(f"model-{folder.name}-heads")
    layers, heads = session.shape
    session.select_head(layers - 1, heads - 1)
    tab.views.setCurrentWidget(tab.head_map)
    shot(f"model-{folder.name}-head")
    tab.views.setCurrentWidget(tab.flow)
    shot(f"model-{folder.name}-flow")
    detect_tab(tab, session, shot, idle, app, folder.name)
    tab.open_button.click()
    shot(f"model-{folder.name}-in-playground")
    window.edits.set_cell("Q", 0, 0, 1.5)
    shot(f"model-{folder.name}-in-playground-edited")
    window.undo_stack.undo()
    window.undo_stack.undo()
    shot(f"model-{folder.name}-undone")
    return written


def detect_tab(tab, session, shot, idle, app, name: str) -> None:  # type: ignore[no-untyped-def]
    """The Detect view: the induction detector run, its best head clicked, then that head switched off (the scan
    run with it off, the Heads grid showing it OFF), and every head back on."""
    heads = session.heads

    def wait() -> None:
        end = time.time() + 300
        while heads.busy and time.time() < end:
            settle(app, 0.1)
        idle()

    tab.views.setCurrentWidget(tab.detect)  # the Detect view: its detectors start when shown
    settle(app, 0.2)
    wait()
    heads.set_kind("induction")
    best = heads.detection.scores["induction"].best() if heads.detection is not None else (0, 0)
    session.select_head(*best)
    shot(f"model-{name}-detect")
    heads.toggle(*best)
    wait()
    heads.start_scan()
    wait()
    view = tab.views.currentWidget()
    view.left.setCurrentWidget(view.scan)  # the scan's grid, beside the pattern and the loss curve
    shot(f"model-{name}-detect-head-off")
    view.left.setCurrentIndex(0)
    tab.views.setCurrentWidget(tab.grid)
    shot(f"model-{name}-heads-one-off")
    heads.switch_all_on()
    wait()


def lesson(window, app, out: Path, lesson_id: str, upto: int) -> list[Path]:  # type: ignore[no-untyped-def]
    """Open a bundled lesson in the Learn dock and walk it as a learner would (Show me on do steps, the right answer
    on predict steps) up to step ``upto`` (1-based); one picture there, named learn-<id>.png."""
    from app.learn.model.files import find_lesson

    learn = window.learn
    run = learn.open(find_lesson(lesson_id), 0)
    for i in range(upto - 1):
        settle(app, 0.2)
        if run.kind == "do" and not run.done:
            run.show_me()
            end = time.time() + 120
            while not run.done and time.time() < end:
                settle(app, 0.1)
        elif run.kind == "predict" and not run.revealed:
            run.answer(run.sample_answer(True))
        if i < upto - 2:
            run.next()
    run.next()
    if run.kind == "predict":
        run.answer(run.sample_answer(True))
    settle(app, 1.5)
    path = out / f"learn-{lesson_id}.png"
    window.grab().save(str(path))
    return [path]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1280x800")
    parser.add_argument("--playground-only", action="store_true")
    parser.add_argument("--present", action="store_true",
                        help="only presentation mode (F11, a map alone) and the pipeline figure export")
    parser.add_argument("--layouts", action="store_true",
                        help=f"only the layout sweep: both tabs, light and dark, at {', '.join(LAYOUT_SIZES)}")
    parser.add_argument("--model", type=Path, metavar="FOLDER",
                        help="only the Model tab: open FOLDER, trace --text, open a head in the Playground, undo")
    parser.add_argument("--text", default="", help="with --model: the text to trace")
    parser.add_argument("--dark", action="store_true", help="the dark theme")
    parser.add_argument("--lesson", metavar="ID",
                        help="only this lesson, walked to --lesson-step (Show me, right answers)")
    parser.add_argument("--lesson-step", type=int, default=3)
    args = parser.parse_args()
    from PySide6.QtCore import QSettings

    from app.widgets.application import make_application

    app = make_application()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = QSettings(str(args.out / ".screenshots.ini"), QSettings.Format.IniFormat)
    from app import create_main_window

    window = create_main_window(settings=settings, detect_devices=False, confirm_on_close=False)
    w, h = (int(v) for v in args.size.split("x"))
    window.resize(w, h)
    window.show()
    if args.dark:
        window.set_theme("dark", save=False)
    settle(app, 1.0)
    if args.lesson:
        written = lesson(window, app, args.out, args.lesson, args.lesson_step)
    elif args.model is not None:
        written = model_tab(window, app, args.out, args.model, args.text)
    elif args.layouts:
        written = layouts(window, app, args.out)
    elif args.present:
        written = presenting(window, app, args.out)
    else:
        written = playground(window, app, args.out)
    if not (args.playground_only or args.layouts or args.present or args.lesson) and args.model is None:
        written += training(window, app, args.out)
    (args.out / ".screenshots.ini").unlink(missing_ok=True)
    for p in written:
        print(p)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
