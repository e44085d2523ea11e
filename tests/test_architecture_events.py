"""One way to announce a change, one way to follow the theme, one way to block signals (docs/architecture.md,
"Rules that keep views current"). Each rule reads app/ and lists what breaks it; each is shown to report a planted
violation in a small fake tree.

- A Qt-free model announces only through ``app.common.evented`` (``Evented`` / ``ModelEvents`` / ``event``):
  psygnal is imported nowhere else in app/, no model makes its own event group (``self.events = ...``), and no code
  emits a model's event by hand (``<x>.events.<name>.emit``); every such model's ``status`` carries its text.
- A view follows the theme through ``app.widgets.theme.follow_theme``: no ``set_dark`` / ``apply_theme`` methods
  pushed down by hand, and nobody outside the theme module listens to a ``ThemeController``'s ``changed``.
- Signals are blocked with ``QSignalBlocker`` only: no ``blockSignals(`` call in app/.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVENTED = Path("app/common/evented.py")
THEME = Path("app/widgets/theme.py")
PUSH_METHODS = ("set_dark", "apply_theme")


def _modules(root: Path) -> list[tuple[Path, ast.Module]]:
    return [(p.relative_to(root), ast.parse(p.read_text(encoding="utf-8"), str(p)))
            for p in sorted((root / "app").rglob("*.py"))]


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of an attribute chain ("" past anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def psygnal_outside_the_base(root: Path) -> list[str]:
    """Modules of app/ other than app/common/evented.py that import psygnal (their own SignalGroup or Signal)."""
    out = []
    for path, tree in _modules(root):
        if path == EVENTED:
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            out += [f"{path}:{node.lineno} imports {n}" for n in names if n.split(".")[0] == "psygnal"]
    return out


def hand_emitted_events(root: Path) -> list[str]:
    """``<anything>.events.<name>.emit(...)`` outside the base: a model announcing past ``_announce``."""
    out = []
    for path, tree in _modules(root):
        if path == EVENTED:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "emit":
                chain = _dotted(node.func.value).split(".")
                if len(chain) >= 2 and chain[-2] == "events":
                    out.append(f"{path}:{node.lineno} emits {'.'.join(chain)} by hand")
    return out


def events_made_by_hand(root: Path) -> list[str]:
    """``self.events = ...`` outside the base: a model building its own event group (``Evented`` makes it from the
    ``events: TheirEvents`` declaration)."""
    out = []
    for path, tree in _modules(root):
        if path == EVENTED:
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []
            out += [f"{path}:{node.lineno} makes {_dotted(t)}" for t in targets if _dotted(t) == "self.events"]
    return out


def theme_pushed_by_hand(root: Path) -> list[str]:
    """``set_dark`` / ``apply_theme`` defined or called in app/, or a ``theme.changed`` connected outside the theme
    module: the theme passed down by hand instead of followed (``follow_theme``)."""
    out = []
    for path, tree in _modules(root):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in PUSH_METHODS:
                out.append(f"{path}:{node.lineno} defines {node.name}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in PUSH_METHODS:
                    out.append(f"{path}:{node.lineno} calls {node.func.attr}")
                elif node.func.attr == "connect" and path != THEME and _dotted(node.func.value).endswith(
                        "theme.changed"):
                    out.append(f"{path}:{node.lineno} listens to {_dotted(node.func.value)}")
    return out


def block_signals_calls(root: Path) -> list[str]:
    """``blockSignals(`` anywhere in app/ (``with QSignalBlocker(widget):`` is the one way)."""
    out = []
    for path, tree in _modules(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "blockSignals":
                out.append(f"{path}:{node.lineno} calls blockSignals")
    return out


RULES = (psygnal_outside_the_base, hand_emitted_events, events_made_by_hand, theme_pushed_by_hand,
         block_signals_calls)


# ---------------------------------------------------------------------------------------------- the app keeps them
def test_models_announce_only_through_the_evented_base():
    assert psygnal_outside_the_base(ROOT) == []
    assert hand_emitted_events(ROOT) == []
    assert events_made_by_hand(ROOT) == []


def test_every_evented_model_has_one_status_signature_and_declared_events():
    """Every class of app/ built on ``Evented``: its events a ``ModelEvents`` subclass, ``status`` carrying a str."""
    from app.common.evented import Evented, ModelEvents

    found = []
    for path, tree in _modules(ROOT):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(_dotted(b) == "Evented" for b in node.bases):
                module = importlib.import_module(".".join(path.with_suffix("").parts))
                found.append(getattr(module, node.name))
    assert len(found) >= 10  # the Playground, its concealment and Vectors, Training (+ causality), Experiments,
    for cls in found:  # the Lab, Learn's lesson run, the Model tab's session and its head analysis
        assert issubclass(cls, Evented) and issubclass(cls.Events, ModelEvents) and cls.Events is not ModelEvents
        assert [p.annotation for p in cls.Events.status.signature.parameters.values()] == [str], cls


def test_views_follow_the_theme_one_way():
    assert theme_pushed_by_hand(ROOT) == []


def test_signals_are_blocked_one_way():
    assert block_signals_calls(ROOT) == []


# ---------------------------------------------------------------------------------------------- planted violations
def _fake_tree(tmp_path: Path, source: str) -> Path:
    (tmp_path / "app" / "common").mkdir(parents=True)
    (tmp_path / "app" / "common" / "evented.py").write_text("from psygnal import Signal, SignalGroup\n"
                                                            "def f(self):\n    self.events.changed.emit(1)\n")
    (tmp_path / "app" / "feature.py").write_text(source)
    return tmp_path


def test_a_model_with_its_own_signal_group_is_reported(tmp_path):
    root = _fake_tree(tmp_path, "from psygnal import Signal, SignalGroup\n\n"
                                "class Events(SignalGroup):\n    result = Signal()\n")
    assert psygnal_outside_the_base(root) == ["app/feature.py:1 imports psygnal"]
    assert all(rule(root) == [] for rule in RULES if rule is not psygnal_outside_the_base)


def test_an_event_group_made_by_hand_is_reported(tmp_path):
    root = _fake_tree(tmp_path, "class Model:\n    def __init__(self):\n        self.events = Events()\n")
    assert events_made_by_hand(root) == ["app/feature.py:3 makes self.events"]


def test_an_event_emitted_by_hand_is_reported(tmp_path):
    root = _fake_tree(tmp_path, "class Model:\n    def set(self):\n        self.events.result.emit()\n")
    assert hand_emitted_events(root) == ["app/feature.py:3 emits self.events.result by hand"]


def test_a_theme_pushed_by_hand_is_reported(tmp_path):
    root = _fake_tree(tmp_path, "class Tab:\n"
                                "    def __init__(self, window):\n"
                                "        window.theme.changed.connect(self.set_dark)\n"
                                "    def set_dark(self, dark):\n"
                                "        self.plot.apply_theme(dark)\n")
    assert sorted(theme_pushed_by_hand(root)) == ["app/feature.py:3 listens to window.theme.changed",
                                          "app/feature.py:4 defines set_dark",
                                          "app/feature.py:5 calls apply_theme"]


def test_block_signals_is_reported(tmp_path):
    root = _fake_tree(tmp_path, "def fill(combo):\n    combo.blockSignals(True)\n    combo.clear()\n"
                                "    combo.blockSignals(False)\n")
    assert block_signals_calls(root) == ["app/feature.py:2 calls blockSignals", "app/feature.py:4 calls blockSignals"]
