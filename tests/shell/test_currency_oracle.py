"""The currency oracle: nothing shown may go stale.

A seeded random walk of user actions over every place — cell edits, undo/redo, mask, scale, heads, mode,
dimensions, presets, pinned cells, view and tab switches, lesson steps, answers and "show me", training runs, seeks
and ablations, experiment runs and Lab runs — and, at checkpoints, everything the window shows
(``oracle_harvest.harvest``: every visible text and number) compared with a window freshly given the same state:

- the Playground and the Learn panel: a second window, the lesson resumed from the saved progress (what a restart
  does) and the playground restored from the live one's snapshot (what opening a session does); every few
  checkpoints that window is thrown away and built anew;
- Training, Experiments and Lab: the place's own rebuild, a new tab over the same (Qt-free) model.

Two windows in the same state must show the same things; timings are excluded by rule (``oracle_harvest.TIMING``).
While a lesson covers maps, no visible text may contain a covered number (``covered_numbers``).

Every view is also shown for the first time inside a covered step (built lazily then), in a new window each time,
with ``fake_gl`` standing in for OpenGL so that the 3D view is built as where OpenGL works.

Reproduce a failure: ``ORACLE_SEED=<seed> ORACLE_ACTIONS=<n> pytest tests/shell/test_currency_oracle.py``.
"""

from __future__ import annotations

import os
import random
import re
import time

import fake_gl
import numpy as np
import pytest
from oracle_harvest import difference, harvest
from PySide6.QtCore import QEvent, QSettings
from PySide6.QtWidgets import QApplication, QWidget

from app.learn.model.expr import LessonExprError
from app.learn.model.files import find_lesson
from app.playground.views.registry import VIEWS as REGISTERED
from app.widgets.heatmap.cells import format_value

ACTIONS = int(os.environ.get("ORACLE_ACTIONS", "2000"))
SEED = int(os.environ.get("ORACLE_SEED", "20261125"))
CHECK_EVERY = int(os.environ.get("ORACLE_CHECK_EVERY", "50"))
REBUILD_EVERY = 8  # checkpoints between two brand-new reference windows
LESSONS = ["dot-product", "scaling", "softmax-cat-sat-mat", "masks", "multi-head"]
PRESETS = ["cat-sat-mat", "it-animal-street", "magnitude", "lesson-random-4x8"]
RUNS = {"training": 2, "experiment": 1, "lab": 1}  # the slow actions, at most this many per walk
TINY_TRAIN = dict(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=2, steps=6, train_size=64, test_size=16,
                  train_eval_size=4, eval_every=3)


def settle(n: int = 4) -> None:
    """What the event loop does between two user actions: pending events, then widgets deleted later."""
    for _ in range(n):
        QApplication.processEvents()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def wait_events(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        settle(1)
        time.sleep(0.01)


def make_window(tmp_path, name: str, **options):
    from app import create_main_window

    w = create_main_window(settings=QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat),
                           confirm_on_close=False, **options)
    w.resize(1280, 800)
    w.show()
    settle()
    return w


def close_window(w) -> None:
    w.undo_stack.setClean()
    w.setWindowModified(False)
    w.close()
    w.deleteLater()
    settle()


