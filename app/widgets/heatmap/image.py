"""The cells' colours: a ``pg.ImageItem`` that looks its colours up with numpy.

pyqtgraph turns a float image with a 256-colour map into an indexed image and builds its 256-entry colour table in
Python (256 ``qRgb`` calls) on every repaint: five maps on every keystroke. ``MapImage`` keeps everything pyqtgraph
keeps (the values in ``image``, ``getLevels()``, the colour map's ``lut``) and renders the same colours in one
numpy lookup: the same index per value (as ``pyqtgraph.functions.rescaleData`` computes it), the same
colour per index. Anything else (NaN, no colour map, downsampling) goes the way pyqtgraph goes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from pyqtgraph import functions as fn
from PySide6.QtGui import QImage


class MapImage(pg.ImageItem):
    def render(self) -> None:
        image, lut, levels = self.image, self.lut, self.levels
        if not (isinstance(image, np.ndarray) and image.ndim == 2 and image.size and image.dtype == np.float64
                and isinstance(lut, np.ndarray) and lut.dtype == np.uint8 and lut.ndim == 2
                and lut.shape[0] == 256 and lut.shape[1] in (3, 4) and levels is not None and np.ndim(levels) == 1
                and not self.autoDownsample and self.axisOrder == "row-major" and np.isfinite(image).all()):
            super().render()
            return
        lo, hi = float(levels[0]), float(levels[1])
        span = (hi - lo) or 1.0
        # pyqtgraph's index exactly (``fn.rescaleData`` for float64: subtract, scale, clip, truncate), without
        # its buffered iterator, which costs more than the lookup itself on a map this small
        index = np.clip((image - lo) * (256 / span), 0, 255).astype(np.uint8)
        colours: Any = np.ascontiguousarray(lut[index])
        fmt = QImage.Format.Format_RGB888 if lut.shape[1] == 3 else QImage.Format.Format_RGBA8888
        self.qimage = fn.ndarray_to_qimage(colours, fmt)
        self._renderRequired = False
        self._unrenderable = False
