"""A label whose new text lays nothing out again unless it needs another size.

``QLabel.setText`` always asks its parent's layout for a new layout, and that request climbs to the window: at the top
a ``QTabWidget`` answers it by repainting all of itself. The Playground's story line, "Last compute" and saturation
texts change on almost every keystroke, and each change relaid out and repainted the whole window (the smallest
matrix was the slowest to edit: benchmarks/bench_gui_edit.py). ``LabelBox`` holds the label outside any layout and
passes its request on only when the label needs another height at its width (a line more or less), wider room than
it has, or another size policy or limit; otherwise the new text is just painted.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QLabel, QWidget

_DIGITS = re.compile(r"\d")


class LabelBox(QWidget):
    """Put ``LabelBox(label)`` in a layout where the label would go: the label fills it, its size hints are the
    box's, and showing or hiding the label shows or hides the box."""

    def __init__(self, label: QLabel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        explicitly_hidden = label.isHidden() and label.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide)
        label.setParent(self)
        label.move(0, 0)
        if explicitly_hidden:
            label.hide()
            self.hide()
        else:
            label.show()
        self.setSizePolicy(label.sizePolicy())
        self._key: tuple[Any, ...] = ()
        self._least: tuple[tuple[str, str] | None, int] = (None, 0)  # (text with digits as 0, font): width
        label.installEventFilter(self)

    # ---------------------------------------------------------------- what the layout asks
    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        lab = self.label
        return lab.sizeHint().expandedTo(lab.minimumSize()).boundedTo(lab.maximumSize())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        lab = self.label
        return lab.minimumSizeHint().expandedTo(lab.minimumSize()).boundedTo(lab.maximumSize())

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return self.label.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        lab = self.label
        if not lab.hasHeightForWidth():
            return -1
        return min(max(lab.heightForWidth(width), lab.minimumHeight()), lab.maximumHeight())

    def needed_height(self) -> int:
        """The height the label's text needs at the box's width now."""
        height = self.heightForWidth(self.width())
        return height if height >= 0 else self.sizeHint().height()

    def _layout_key(self) -> tuple[Any, ...]:
        """What the layout around must hear about: the height needed at this width, the width the text needs when
        it is more than the box has, and the label's own policy and limits."""
        lab = self.label
        least = self._least_width()
        return (self.needed_height(), least if least > self.width() else 0, lab.sizePolicy(), lab.minimumSize(),
                lab.maximumSize())

    def _least_width(self) -> int:
        """The label's minimum width (a wrapped label's longest word), measured again only when its text changed
        in more than its digits: a rich text's minimum costs a layout of its own, and a new number in the same
        words (every edit) leaves it where it was (digits are as wide as each other)."""
        words = (_DIGITS.sub("0", self.label.text()), self.label.font().key())
        if words != self._least[0]:
            self._least = (words, self.minimumSizeHint().width())
        return self._least[1]

    # ---------------------------------------------------------------- events
    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # the label asked (new text, font, limits)
            key = self._layout_key()
            if key != self._key:
                self._key = key
                if self.sizePolicy() != self.label.sizePolicy():
                    self.setSizePolicy(self.label.sizePolicy())
                self.updateGeometry()
            return True
        return super().event(event)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.label.setGeometry(self.rect())
        key = self._layout_key()
        if key[0] != self.height() and self.height() > 0:
            # the layout gave a height the text does not need (its cached height for this width predates a text
            # that stayed quiet): ask once more, now with the current text
            self.updateGeometry()
        self._key = key

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self.height() > 0 and self.needed_height() != self.height():
            # a text set while out of sight (the Playground behind the Model tab, a page of the left column): its
            # new height was told to a layout that did not lay out then, and no resize comes to ask again
            self.updateGeometry()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.label:
            kind = event.type()
            if kind == QEvent.Type.ShowToParent and self.isHidden():
                self.show()
            elif kind == QEvent.Type.HideToParent and not self.isHidden():
                self.hide()
        return super().eventFilter(watched, event)

