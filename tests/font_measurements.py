"""Counting a module's text measurements: its ``QFontMetricsF`` replaced by a subclass that notes every
``horizontalAdvance`` asked for (the Flow canvas and the token strip each measure a label once per text)."""

from __future__ import annotations

from types import ModuleType

import pytest
from PySide6.QtGui import QFontMetricsF


def count_measurements(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[str]:
    """The texts ``module`` measures from now on, in order (the list grows as it measures)."""
    calls: list[str] = []

    class Counting(QFontMetricsF):
        def horizontalAdvance(self, *args):  # type: ignore[no-untyped-def]  # noqa: N802 (Qt API)
            calls.append(str(args[0]))
            return super().horizontalAdvance(*args)

    monkeypatch.setattr(module, "QFontMetricsF", Counting)
    return calls
