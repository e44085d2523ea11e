"""An exported map's two-line title is never cut at the figure's edge: it is centred over the map's column alone,
so a long setting line (every modern option on) ran off the left edge ("edited matrices" read "edited")."""

from __future__ import annotations

from PySide6.QtGui import QImage


def test_a_long_setting_line_stays_inside_the_exported_image(window, tmp_path):
    for text, fn in (("rotary", lambda m: m.set_rotary(10000.0)), ("mask", lambda m: m.set_mask("sliding")),
                     ("window", lambda m: m.set_window(2, 1)), ("alibi", lambda m: m.set_alibi(True)),
                     ("cap", lambda m: m.set_softcap(20.0))):
        assert window.edits.apply(text, fn)
    path = tmp_path / "w.png"
    window.pipeline.heatmaps["weights"].export(path)
    img = QImage(str(path))
    band = [img.pixelColor(x, y).lightness() for x in range(0, 8) for y in range(0, 70)]
    assert min(band) > 200  # the title's first letters start inside the image, not at (or past) its left edge
