"""Above the Steps view: the heads banner and the shared-colour-range switch.

- ``HeadsBanner``: with Heads > 1 the Steps view still shows one head over all of d_k, which silently ignored
  the Heads control; the banner says what the heads do (words from ``PlaygroundModel.heads_banner``) and its link
  emits ``openMultiHead`` so the tab can switch to the Multi-head view. Hidden with one head, and while the
  Steps view is not the one shown (``set_active``).
- ``SharedRangeToggle``: the model's ``shared_range`` option (one colour range for ①–③, so the scale's effect
  shows in colour). View state, not an undo step: it changes no number.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QWidget

from app.playground.model.playground import PlaygroundModel


class HeadsBanner(QLabel):
    openMultiHead = Signal()

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._active = True
        self.setObjectName("headsBanner")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse
                                     | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.linkActivated.connect(lambda _href: self.openMultiHead.emit())
        model.events.heads.connect(self.show_state)
        model.events.dims.connect(self.show_state)
        self.show_state()

    def set_active(self, active: bool) -> None:
        """Whether the Steps view is the one on screen (the banner speaks about it only)."""
        self._active = active
        self.show_state()

    def show_state(self) -> None:
        html = self.model.heads_banner
        if html != self.text():
            self.setText(html)
        visible = bool(html) and self._active
        if self.isHidden() == visible:
            self.setVisible(visible)


class SharedRangeToggle(QCheckBox):
    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__("Same colour range for ① ② ③", parent)
        self.model = model
        self.setToolTip("On: ① scores, ② scaled and ③ masked share one colour range, so scaling visibly pales ②.\n"
                        "Off: each map spreads its own numbers over the whole colour range.")
        self.toggled.connect(model.set_shared_range)
        model.events.colours.connect(self.show_state)
        self.show_state()

    def show_state(self) -> None:
        with QSignalBlocker(self):
            self.setChecked(self.model.shared_range)
