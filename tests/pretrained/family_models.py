"""Tiny random models of the newer families (Qwen3, OLMo-2, Phi-3, SmolLM3, Gemma 2/3, BERT, RoBERTa, DistilBERT),
built with transformers (the reference) and saved as safetensors: no download, configs written here.

Every windowed config has a window shorter than the test text, so the sliding layers really cut keys off; soft-caps
are small enough that tanh bends the scores. Weights are redrawn larger than transformers' init (as conftest does),
so attention is far from uniform and a wrong mask or position would show.
"""

from __future__ import annotations

from pathlib import Path

# by its path: another test folder's conftest may be the one named "conftest" when both are collected
from tests.pretrained.conftest import VOCAB, _redraw, train_tokenizer

DECODERS = ("qwen3", "qwen3-sliding", "olmo2", "phi3", "phi3-partial", "smollm3", "smollm2", "gemma2", "gemma3_text")
ENCODERS = ("bert", "roberta", "distilbert")
LONG_TEXT = ("The quick brown fox and Mary went to the café. The quick brown fox jumps over the lazy dog, and "
             "John gave a drink to Mary.")


def decoder_configs() -> dict:
    import transformers as T

    small = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0, max_position_embeddings=128)
    gqa = dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
               intermediate_size=64, rms_norm_eps=1e-5)
    return {
        "qwen3": T.Qwen3Config(head_dim=16, **gqa, **small),
        "qwen3-sliding": T.Qwen3Config(head_dim=8, use_sliding_window=True, sliding_window=5, max_window_layers=1,
                                       tie_word_embeddings=True, **gqa, **small),
        "olmo2": T.Olmo2Config(**gqa, **small),
        "phi3": T.Phi3Config(sliding_window=7, **gqa, **small),
        "phi3-partial": T.Phi3Config(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                     hidden_size=32, intermediate_size=48,
                                     rope_parameters={"rope_type": "default", "rope_theta": 5000.0,
                                                      "partial_rotary_factor": 0.5}, **small),
        "smollm3": T.SmolLM3Config(no_rope_layer_interval=2, use_sliding_window=True, sliding_window=6, **gqa,
                                   **small),
        "smollm2": T.LlamaConfig(tie_word_embeddings=True, **gqa, **small),
        "gemma2": T.Gemma2Config(head_dim=8, query_pre_attn_scalar=12, sliding_window=5, attn_logit_softcapping=3.0,
                                 final_logit_softcapping=4.0, **gqa, **small),
        "gemma3_text": T.Gemma3TextConfig(num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1,
                                          hidden_size=32, intermediate_size=64, head_dim=8, query_pre_attn_scalar=8,
                                          sliding_window=6, sliding_window_pattern=2,
                                          rope_parameters={
                                              "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                 "rope_theta": 100000.0},
                                              "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
                                          attn_logit_softcapping=5.0, rms_norm_eps=1e-5, **small),
    }


def encoder_configs() -> dict:
    import transformers as T

    common = dict(vocab_size=VOCAB, max_position_embeddings=128)
    enc = dict(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64, **common)
    return {
        "bert": T.BertConfig(pad_token_id=0, **enc),
        "roberta": T.RobertaConfig(pad_token_id=0, bos_token_id=1, eos_token_id=2, type_vocab_size=1, **enc),
        "distilbert": T.DistilBertConfig(n_layers=2, n_heads=4, dim=32, hidden_dim=64, pad_token_id=0, **common),
    }


def encoder_tokenizer(mask: str, cls: str, sep: str):
    """A WordPiece tokenizer (BERT's scheme) trained on conftest's lines, with ``cls`` … ``sep`` around each text
    and ``mask`` as a special token that a text can write literally."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    from tests.pretrained.conftest import LINES

    specials = ["[PAD]", "[UNK]", cls, sep, mask]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(LINES * 4, trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials,
                                                                 show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))])
    return tok


def build(root: Path, names: tuple[str, ...]) -> dict[str, Path]:
    """name → saved folder (config.json, model.safetensors, tokenizer.json)."""
    import torch
    import transformers as T

    configs = {**decoder_configs(), **encoder_configs()}
    plain = None
    out = {}
    for i, name in enumerate(names):
        cfg = configs[name]
        torch.manual_seed(100 + i)
        if name in ENCODERS:
            model = T.AutoModelForMaskedLM.from_config(cfg)
            if name == "roberta":
                tok = encoder_tokenizer("<mask>", "<s>", "</s>")
            else:
                tok = encoder_tokenizer("[MASK]", "[CLS]", "[SEP]")
        else:
            model = T.AutoModelForCausalLM.from_config(cfg)
            plain = plain or train_tokenizer(bos=True)
            tok = plain
        _redraw(model, 100 + i)
        folder = root / name
        model.save_pretrained(folder, safe_serialization=True)
        tok.save(str(folder / "tokenizer.json"))
        out[name] = folder
    return out


def reference(folder: Path, encoder: bool = False):
    """transformers' model from the folder, eager attention, float32, in eval mode."""
    import torch
    import transformers as T

    cls = T.AutoModelForMaskedLM if encoder else T.AutoModelForCausalLM
    return cls.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
