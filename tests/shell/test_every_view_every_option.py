"""Every Playground view through every option change, nothing reaching the guard.

The crash this stands for: an option changed while a view was hidden, and the view's catch-up on its next showing
(``showEvent``) raised. So after each change every view is shown in turn (Steps, Multi-head, Vectors, 3D with the
fake OpenGL of ``fake_gl``, Flow, Tiles), the changed one first, and nothing may reach ``app.shell.slot_guard``'s
hook (pytest-qt fails the test too on an exception in a Qt callback). Before the fix this test stopped the whole
test process with a segmentation fault at "K/V heads 2" (the Vectors view)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fake_gl
from PySide6.QtWidgets import QApplication

from app.playground.views import registry
from app.shell import slot_guard

Change = tuple[str, Callable[[Any], Any]]

CHANGES: list[Change] = [
    ("Heads 2", lambda m: m.set_heads(2)),
    ("Heads 4", lambda m: m.set_heads(4)),
    ("K/V heads 2", lambda m: m.set_kv_heads(2)),
    ("K/V heads 1", lambda m: m.set_kv_heads(1)),
    ("rotary", lambda m: m.set_rotary(10000.0)),
    ("rotary 2 dims", lambda m: m.set_rotary(100.0, 2)),
    ("ALiBi", lambda m: m.set_alibi(True)),
    ("soft-cap 1", lambda m: m.set_softcap(1.0)),
    ("mask causal", lambda m: m.set_mask("causal")),
    ("mask padding", lambda m: m.set_mask("padding")),
    ("pad key 0", lambda m: m.toggle_padding(0)),
    ("mask custom", lambda m: m.set_mask("custom")),
    ("custom cell", lambda m: m.toggle_custom(0, 1)),
    ("mask sliding", lambda m: m.set_mask("sliding")),
    ("window 2 + 1 sink", lambda m: m.set_window(2, 1)),
    ("Lq 5", lambda m: m.set_dim("Lq", 5)),
    ("d_v 8", lambda m: m.set_dim("d_v", 8)),
    ("d_k 8", lambda m: m.set_dim("d_k", 8)),
    ("K/V heads standard", lambda m: m.set_kv_heads(None)),
    ("Heads 1", lambda m: m.set_heads(1)),
    ("d_k 2", lambda m: m.set_dim("d_k", 2)),
    ("Q, K, V directly", lambda m: m.set_mode("qkv")),
    ("cross-attention", lambda m: m.set_mode("projection", "cross")),
    ("Lk 6", lambda m: m.set_dim("Lk", 6)),
    ("Lq 2", lambda m: m.set_dim("Lq", 2)),
    ("Heads 2 (cross)", lambda m: m.set_heads(2)),
    ("K/V heads 1 (cross)", lambda m: m.set_kv_heads(1)),
    ("ALiBi off", lambda m: m.set_alibi(False)),
    ("soft-cap off", lambda m: m.set_softcap(None)),
    ("rotary off", lambda m: m.set_rotary(None)),
    ("mask none", lambda m: m.set_mask("none")),
    ("self-attention", lambda m: m.set_mode("projection", "self")),
    ("preset", lambda m: m.load_preset("it-animal-street")),
    ("scale 1", lambda m: m.set_scale(1.0)),
    ("Heads 2 again", lambda m: m.set_heads(2)),
    ("K/V heads 1 again", lambda m: m.set_kv_heads(1)),
]


def show(window: Any, widget: Any) -> None:
    window.tab.view_tabs.setCurrentWidget(widget)
    QApplication.processEvents()


def test_every_view_follows_every_option_change(window, monkeypatch):
    fake_gl.install(monkeypatch)  # the 3D view as where OpenGL works (offscreen has none)
    tab = window.tab
    views = [tab.pipeline, *[getattr(tab, v.name) for v in registry.VIEWS]]
    refused: list[str] = []
    window.edits.refused.connect(refused.append)
    before = len(slot_guard.caught)
    for view in views:  # every view built and seen once, as a user who looked at each tab
        show(window, view)
    for n, (text, change) in enumerate(CHANGES):
        shown = n % len(views)  # the change is made while this view is shown (each in turn) ...
        show(window, views[shown])
        window.edits.apply(text, change)
        QApplication.processEvents()
        for view in views[shown + 1:] + views[:shown + 1]:  # ... and every other catches up when shown next
            show(window, view)
        assert slot_guard.caught[before:] == [], f"after {text!r}"
    assert refused == [], refused  # each change is a valid edit: the test drove what it meant to
    assert window.playground.num_heads == 2 and window.playground.kv_heads == 1
