"""One row of ``run_all.py``'s table of budgets and the helpers that judge it, apart from the measuring so that
``model_rows.py`` (the real-model rows) builds the same rows without importing ``run_all`` back."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

HEADER = ("figure", "value", "target", "ratio to baseline", "load", "date", "status")


@dataclass
class Row:
    """One line of the table. ``over``: by how much the figure misses its budget (0.0 when met; a fraction of the
    target: 0.3 is 30 % over), None when nothing was measured. ``checks``: a row with several budgets (a time and
    a ratio) names each with its own ``over``, so the status says which hold; ``over`` is then the largest."""

    figure: str
    value: str
    target: str
    ratio: str = "—"
    load: str = "—"
    date: str = ""
    over: float | None = 0.0
    checks: tuple[tuple[str, float], ...] = ()
    kept_status: str = ""  # a row carried from the last table (its section skipped) keeps the status it had

    @property
    def status(self) -> str:
        if self.kept_status:
            return self.kept_status
        if self.over is None:
            return "—"
        if self.over <= 0.0:
            return "OK"
        if not self.checks:
            return f"missed by {self.over:.0%}"
        missed = [f"{name} by {miss:.0%}" for name, miss in self.checks if miss > 0.0]
        held = [name for name, miss in self.checks if miss <= 0.0]
        return "missed: " + ", ".join(missed) + (f"; held: {', '.join(held)}" if held else "")

    def __post_init__(self) -> None:
        if self.checks:
            self.over = max(miss for _name, miss in self.checks)

    def cells(self) -> tuple[str, ...]:
        return (self.figure, self.value, self.target, self.ratio, self.load, self.date, self.status)


def today() -> str:
    return dt.date.today().isoformat()


def load_now() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def over(value: float, target: float) -> float:
    """How far ``value`` is past ``target`` (an upper bound), as a fraction of it; 0.0 when within."""
    return max(0.0, value / target - 1.0)


def budgets(**misses: float) -> tuple[tuple[str, float], ...]:
    """A row's ``checks`` from its budgets' misses, by name (``median=over(...), ratio=over(...)``)."""
    return tuple(misses.items())
