"""The Lab tab: choices and Run / Cancel on the left, the two live log-log plots on the right, the readouts that
teach under them (the weights matrix's size, the largest n each implementation reached, the slopes, the share of
the matmul limit, fused over naive), and an Export button for both plots (PNG, SVG, PDF).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from app.lab.model import ScalingLab
from app.lab.qt.controls import LabControls
from app.lab.qt.plots import LabPlots, write_lab_plots
from app.widgets.export_button import IMAGE_FORMATS, add_format_actions, attach_export_button, export_with_dialog
from app.widgets.theme import ThemeColors, colors_for, follow_theme

CONTROLS_WIDTH = 236


class LabTab(QWidget):
    def __init__(self, lab: ScalingLab, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lab = lab
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 6, 6, 6)
        self.controls = LabControls(lab)
        scroll = QScrollArea()
        scroll.setWidget(self.controls)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setFixedWidth(CONTROLS_WIDTH)
        row.addWidget(scroll)
        right = QVBoxLayout()
        self.plots = LabPlots(lab)
        right.addWidget(self.plots, 1)
        self.readouts_label = QLabel()
        self.readouts_label.setWordWrap(True)
        self.readouts_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readouts_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.readouts_label.setToolTip("Computed from the points measured so far (attention_core.scaling)")
        self.status_label = QLabel(lab.status)
        self.status_label.setWordWrap(True)
        self.status_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        right.addWidget(self.readouts_label)
        right.addWidget(self.status_label)
        row.addLayout(right, 1)
        self.export_button = attach_export_button(self.plots, self._fill_export, "Export both plots…")
        self._dark = False
        self.show_readouts(lab.readouts)
        lab.events.readouts.connect(self.show_readouts)
        lab.events.status.connect(lambda text: self.status_label.setText(text))
        follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        self._dark = c.dark
        self.show_readouts(self.lab.readouts)

    def show_readouts(self, lines: list[str]) -> None:
        c = colors_for(self._dark)
        if not lines:
            self.readouts_label.setText(f"<span style='color:{c.muted}'>Readouts appear as points arrive: the size "
                                        "of the weights matrix, the largest n each implementation reached, the "
                                        "fitted slopes, the share of the machine's matmul limit.</span>")
            return
        self.readouts_label.setText("<br>".join(f"• {line}" for line in lines))

    # ---------------------------------------------------------------- export
    def _fill_export(self, menu: QMenu) -> None:
        add_format_actions(menu, IMAGE_FORMATS, self.export_dialog, "Both plots as ")
        for act in menu.actions():
            act.setEnabled(bool(self.lab.run.points))

    def export_dialog(self, fmt: str) -> str | None:
        return export_with_dialog(self, fmt, f"attention-scaling.{fmt}", self.export_plots)

    def export_plots(self, path: str | Path) -> str:
        """Both plots in the light theme, titled with the run's setting (PNG, SVG or PDF)."""
        if not self.lab.run.points:
            raise ValueError("nothing measured yet: press Run first")
        return write_lab_plots(path, self.lab, self.lab.context_line())

    def self_test(self, out_dir: Path) -> list[Path]:
        """The tab and its plots as PNGs (``--self-test``)."""
        out_dir = Path(out_dir)
        tab, plots = out_dir / "lab.png", out_dir / "lab-plots.png"
        self.grab().save(str(tab))
        write_lab_plots(plots, self.lab, self.lab.context_line())
        return [tab, plots]
