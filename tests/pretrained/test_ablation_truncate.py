"""A text longer than the model's positions: ``ablate`` and ``ablation_scan`` said "pass truncate=True" but took no
such argument (a TypeError when tried). They take it now, as ``trace`` does: the text is cut to its first positions."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from attention_core import load_pretrained  # noqa: E402
from attention_core.phenomena import ablate, ablation_scan  # noqa: E402


@pytest.fixture(scope="module")
def gpt2(hf_models):
    return load_pretrained(hf_models["gpt2"])


def _long_ids(model):
    limit = model.spec.max_positions
    return np.random.default_rng(0).integers(3, model.spec.vocab_size, size=limit + 6)


def test_the_refusal_names_an_argument_ablate_takes_and_it_cuts_the_text(gpt2):
    ids = _long_ids(gpt2)
    limit = gpt2.spec.max_positions
    with pytest.raises(ValueError, match=r"model.ids_of\(text, truncate=True\)\[0\]") as refused:
        ablate(gpt2, ids, [(0, 1)], seq_len=8, batch=1)
    assert f"{len(ids)} tokens" in str(refused.value)
    cut = ablate(gpt2, ids, [(0, 1)], seq_len=8, batch=1, truncate=True)
    first = ablate(gpt2, ids[:limit], [(0, 1)], seq_len=8, batch=1)
    assert (cut.text_loss, cut.text_loss_ablated) == (first.text_loss, first.text_loss_ablated)


def test_ablation_scan_takes_truncate_too(gpt2):
    ids = _long_ids(gpt2)
    with pytest.raises(ValueError, match="also take truncate=True"):
        ablation_scan(gpt2, ids, seq_len=8)
    cut = ablation_scan(gpt2, ids, seq_len=8, truncate=True)
    first = ablation_scan(gpt2, ids[:gpt2.spec.max_positions], seq_len=8)
    np.testing.assert_array_equal(cut.text_change, first.text_change)


def test_every_reader_of_a_text_names_a_way_that_works(gpt2):
    """The decoder (and the patching, lens and knockout functions) read a text through ``ids_of`` but take no
    ``truncate``: the refusal names ``model.ids_of(text, truncate=True)[0]``, and the ids it gives are taken."""
    ids = _long_ids(gpt2)
    with pytest.raises(ValueError, match=r"model.ids_of\(text, truncate=True\)\[0\]"):
        gpt2.decoder(ids)
    cut, note = gpt2.ids_of(ids, truncate=True)
    assert len(cut) == gpt2.spec.max_positions and note is not None
    decoder = gpt2.decoder(cut)
    assert decoder.prompt_ids == [int(i) for i in ids[:gpt2.spec.max_positions]]
