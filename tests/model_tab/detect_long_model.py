"""A tiny random Llama for the Detect view's long probes, built with transformers (the reference) and saved as
safetensors: 2 layers × 2 heads (one K/V head), 4,096 positions and a 2,200-token vocabulary, so the repeated-token
probe fits 2,047 distinct tokens per copy (the probe draws without replacement). Weights redrawn larger than
transformers' init, as tests/model_tab/test_long_text.py does, so attention is far from uniform."""

from __future__ import annotations

from pathlib import Path

POSITIONS = 4096
VOCAB = 2200


def build_long_model(folder: Path) -> Path:
    import torch
    import transformers as tr
    from tokenizers import Tokenizer, models, pre_tokenizers

    cfg = tr.LlamaConfig(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=16,
                         intermediate_size=32, vocab_size=VOCAB, max_position_embeddings=POSITIONS, bos_token_id=0,
                         eos_token_id=0, pad_token_id=0)
    torch.manual_seed(5)
    model = tr.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape) * 1.5 / p.shape[-1] ** 0.5)
    model.save_pretrained(folder, safe_serialization=True)
    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(VOCAB - 1)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def build_copying_gpt2(folder: Path) -> Path:
    """A GPT-2 with 4,096 positions whose weights are set by hand so that its heads do what the detectors look for
    at any length (its MLPs zero): 0.0 previous-token (sinusoidal positions in their own dimensions, its query the
    position turned back one step, its value the token, written into a "previous token" subspace), 0.1 first-token
    (every token's "always" feature against the BOS token's own) and 1.0 induction (the current token against the
    previous-token head's copy, its value the token, written back four times over the token's own: the model then
    predicts the token that followed the earlier copy). Saved by transformers, as any other test model."""
    import numpy as np
    import torch
    import transformers as tr
    from tokenizers import Tokenizer, models, pre_tokenizers

    d, heads, freqs = 512, 2, 64
    tok, always, bos_dim, pos0, prev0 = 190, 190, 191, 192, 320  # dims: token 0-189, 2 flags, positions, copy
    cfg = tr.GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=d, n_layer=2, n_head=heads, bos_token_id=0,
                        eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = tr.GPT2LMHeadModel(cfg)
    rng = np.random.default_rng(0)
    wte = np.zeros((VOCAB, d))
    wte[:, :tok] = rng.normal(0.0, 8 / np.sqrt(tok), (VOCAB, tok))
    wte[:, always], wte[0, bos_dim] = 4.0, 4.0
    omega = np.pi * (1 / POSITIONS) ** (np.arange(freqs) / (freqs - 1))
    angle = omega * np.arange(POSITIONS)[:, None]
    wpe = np.zeros((POSITIONS, d))
    wpe[:, pos0:pos0 + 2 * freqs:2], wpe[:, pos0 + 1:pos0 + 2 * freqs:2] = np.cos(angle), np.sin(angle)
    h0, h1 = model.transformer.h
    with torch.no_grad():
        model.transformer.wte.weight.copy_(torch.tensor(wte))
        model.transformer.wpe.weight.copy_(torch.tensor(wpe))
        for block in (h0, h1):
            for t in (block.attn.c_attn.weight, block.attn.c_attn.bias, block.attn.c_proj.weight,
                      block.attn.c_proj.bias, block.mlp.c_fc.weight, block.mlp.c_fc.bias, block.mlp.c_proj.weight,
                      block.mlp.c_proj.bias):
                t.zero_()
        w, d_head = h0.attn.c_attn.weight, d // heads  # (d, 3d): [q | k | v] columns, head h at h * d_head
        for f in range(freqs):
            c, s = pos0 + 2 * f, pos0 + 2 * f + 1
            cos, sin = 3.0 * np.cos(omega[f]), 3.0 * np.sin(omega[f])
            w[c, 2 * f], w[s, 2 * f], w[s, 2 * f + 1], w[c, 2 * f + 1] = cos, sin, cos, -sin
            w[c, d + 2 * f], w[s, d + 2 * f + 1] = 1.0, 1.0
        for i in range(192):
            w[i, 2 * d + i] = 1.0
            h0.attn.c_proj.weight[i, prev0 + i] = 1.0
        w[always, d_head], w[bos_dim, d + d_head] = 2.5, 1.0
        w1 = h1.attn.c_attn.weight
        for i in range(tok):
            w1[i, i], w1[prev0 + i, d + i], w1[i, 2 * d + i] = 3.0, 1.0, 1.0
            h1.attn.c_proj.weight[i, i] = 4.0
        model.transformer.ln_f.weight.mul_(0.1)
    model.save_pretrained(folder, safe_serialization=True)
    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(VOCAB - 1)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder
