"""The notebook drawing of AttentionSteps shows the optional steps that are on, and only those."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from attention_core import alibi_bias, attention_steps, causal_mask
from attention_core.notebook import number, steps_svg

NS = "{http://www.w3.org/2000/svg}"


def titles(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter(f"{NS}text") if "bold" in t.get("style", "")]


def test_cap_and_bias_maps_appear_between_scaled_and_masked_with_their_numbers():
    """In the order computed: the soft-cap on the scaled scores, then the bias, then the mask."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    s = attention_steps(q, k, v, bias=alibi_bias(1, 3)[0] * 40, softcap=0.5, mask=causal_mask(3), rotary_base=100.0)
    svg = steps_svg(s)
    names = titles(svg)
    assert names.index("② × scale") < names.index("c·tanh(x/c)") < names.index("+ bias") < names.index("③ Masked")
    capped = 0.5 * np.tanh(s.scaled / 0.5)  # by hand
    biased = capped + alibi_bias(1, 3)[0] * 40
    assert f">{number(capped[2, 0])}<" in svg and f">{number(biased[2, 0])}<" in svg
    assert re.search(r"rotary base 100 on 4 columns", svg) and "soft-cap 0.5" in svg


def test_plain_steps_draw_the_five_only():
    s = attention_steps(np.eye(2), np.eye(2), np.eye(2))
    names = titles(steps_svg(s))
    assert "+ bias" not in names and "c·tanh(x/c)" not in names and "⑤ Output = weights·V" in names
