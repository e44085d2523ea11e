"""docs/notebook.ipynb runs headless (nbclient, an ipykernel on this interpreter) and what it shows is right: every
rich output is valid SVG, and the cat/sat/mat weights drawn are those attention_steps computes, to the digits shown."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from attention_core import attention_steps, causal_mask, get_preset

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebook.ipynb"
NS = "{http://www.w3.org/2000/svg}"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    cwd = tmp_path_factory.mktemp("notebook")
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
                            allow_errors=False).execute()
    return nb


def rich_svgs(nb) -> list[tuple[str, str]]:
    """(source of the cell, the SVG of its text/html output) for every cell that drew something."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            html = o.get("data", {}).get("text/html")
            if html:
                out.append((cell.source, re.search(r"<svg.*</svg>", html, re.S).group(0)))
    return out


def weights_drawn(svg: str) -> list[str]:
    """The numbers printed in the '④ Softmax weights' map, row by row."""
    root = ET.fromstring(svg)
    for g in root.iter(f"{NS}g"):
        title = g.find(f"{NS}text")
        if title is not None and title.text == "④ Softmax weights":
            return [t.text for cell in g.findall(f"{NS}g") if (t := cell.find(f"{NS}text")) is not None]
    raise AssertionError("no weights map")


def test_the_notebook_runs_and_draws_valid_svg(executed) -> None:
    drawn = rich_svgs(executed)
    assert len(drawn) == 5, [src for src, _ in drawn]  # steps, masked steps, two heads, the trace, one head
    for _, svg in drawn:
        assert ET.fromstring(svg).tag == f"{NS}svg"
    assert any("L1 H0: " in svg for src, svg in drawn if src.rstrip().endswith("trace"))


def test_its_cat_sat_mat_numbers_are_attention_steps_numbers(executed) -> None:
    p = get_preset("cat-sat-mat")
    plain = attention_steps(p.q, p.k, p.v).weights
    causal = attention_steps(p.q, p.k, p.v, mask=causal_mask(3)).weights
    drawn = rich_svgs(executed)
    assert weights_drawn(drawn[0][1]) == [f"{x:.2f}".replace("-0.00", "0.00") for x in plain.ravel()]
    assert weights_drawn(drawn[1][1]) == [f"{x:.2f}" for x in causal.ravel()]
    assert "cat → sat: " + f"{plain[0, 1]:.4f}" in drawn[0][1]
    printed = "".join(o.get("text", "") for o in executed.cells[3].outputs)
    assert str(np.round(plain, 2)) in printed