class Walk:
    """The random user. Each action is a user path (the window's commands, its widgets' signals)."""

    def __init__(self, window, rng: random.Random) -> None:
        self.w, self.rng = window, rng
        self.counts: dict[str, int] = {}
        self.runs = dict(RUNS)

    # ------------------------------------------------------------------ the playground
    def edit(self) -> None:
        m = self.w.playground
        name = self.rng.choice(m.state.matrix_names())
        rows, cols = m.matrices[name].shape
        value = round(self.rng.uniform(-3, 3), self.rng.choice([0, 1, 2]))
        self.w.edits.set_cell(name, self.rng.randrange(rows), self.rng.randrange(cols), value)

    def undo(self) -> None:
        (self.w.undo_action if self.rng.random() < 0.7 else self.w.redo_action).trigger()

    def mask(self) -> None:
        c = self.w.controls.mask_combo
        c.setCurrentIndex(self.rng.randrange(c.count()))

    def scale(self) -> None:
        buttons = [b for b in self.w.controls.scale_buttons.values() if b.isEnabled()]
        if buttons:
            self.rng.choice(buttons).click()

    def heads(self) -> None:
        spin = self.w.controls.heads_spin
        if spin.isEnabled():
            spin.setValue(self.rng.choice(self.w.playground.state.valid_head_counts()))

    def mode(self) -> None:
        self.w.tab.inputs.choose_mode(self.rng.randrange(3))

    def dims(self) -> None:
        spins = [s for s in self.w.dim_spins.values() if s.isEnabled()]
        if spins:
            s = self.rng.choice(spins)
            s.setValue(max(s.minimum(), min(s.maximum(), s.value() + self.rng.choice([-1, 1]))))

    def preset(self) -> None:
        self.w.load_preset(self.rng.choice(PRESETS))

    def pin(self) -> None:
        maps = [hm for hm in self.w.pipeline.heatmaps.values() if hm.isVisible() and hm.values() is not None]
        if maps:
            hm = self.rng.choice(maps)
            rows, cols = np.asarray(hm.values()).shape
            if rows and cols:
                hm.cellClicked.emit(self.rng.randrange(rows), self.rng.randrange(cols))

    def view_tab(self) -> None:
        t = self.w.view_tabs
        t.setCurrentIndex(self.rng.randrange(t.count()))

    def place(self) -> None:
        names = ["Playground"] * 3 + ["Training", "Experiments", "Lab"]
        wanted = self.rng.choice(names)
        tabs = self.w.tabs
        for i in range(tabs.count()):
            if tabs.tabText(i).replace("&", "") == wanted:
                tabs.setCurrentIndex(i)

    # ------------------------------------------------------------------ the lessons
    def lesson(self) -> None:
        learn = self.w.learn
        run = learn.run
        if run is None or self.rng.random() < 0.08:
            learn.open(find_lesson(self.rng.choice(LESSONS)), None if self.rng.random() < 0.5 else 0)
            return
        panel, pick = learn.panel, self.rng.random()
        if run.kind == "predict" and not run.revealed and pick < 0.6:
            try:
                given = run.sample_answer(self.rng.random() < 0.6)
            except LessonExprError:  # the step's quantity does not exist in this state (a learner's mode change)
                given = self.rng.choice(["0", "1", "yes"])
            panel.answer(given)
        elif run.kind == "do" and not run.done and pick < 0.3:
            panel.show_me_button.click()
        elif pick < 0.85:
            panel.next_button.click()
        else:
            panel.back_button.click()

    # ------------------------------------------------------------------ the slow places
    def train(self) -> None:
        from attention_core.tiny.config import TrainConfig

        s = self.w.training
        if s.run_state == "running":
            return
        if self.runs["training"] and self.rng.random() < 0.5:
            self.runs["training"] -= 1
            panel = self.w.training_panel
            panel.form.set_config(TrainConfig(**{**TINY_TRAIN, "causal": self.rng.random() < 0.5}))
            s.start(new_run=True)
            wait_for(lambda: s.run_state in ("finished", "stopped", "error"), 60)
        elif len(s.history):
            s.seek(self.rng.randrange(len(s.history)))
            if self.rng.random() < 0.4:
                cfg = s.model_config  # the shown model's shape (the form may already hold the next run's)
                if cfg is not None:
                    s.toggle_head(self.rng.randrange(cfg.num_layers), self.rng.randrange(cfg.num_heads))

    def experiment(self) -> None:
        e = self.w.experiments.model
        if e.is_running:
            return
        if self.runs["experiment"] and self.rng.random() < 0.5:
            self.runs["experiment"] -= 1
            e.set_preset("causal-vs-bidirectional", steps=20)
            e.start()
            wait_for(lambda: not e.is_running, 120)
        else:  # a refused input, then a valid one
            e.set_cell(0, "steps", self.rng.choice([-5, 0, 30]))

    def lab_run(self) -> None:
        lab = self.w.lab.model
        if lab.is_running:
            return
        if self.runs["lab"] and self.rng.random() < 0.5:
            self.runs["lab"] -= 1
            lab.set_choice(max_n=64, repeat=1, impls=("naive-numpy",), d=8, heads=1)
            lab.start()
            wait_for(lambda: not lab.is_running, 60)
        else:
            try:
                lab.set_choice(d=self.rng.choice([8, 16, 0]))
            except ValueError:
                pass  # refused, as the form would

    ACTIONS = [("edit", edit, 30), ("undo", undo, 14), ("mask", mask, 5), ("scale", scale, 5), ("heads", heads, 5),
               ("mode", mode, 4), ("dims", dims, 4), ("preset", preset, 2), ("pin", pin, 5), ("view", view_tab, 5),
               ("place", place, 4), ("lesson", lesson, 14), ("train", train, 2), ("experiment", experiment, 1),
               ("lab", lab_run, 1)]

    def act(self) -> None:
        name, fn, _ = self.rng.choices(self.ACTIONS, weights=[a[2] for a in self.ACTIONS])[0]
        self.counts[name] = self.counts.get(name, 0) + 1
        fn(self)


