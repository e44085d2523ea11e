"""``patch(sweep="heads"|"resid")`` against TransformerLens's own patching functions, on the same tiny random models.

TransformerLens (4.x) is the field's reference for activation patching and a test-only extra: it is skipped where it
is not installed. ``TransformerBridge.boot_transformers(folder)`` wraps the Hugging Face model saved in the test,
offline; ``get_act_patch_attn_head_out_all_pos`` patches each head's z at every position, ``get_act_patch_resid_pre``
the residual stream entering each layer at each position, one forward pass per cell.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.pretrained.conftest import TEXT

pytest.importorskip("transformers")
pytest.importorskip("transformer_lens")


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_heads_and_resid_sweeps_equal_transformer_lens(hf_models, name):
    import torch
    import transformer_lens.patching as tl_patching
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import PreTrainedTokenizerFast

    from attention_core.pretrained import load_pretrained

    folder = hf_models[name]
    tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    bridge = TransformerBridge.boot_transformers(str(folder), tokenizer=tok, device="cpu")
    bridge.enable_compatibility_mode()
    model = load_pretrained(folder, threads=1)
    clean = model.encode(TEXT)[:12]
    corrupted = list(clean)
    corrupted[3] = (corrupted[3] + 7) % 300 + 10
    corrupted[6] = (corrupted[6] + 11) % 300 + 10
    _, cache = bridge.run_with_cache(torch.tensor([clean]))

    def metric(logits):
        return logits[0, -1, 5] - logits[0, -1, 6]

    for sweep, fn in (("heads", tl_patching.get_act_patch_attn_head_out_all_pos),
                      ("resid", tl_patching.get_act_patch_resid_pre)):
        reference = fn(bridge, torch.tensor([corrupted]), cache, metric).detach().double().numpy()
        ours = model.patch(clean, corrupted, target=5, foil=6, sweep=sweep).values
        assert ours.shape == reference.shape
        assert np.abs(ours - reference).max() <= 1e-4 * np.abs(reference).max()
