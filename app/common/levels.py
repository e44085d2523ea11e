"""The one threshold below which a signed map is coloured as if it were all zeros, shared by the models that decide
colour ranges (``app.playground.model.colour_range``) and the widgets that draw them (``app.widgets.heatmap.style``)."""

MIN_LEVEL = 1e-100
"""Below this largest magnitude a signed map is coloured as if it were all zeros (levels ±1): a range of tiny
(e.g. subnormal) values overflows pyqtgraph's 255 / range (found by the window monkey test)."""
