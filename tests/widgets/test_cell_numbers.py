"""The rule for a map's numbers stays one rule when made cheap (edits): ``fit_number_font`` gives up without
measuring every string once the longest cannot fit, and ``cell_text`` remembers ``format_value``'s strings. Both
must answer exactly what the plain rule answers: the font a map paints with and its "too small for numbers" note
come from them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QFont

from app.widgets.heatmap.cells import MIN_NUMBER_PT, cell_text, fit_number_font, font_at, format_value, number_pt


def plain_fit(texts: list[list[str]], cw: float, ch: float, base: QFont, scale: float) -> QFont | None:
    """The rule written the long way: shrink until the longest fits or 6.5 pt, then measure every string."""
    if not (cw >= 14 and ch >= 11):
        return None
    strings = [t for row in texts for t in row]
    if not strings:
        return None
    longest = max(strings, key=len)
    size = max(MIN_NUMBER_PT, min(number_pt(ch, scale), ch * 0.38, cw / (0.62 * len(longest) + 0.6)))
    font, fm = font_at(base, size)
    while size > MIN_NUMBER_PT and (advance := fm.horizontalAdvance(longest)) > cw - 3:
        size = max(MIN_NUMBER_PT, min(size - 0.5, size * (cw - 3) / advance))
        font, fm = font_at(base, size)
    widest = max(fm.horizontalAdvance(t) for t in strings)
    return font if widest <= cw - 3 and fm.height() <= ch else None


values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, -0.004, 9.995, 99.5]))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(values, min_size=1, max_size=5), min_size=1, max_size=4),
       cw=st.floats(0, 120), ch=st.floats(0, 90), scale=st.sampled_from([1.0, 1.5, 2.0]))
def test_the_quick_fit_answers_as_the_plain_rule(qapp, rows, cw, ch, scale):
    texts = [[format_value(v) for v in row] for row in rows]
    base = QFont()
    quick, plain = fit_number_font(texts, cw, ch, base, scale), plain_fit(texts, cw, ch, base, scale)
    assert (quick is None) == (plain is None), (texts, cw, ch)
    if quick is not None and plain is not None:
        assert quick.pointSizeF() == plain.pointSizeF()


@given(values)
def test_remembered_cell_texts_are_format_values(v):
    assert cell_text(v) == format_value(v)
    assert cell_text(v) == format_value(v)  # the second time from memory
    if v == 0:
        assert cell_text(-0.0) == cell_text(0.0) == "0.00"
    if math.isnan(v):
        assert cell_text(v) == "–"