def wait_for(done, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while not done() and time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.005)
    assert done(), "a run did not end in time"


# ---------------------------------------------------------------------------------------------- the references
def restore_playground(ref, live) -> None:
    """``ref`` in ``live``'s state: the lesson resumed from the saved progress, then the playground's numbers, the
    pinned cell, the view and the theme."""
    ref.set_theme("dark" if live.theme.dark else "light", save=False)
    run = live.learn.run
    if run is not None:
        from app.learn.model.files import JsonStore

        ref.learn.store = JsonStore(live.learn.store.path) if hasattr(live.learn.store, "path") else live.learn.store
        ref.learn.panel.store = ref.learn.store
        ref.learn.open(run.lesson)  # resumed: the step, the score, the answers as saved
        ref.learn.show()
        ref.learn.dock.setFloating(live.learn.dock.isFloating())  # the same room for the maps
        if live.learn.dock.isFloating():
            ref.learn.dock.setGeometry(live.learn.dock.geometry())
        ref.learn.dock.setVisible(live.learn.dock.isVisible())
        wait_events(0.1)  # the lesson shows its step's view (built on first use): before the live window's view is set
    ref.playground.restore(live.playground.snapshot())
    ref.tabs.setCurrentIndex(live.tabs.currentIndex())
    ref.view_tabs.setCurrentIndex(live.view_tabs.currentIndex())
    settle(2)
    if live.playground.pinned is not None:  # after the views: the pinned cell is the user's choice on this one
        ref.playground.pin(*live.playground.pinned)
    else:
        ref.playground.unpin()
    ref.playground.hover(*(live.playground.hovered or (None,)))  # where the pointer is: the user's, not the state's
    settle(6)


def playground_texts(w):
    skip: list[QWidget] = [w.statusBar()]  # its message is what happened last (an event), not a state
    if w.learn.built and w.learn.panel._refused:  # the answer to a refused move, until the numbers change
        skip.append(w.learn.panel.feedback)
    # the window's refusal lines (objectName "errorLabel") answer the last refused input, until the state changes:
    # that they go is tested where they are made (tests/playground/test_playground_current.py, …)
    skip += [lab for lab in w.findChildren(QWidget, "errorLabel")]
    return harvest(w, skip=skip)


