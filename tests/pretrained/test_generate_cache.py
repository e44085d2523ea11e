"""The forward pass run piece by piece against a key/value cache: new tokens at given positions see the kept keys
at the positions they were computed at (rotary and learned positions), each layer's window included."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.pretrained.cache_policy import KVCache  # noqa: E402
from attention_core.pretrained.layers import layer_masks, position_mask  # noqa: E402
from tests.pretrained.generate_families import GENERATE_FAMILIES, folder_for, text_for  # noqa: E402
from tests.tolerance import assert_close


@pytest.mark.parametrize("name", GENERATE_FAMILIES)
def test_pieces_against_a_cache_equal_one_whole_run(hf_models, own_model_dir, family_decoders, name):
    model = load_pretrained(folder_for(name, hf_models, own_model_dir, family_decoders))
    ids = torch.as_tensor(model.ids_of(text_for(name))[0])[None]
    fp = model.forward_pass
    whole = fp.run(ids, record={"weights"})
    cache = KVCache.empty(model.spec.n_layers)
    first = fp.run(ids[:, :5], positions=range(5), cache=cache)
    logits = [first.logits[0]]
    rows = []
    for t in range(5, ids.shape[1]):  # one token a run, positions left to the cache
        out = fp.run(ids[:, t:t + 1], cache=cache, record={"weights"})
        logits.append(out.logits[0])
        rows.append(torch.stack([w[0, :, 0] for w in out.records["weights"]]))
    assert cache.length() == ids.shape[1] and cache.positions[0].tolist() == list(range(ids.shape[1]))
    assert_close(torch.cat(logits).numpy(), whole.logits[0].numpy())
    full = torch.stack(whole.records["weights"])[:, 0]  # layers, heads, T, T
    for i, row in enumerate(rows):
        assert_close(row.numpy(), full[:, :, 5 + i, : 6 + i].numpy())


@pytest.mark.parametrize("name", ["llama", "gpt2", "own", "gemma2", "smollm3"])
def test_dropped_keys_keep_their_positions_and_the_mask_follows_them(hf_models, own_model_dir, family_decoders, name):
    """Keep positions {0, 1} and the last 3 of the cache: the next token's logits equal a whole run whose mask lets
    that token see exactly those keys (and itself)."""
    model = load_pretrained(folder_for(name, hf_models, own_model_dir, family_decoders))
    ids = torch.as_tensor(model.ids_of(text_for(name))[0][:12])[None]
    n = ids.shape[1]
    fp = model.forward_pass
    cache = KVCache.empty(model.spec.n_layers)
    fp.run(ids[:, : n - 1], cache=cache)
    kept = [0, 1, n - 4, n - 3, n - 2]
    for layer in range(model.spec.n_layers):
        cache.keep(layer, torch.tensor(kept))
    out = fp.run(ids[:, n - 1:], positions=[n - 1], cache=cache)
    assert cache.positions[0].tolist() == [*kept, n - 1]
    mask = torch.ones(n, n, dtype=torch.bool)
    mask[n - 1] = False
    mask[n - 1, [*kept, n - 1]] = True
    ref = fp.run(ids, mask=mask).logits[0, n - 1]
    assert_close(out.logits[0, 0].numpy(), ref.numpy())
    plain = fp.run(ids).logits[0, n - 1]  # the dropped keys mattered: not what a whole run gives
    assert not torch.allclose(plain, ref, atol=1e-3)


def test_position_masks_equal_the_layer_masks_and_honour_windows(hf_models):
    spec = load_pretrained(hf_models["gpt_neo"]).spec  # layer 1 local, window 4
    pos = torch.arange(9)
    for layer, mask in enumerate(layer_masks(spec, 9)):
        assert torch.equal(position_mask(spec, layer, pos, pos), mask)
    row = position_mask(spec, 1, torch.tensor([20]), torch.tensor([0, 15, 16, 17, 19, 20, 21]))
    assert row.tolist() == [[False, False, False, True, True, True, False]]


def test_positions_outside_the_model_are_refused(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    with pytest.raises(ValueError, match="positions"):
        model.forward_pass.run(torch.tensor([[3]]), positions=[64])
    with pytest.raises(ValueError, match="positions"):
        model.forward_pass.run(torch.tensor([[3, 4]]), positions=[1])
