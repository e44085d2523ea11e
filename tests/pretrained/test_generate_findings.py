"""``generate`` as a user tried it (the command line and the library): a vanishing temperature acts as greedy instead
of failing on inf/nan probabilities; the JSON file says why the decoding ended when it ran out of tokens to write;
a window given with a full cache is refused, not ignored; the CSV's ``cache_positions`` names the positions (and
``cache_length`` counts them); the images leave positions outside the cache without a number, not "0.00"."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from app.cli import main  # noqa: E402
from attention_core import load_pretrained  # noqa: E402
from tests.pretrained.generate_families import text_for  # noqa: E402


def _run(argv, capsys):
    code = main(["generate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, (json.loads(out.strip().splitlines()[-1]) if code == 0 else None), err


def test_a_vanishing_temperature_draws_the_greedy_tokens(hf_models, tmp_path, capsys):
    """logits / 1e-320 overflowed to inf and the draw failed on nan probabilities (exit 1); shifted by the largest
    logit first, the division sends every other token to probability 0: the draw is the greedy token."""
    folder = hf_models["gpt2"]
    model = load_pretrained(folder)
    greedy = model.generate(text_for("gpt2"), max_new_tokens=5, stop_at_eos=False)
    for temperature in (1e-320, 5e-324, 1e-30):
        tiny = model.generate(text_for("gpt2"), max_new_tokens=5, temperature=temperature, top_p=0.9,
                              stop_at_eos=False)
        assert tiny.new_ids == greedy.new_ids
        assert all(s.drawn_probability == 1.0 for s in tiny.steps)
    code, summary, err = _run(["--model", folder, "--prompt", text_for("gpt2"), "--max-new-tokens", 5,
                               "--temperature", "1e-320", "--out", tmp_path / "g.json"], capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert data["new_ids"] == model.generate(text_for("gpt2"), max_new_tokens=5).new_ids


def test_the_json_says_max_new_tokens_when_the_count_ends_it(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    code, summary, err = _run(["--model", folder, "--prompt", text_for("gpt2"), "--max-new-tokens", 3, "--out",
                               tmp_path / "g.json"], capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert len(data["new_ids"]) == 3 and data["new_ids"][-1] != 2  # not ended by the end-of-text token (id 2)
    assert data["stopped"] == summary["stopped"] == "max_new_tokens"


def test_a_window_with_a_full_cache_is_refused(hf_models, tmp_path, capsys):
    model = load_pretrained(hf_models["gpt2"])
    with pytest.raises(ValueError, match="window=4 applies to cache='window' and cache='sinks' only"):
        model.generate(text_for("gpt2"), window=4, cache="full")
    decoder = model.decoder(text_for("gpt2"), cache="sinks", window=6, sinks=2)
    with pytest.raises(ValueError, match="window"):
        decoder.set_cache("full", window=4)
    assert decoder.policy.cache == "sinks" and decoder.policy.window == 6  # the old policy kept
    code, _, err = _run(["--model", hf_models["gpt2"], "--prompt", "The", "--window", 4, "--out",
                         tmp_path / "g.json"], capsys)
    assert code == 2 and "--window applies to --cache window and --cache sinks only" in err


def _ranges(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split():
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def test_the_csv_names_the_cache_positions_and_counts_them(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    code, _, err = _run(["--model", folder, "--prompt", text_for("gpt2"), "--max-new-tokens", 6, "--cache", "sinks",
                         "--window", 5, "--sinks", 2, "--out", tmp_path / "g.csv"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(ln for ln in (tmp_path / "g.csv").open(encoding="utf-8") if not ln.startswith("#")))
    gen = load_pretrained(folder).generate(text_for("gpt2"), max_new_tokens=6, cache="sinks", window=5, sinks=2)
    assert len(rows) == len(gen.steps)
    for row, step in zip(rows, gen.steps):
        assert _ranges(row["cache_positions"]) == step.cache_positions
        assert int(row["cache_length"]) == len(step.cache_positions) == 5
    assert rows[-1]["cache_positions"] == f"0-1 {gen.steps[-1].query_position - 2}-{gen.steps[-1].query_position}"


def test_positions_outside_the_cache_have_no_number_in_the_images(hf_models):
    from app.model_tab.qt.generate_figure import grown_attention
    from app.widgets.heatmap.view import HeatmapWidget
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application

    gen = load_pretrained(hf_models["gpt2"]).generate(text_for("gpt2"), max_new_tokens=4, cache="window", window=3)
    values, blocked, rows, cols = grown_attention(gen, 1, 0)
    assert blocked.any() and np.isnan(values[blocked]).all() and not np.isnan(values[~blocked]).any()
    ensure_application()
    widget = HeatmapWidget(context_menu=False, dark=False)
    try:
        widget.set_data(values, rows, cols, blocked=blocked, kind="weights")
        widget.overlay._format()
        texts = np.array(widget.overlay.texts)
        assert not (texts[blocked] == "0.00").any() and (texts[blocked] == "–").all()
        sums = [label for _, label in widget.plot.getAxis("right")._tickLevels[0]]
        assert sums and all("nan" not in s for s in sums)
        assert sums == [f"Σ {float(np.nansum(r)):.3f}" for r in values]  # each row's weights: 1 over its cache
    finally:
        delete_now(widget)
