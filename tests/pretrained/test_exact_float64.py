"""Claims of exact equality, made in float64 (``load_pretrained(dtype="float64")``: every step of the pass in
float64). In float32 the same claims hold only to the rounding of the CPU's vector unit (tests/tolerance.py's rule);
in float64 they are held a hundred thousand times tighter, so a mistake the float32 rule could hide (a key at a
wrong position, a mask off by one that moves a logit by 1e-6) cannot pass.

- decoding over a key/value cache, one token a run, equals one whole run (every family we decode);
- our forward pass equals transformers' eager GPT-2 run in float64 (its eager attention keeps the model's dtype
  through the softmax; Llama's eager softmax runs in float32 whatever the dtype, so it is no float64 reference)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.pretrained.cache_policy import KVCache  # noqa: E402
from tests.pretrained.generate_families import GENERATE_FAMILIES, folder_for, text_for  # noqa: E402
from tests.tolerance import assert_close  # noqa: E402

EXACT = 4096
"""ulps of float64 (9e-13 of the largest value): sums in another order, through a few layers, and nothing else."""


@pytest.mark.parametrize("name", GENERATE_FAMILIES)
def test_pieces_against_a_cache_equal_one_whole_run_in_float64(hf_models, own_model_dir, family_decoders, name):
    model = load_pretrained(folder_for(name, hf_models, own_model_dir, family_decoders), dtype="float64")
    assert model.forward_pass.dtype == torch.float64
    ids = torch.as_tensor(model.ids_of(text_for(name))[0])[None]
    fp = model.forward_pass
    whole = fp.run(ids, record={"weights"})
    assert whole.logits is not None and whole.logits.dtype == torch.float64
    cache = KVCache.empty(model.spec.n_layers)
    logits = [fp.run(ids[:, :5], positions=range(5), cache=cache).logits[0]]
    rows = []
    for t in range(5, ids.shape[1]):
        out = fp.run(ids[:, t:t + 1], cache=cache, record={"weights"})
        logits.append(out.logits[0])
        rows.append(torch.stack([w[0, :, 0] for w in out.records["weights"]]))
    assert_close(torch.cat(logits).numpy(), whole.logits[0].numpy(), ulps=EXACT)
    full = torch.stack(whole.records["weights"])[:, 0]
    for i, row in enumerate(rows):
        assert row.dtype == torch.float64
        assert_close(row.numpy(), full[:, :, 5 + i, : 6 + i].numpy(), ulps=EXACT)


def test_our_gpt2_equals_transformers_eager_in_float64(hf_models):
    import transformers as tr

    folder = hf_models["gpt2"]
    model = load_pretrained(folder, dtype="float64")
    ref = tr.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float64).eval()
    ids = model.encode("The quick brown fox and Mary went to the café. The quick brown fox")
    out = model.forward_pass.run(torch.tensor([ids]), record={"weights"})
    with torch.no_grad():
        hf = ref(torch.tensor([ids]), output_attentions=True)
    assert hf.logits.dtype == torch.float64
    assert_close(out.logits[0].numpy(), hf.logits[0].numpy(), ulps=EXACT)
    for ours, theirs in zip(out.records["weights"], hf.attentions):
        assert_close(ours[0].numpy(), theirs[0].numpy(), ulps=EXACT)
    # the same claim in float32 holds only to float32's rounding: the float64 comparison is the sharper one
    f32 = load_pretrained(folder).forward_pass.run(torch.tensor([ids])).logits[0].double().numpy()
    assert np.abs(f32 - hf.logits[0].numpy()).max() > 1e3 * EXACT * np.finfo(np.float64).eps
