"""``attention-playground lessons``: Learn mode's lessons from the command line.

- ``lessons --list``: one line per bundled lesson: id, title, steps (tab-separated).
- ``lessons --check FILE…``: exit 0 when every file is valid, else 1 with one ``FILE:LINE: reason`` per problem on
  stderr (the schema, then a dry run of every step on a fresh playground).
- ``lessons --run ID_OR_FILE --answers right|wrong``: drive the lesson in an offscreen window (its Learn panel,
  its undo stack), perform every do step ("show me"), answer every predict step rightly or wrongly, print one
  JSON line per step ``{"step", "kind", "answer", "expected", "correct", "feedback"}``; exit 0 when every step
  behaved (right answers accepted, wrong ones refused with feedback that contains the expected value), else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.shell.main_window import MainWindow

PROG = "attention-playground lessons"
KEYS = ("step", "kind", "answer", "expected", "correct", "feedback")


def add_parser(sub: Any) -> None:
    """The ``lessons`` sub-command (``sub``: the main parser's sub-parsers)."""
    p = sub.add_parser("lessons", help="list, check or run Learn mode's lessons")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--list", action="store_true", help="one line per bundled lesson: id, title, steps")
    g.add_argument("--check", nargs="+", metavar="FILE", help="validate lesson files (exit 1: FILE:LINE: reason)")
    g.add_argument("--run", metavar="ID_OR_FILE", help="drive a lesson in an offscreen window, one JSON line a step")
    p.add_argument("--answers", choices=("right", "wrong"), default=None,
                   help="--run: answer every predict step rightly or wrongly (default right)")


def cmd_lessons(args: argparse.Namespace) -> int:
    from app.learn.model.files import bundled_lessons, find_lesson
    from app.learn.model.schema import LessonFileError
    from app.learn.model.walk import check_file

    if args.answers is not None and args.run is None:  # it was ignored: said instead
        print(f"{PROG}: --answers applies to --run only", file=sys.stderr)
        return 2
    if args.list:
        try:
            lessons = bundled_lessons()
        except LessonFileError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        for lesson in lessons:
            print(f"{lesson.id}\t{lesson.title}\t{len(lesson.steps)} steps")
        return 0
    if args.check:
        problems = [line for f in args.check for line in check_file(f)]
        for line in problems:  # stderr, as every other refusal: stdout stays empty for a script that reads it
            print(line, file=sys.stderr)
        return 1 if problems else 0
    try:
        lesson = find_lesson(args.run)
    except LessonFileError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"{PROG}: --run {args.run}: {exc}", file=sys.stderr)
        return 2
    return run_lesson(lesson, args.answers != "wrong")


def run_lesson(lesson: Any, right: bool, window: MainWindow | None = None, out: Any = None) -> int:
    """Drive ``lesson`` in ``window`` (default: a fresh offscreen window with throw-away settings); print the JSON
    lines to ``out`` (default stdout). 0 when every step behaved."""
    from app.common import stopping

    with stopping.deferred():  # Qt runs the lesson: a stop is acted on between two steps (app.common.stopping)
        return _run_lesson(lesson, right, window, out)


def _run_lesson(lesson: Any, right: bool, window: MainWindow | None, out: Any) -> int:
    from app.common import stopping

    out = out or sys.stdout
    own = window is None
    tmp = None
    if own:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtCore import QSettings, qInstallMessageHandler

        def quiet(_kind: Any, _context: Any, message: str) -> None:  # the offscreen plugin's "does not support …"
            if not message.startswith("This plugin does not support"):
                print(message, file=sys.stderr)

        qInstallMessageHandler(quiet)

        from app import create_main_window
        from app.widgets.application import make_application

        make_application()
        from app.common.outputs import scratch_folder

        tmp = scratch_folder("lessons-")  # removed at exit too: Qt rewrites the settings file when it lets go
        settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
        settings.setValue("learn/offer_dismissed", "true")
        window = create_main_window(settings=settings, confirm_on_close=False, detect_devices=False)
    from app.learn.model.files import MemoryStore
    from app.learn.qt.dock import run_lines

    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()  # a check run must not touch the learner's progress
    window.training.set_speed(None)  # a lesson that trains: as fast as the machine allows
    bad = 0
    try:
        for rec in run_lines(learn, lesson, right):
            stopping.check()
            bad += not rec["behaved"]
            print(json.dumps({k: rec.get(k) for k in KEYS}, ensure_ascii=False, default=str), file=out)
    finally:
        if own:
            window.undo_stack.setClean()
            window.close()
            if tmp is not None:
                from app.common.outputs import remove_scratch

                remove_scratch(tmp)
    if bad:
        print(f"{PROG}: {bad} step(s) of {lesson.id} did not behave", file=sys.stderr)
    return 1 if bad else 0
