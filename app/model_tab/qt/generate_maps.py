"""What the Generate view draws besides its heatmaps: the next-token distribution before and after sampling's cut
(two bars a token), and the text with each new token on a background coloured by its probability. Drawing only:
the numbers come from ``app.model_tab.model.generate_views``."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QTextBrowser, QWidget

from app.widgets.theme import LIGHT, ThemeColors, follow_theme

ROW_H = 17
"""One token's row: two bars of 6 px and their gap (the font's height decides the rest)."""


def probability_colors(dark: bool) -> list[str]:
    """Ten backgrounds from unlikely (orange) to certain (blue), pale enough for text in either theme."""
    lo, hi = (QColor("#d95f02"), QColor("#1b6ac9")) if not dark else (QColor("#ff8f3f"), QColor("#5aa2ff"))
    base = QColor("#ffffff" if not dark else "#33363c")
    out = []
    for i in range(10):
        f = i / 9
        c = QColor.fromRgbF(lo.redF() * (1 - f) + hi.redF() * f, lo.greenF() * (1 - f) + hi.greenF() * f,
                            lo.blueF() * (1 - f) + hi.blueF() * f)
        a = 0.45
        out.append(QColor.fromRgbF(c.redF() * a + base.redF() * (1 - a), c.greenF() * a + base.greenF() * (1 - a),
                                   c.blueF() * a + base.blueF() * (1 - a)).name())
    return out


class DistributionChart(QWidget):
    """The distribution the newest token was drawn from: per token, its probability before temperature, top-k and
    top-p (grey) and after them (blue); the token drawn in bold. ``rows()`` returns what is drawn (tests)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[str, float | None, float | None, bool]] = []
        self._colors: ThemeColors = LIGHT
        self._empty = "No token yet: Step makes one, and its distribution is drawn here."
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.setMinimumHeight(80)
        follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        self._colors = c
        self.update()

    def set_rows(self, rows: Sequence[tuple[str, float | None, float | None, bool]]) -> None:
        self._rows = list(rows)
        self.update()

    def rows(self) -> list[tuple[str, float | None, float | None, bool]]:
        return list(self._rows)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        c = self._colors
        p.fillRect(self.rect(), QColor(c.base))
        fm = QFontMetrics(self.font())
        p.setPen(QColor(c.text))
        if not self._rows:
            p.setPen(QColor(c.muted))
            p.drawText(self.rect().adjusted(6, 6, -6, -6), int(Qt.TextFlag.TextWordWrap), self._empty)
            return
        head = fm.height() + 4
        x = 6
        for text, color in (("before", c.grey), ("/", c.text), ("after sampling", c.blue)):
            p.setPen(QColor(color))
            p.drawText(x, fm.ascent() + 2, text)
            x += fm.horizontalAdvance(text + " ")
        label_w = min(110, max(fm.horizontalAdvance(t) for t, *_ in self._rows) + 8)
        number_w = fm.horizontalAdvance("100.0%") + 6
        bar_w = max(20, self.width() - label_w - number_w - 12)
        row_h = max(ROW_H, fm.height() + 2)
        bold = QFont(self.font())
        bold.setBold(True)
        for i, (token, before, after, drawn) in enumerate(self._rows):
            y = head + i * row_h
            if y + row_h > self.height():
                break
            p.setFont(bold if drawn else self.font())
            p.setPen(QColor(c.text))
            text = fm.elidedText(token.replace("␣", "·"), Qt.TextElideMode.ElideRight, label_w - 8)
            p.drawText(QRectF(6, y, label_w - 8, row_h), int(Qt.AlignmentFlag.AlignVCenter), text)
            x = 6 + label_w
            for k, (value, color) in enumerate(((before, c.grey), (after, c.blue))):
                if value is not None:
                    p.fillRect(QRectF(x, y + 2 + k * (row_h // 2 - 1), max(1.0, bar_w * value), row_h // 2 - 3),
                               QColor(color))
            shown = after if after is not None else before
            p.setPen(QColor(c.text if drawn else c.muted))
            p.drawText(QRectF(x + bar_w + 2, y, number_w, row_h), int(Qt.AlignmentFlag.AlignVCenter),
                       f"{shown:.1%}" if shown is not None else "·")
        p.end()


class GeneratedText(QTextBrowser):
    """The prompt and the tokens made, each new one on its probability's colour (the text's legend says the scale)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setMinimumHeight(44)
        self.setPlaceholderText("The prompt and the tokens the model writes appear here.")
        self.shown_html = ""

    def show_html(self, body: str) -> None:
        if body != self.shown_html:
            self.shown_html = body
            self.setHtml(f"<div style='white-space: pre-wrap'>{body}</div>")
            bar = self.verticalScrollBar()
            bar.setValue(bar.maximum())