def rebuilt_place(live):
    """A new tab over the same model as the live one's current place (Training, Experiments or Lab), in the live
    one's theme (every view follows the application's theme from its construction)."""
    host = next(h for h in (live.training_host, live.experiments, live.lab)
                if h._tab is not None and live.tabs.currentWidget() is h._tab)
    fresh = host.make_tab()
    fresh.resize(host._tab.size())
    fresh.show()
    wait_events(0.35)
    return host._tab, fresh


KEPT: list[QWidget] = []


def covered_numbers(live) -> tuple[set[str], set[str]]:
    """The numbers a predict step hides now, as the app writes them: (3 decimals and percentages, 2 decimals)."""
    run = live.learn.run
    fine: set[str] = set()
    coarse: set[str] = set()
    if run is None or not run.covered:
        return fine, coarse
    result = live.playground.result
    for name in run.covered:
        values = getattr(result, name, None)
        if values is None:
            continue
        for v in np.asarray(values, float).ravel():
            if np.isfinite(v) and abs(v) > 0.05 and abs(round(v) - v) > 1e-3:  # 0, 1 and integers say nothing
                fine.update({f"{v:.3f}".replace("-", "−"), f"{v:.3f}"})
                coarse.add(format_value(v))
                if name == "weights":
                    fine.update({f"{v:.0%}", f"{v:.1%}"})
    return fine, coarse


NUMBER = re.compile(r"[−-]?\d+\.\d+%?|\d+%")


def leaks(live) -> list[str]:
    """Visible texts that show covered numbers. The covered maps themselves and the learner's input tables aside;
    a heatmap counts when its title names a covered step. A text counts with two numbers of 3 decimals or
    percentages, or three of 2 decimals, among the covered ones, making at least a third of the numbers it holds
    (one coincidence is not a leak)."""
    fine, coarse = covered_numbers(live)
    if not fine:
        return []
    run = live.learn.run
    covered = live.learn.covered_widgets
    skip = [*(covered() if callable(covered) else covered), *live.editors.values()]
    names = [n for n in run.covered if n != "multihead"] + (["head"] if "multihead" in run.covered else [])
    texts = [t for t in harvest(live, skip=skip) if not t.startswith(("heatmap.values", "heatmap.levels"))
             and (not t.startswith("heatmap.numbers") or any(n in t.split(":")[1] for n in names))]
    texts.append(live.statusBar().currentMessage())
    out = []
    for t in texts:
        numbers = NUMBER.findall(t)
        hits3 = sum(n in fine for n in numbers)
        hits2 = sum(n in coarse and n not in fine for n in numbers)
        if (hits3 >= 2 or hits2 >= 3) and 3 * (hits3 + hits2) >= len(numbers):
            out.append(t)
    return out


def check(live, ref, counts: dict[str, int], found: list[str], step: int) -> None:
    wait_events(0.35)  # what the app does a moment later (a throttled redraw) is not stale
    run = live.learn.run
    if run is not None and run.kind == "do" and run.done and live.learn.panel.auto_advance:
        from app.learn.qt.panel import AUTO_ADVANCE_MS

        wait_events(AUTO_ADVANCE_MS / 1000 + 0.2)  # a reached do step moves on by itself: let it
    shown = leaks(live)
    if shown:
        found.append(f"after action {step}: covered numbers are shown: {shown[:3]!r} (covered "
                     f"{live.learn.run.covered})")
    if live.tabs.currentWidget() is live.tab:
        restore_playground(ref, live)
        diff = difference(playground_texts(live), playground_texts(ref))
        if diff:
            found.append(f"after action {step} (Playground/Learn):\n{diff}")
    else:
        tab, fresh = rebuilt_place(live)
        try:
            diff = difference(harvest(tab), harvest(fresh))
            if diff:
                found.append(f"after action {step} ({type(tab).__name__}):\n{diff}")
        finally:
            fresh.hide()  # kept, not deleted: its model still holds its callbacks (a tab lives as long as its window)
            KEPT.append(fresh)


@pytest.mark.slow
def test_every_place_shows_what_a_fresh_window_in_the_same_state_shows(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    live = make_window(tmp_path, "live", preview_untrained=False)
    live.training.set_speed(None)
    ref = make_window(tmp_path, "ref", preview_untrained=False)
    walk = Walk(live, random.Random(SEED))
    found: list[str] = []
    checks = 0
    try:
        for n in range(1, ACTIONS + 1):
            walk.act()
            if n % CHECK_EVERY == 0 or n == ACTIONS:
                checks += 1
                if checks % REBUILD_EVERY == 0:
                    close_window(ref)
                    ref = make_window(tmp_path, "ref")
                check(live, ref, walk.counts, found, n)
                if len(found) >= int(os.environ.get("ORACLE_MAX_FINDINGS", "5")):
                    break
    finally:
        live.training_host.shutdown()
        close_window(ref)
        close_window(live)
        KEPT.clear()
    assert not found, (f"seed {SEED}, actions {walk.counts}:\n" + "\n\n".join(found))
    assert sum(walk.counts.values()) >= min(ACTIONS, 2000) and checks >= ACTIONS // CHECK_EVERY


# ------------------------------------------------------------------------------ first showings inside a cover
COVERED_STEPS = [("dot-product", 2), ("multi-head", 3)]
"""Predict steps that cover maps: ① – ⑤, then the Multi-head view with ④ and ⑤."""
VIEWS = ["Multi-head", "Vectors", "3D", "Flow", "Steps"]
"""Every Playground view, in an order that shows each lazily built one first while the Steps view was left."""
LAZY_NAMES = {v.title: v.name for v in REGISTERED}


def open_view(w, title: str) -> None:
    """What a click on the view's tab does."""
    t = w.view_tabs
    t.setCurrentIndex(next(i for i in range(t.count()) if t.tabText(i) == title))


@pytest.mark.slow
def test_every_view_shown_first_inside_a_covered_step_shows_nothing_covered(qtbot, tmp_path, monkeypatch):
    """Each view is built when first shown; a lesson's question may be up by then. Each view of a new window is
    shown for the first time inside a covered step, and must (1) leave the lesson's cover on, (2) show none of the
    covered numbers, (3) show what the same view of a window that built it before the lesson shows."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    fake_gl.install(monkeypatch)  # the 3D view as where OpenGL works (offscreen has none): its first showing
    ref = make_window(tmp_path, "ref")
    for title in VIEWS:  # the reference's views: built and shown before any lesson covers anything
        open_view(ref, title)
        settle()
    assert all(ref.tab.is_built(name) for name in ("multihead", "vectors", "three_d", "flow"))
    found: list[str] = []
    try:
        for lesson, index in COVERED_STEPS:
            live = make_window(tmp_path, f"live-{lesson}")
            try:
                live.learn.open(find_lesson(lesson), index)
                settle()
                covered = set(live.learn.run.covered)
                assert covered and live.learn.run.kind == "predict"
                for title in VIEWS:
                    first = title != "Steps" and not live.tab.is_built(LAZY_NAMES[title])
                    open_view(live, title)
                    wait_events(0.35)
                    where = f"{lesson} step {index + 1}, {title} view{' shown first' if first else ''}"
                    if set(live.tab.concealment.hidden) != covered:
                        found.append(f"{where}: the cover was lifted ({sorted(live.tab.concealment.hidden)} hidden, "
                                     f"the step covers {sorted(covered)})")
                    shown = leaks(live)
                    if shown:
                        found.append(f"{where}: covered numbers are shown: {shown[:3]!r}")
                    restore_playground(ref, live)
                    diff = difference(playground_texts(live), playground_texts(ref))
                    if diff:
                        found.append(f"{where}, against a window that built it before the lesson:\n{diff}")
            finally:
                close_window(live)
    finally:
        close_window(ref)
    assert not found, "\n\n".join(found)
