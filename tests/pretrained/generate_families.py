"""The families the generation tests run on: the tiny random models of conftest.py and of family_models.py (built
with transformers, saved here), a Gemma 3 image-text checkpoint made from the Gemma 3 text model, and this app's own
model ("own"). A new family joins every generation test with one line here (its name as conftest's ``hf_models`` or
family_models' ``DECODERS`` spells it).

The text's prompt plus the new tokens is longer than every sliding window of these models (4 to 7 positions), so the
per-layer windows cut keys out of the cache while decoding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

GENERATE_FAMILIES = [
    "gpt2",
    "gpt2-untied",
    "llama",
    "llama-tied",
    "mistral",
    "qwen2",
    "gpt_neox",
    "gpt_neox-sequential",
    "gpt_neo",
    "qwen3",
    "qwen3-sliding",
    "olmo2",
    "phi3",
    "phi3-partial",
    "smollm3",
    "smollm2",
    "gemma2",
    "gemma3_text",
    "gemma3",
    "own",
]

IMAGE_TEXT = {"gemma3": "gemma3_text"}
"""An image-text checkpoint → the text model whose weights it holds under its language-model prefix (transformers'
reference for it is that text model: the checkpoint's vision tower is a stand-in)."""

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"
OWN_TEXT = "3 7 1 9 4 3 7 1 9"  # this app's models read numbers (0-15); the test model holds 12 positions


def text_for(name: str) -> str:
    return OWN_TEXT if name == "own" else TEXT


def build_families(root: Path) -> dict[str, Path]:
    """family_models' decoders and the image-text checkpoints of ``IMAGE_TEXT``: name → folder."""
    from tests.pretrained.family_models import DECODERS, build

    out = build(root, DECODERS)
    for name, text in IMAGE_TEXT.items():
        out[name] = image_text_checkpoint(out[text], root / name)
    return out


def image_text_checkpoint(src: Path, folder: Path) -> Path:
    """A Gemma 3 image-text checkpoint of the text model in ``src``: config under ``text_config``, the text weights
    under ``model.language_model.``, a vision tower and projector beside them (read by nobody)."""
    import torch
    from safetensors.torch import load_file, save_file

    folder.mkdir()
    shutil.copy(src / "tokenizer.json", folder)
    text_cfg = json.loads((src / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3", "text_config": text_cfg,
                                                    "vision_config": {"hidden_size": 8},
                                                    "eos_token_id": text_cfg.get("eos_token_id")}))
    tensors = {"model.language_model." + k.removeprefix("model."): v
               for k, v in load_file(str(src / "model.safetensors")).items()}
    tensors["model.vision_tower.patch.weight"] = torch.zeros(2, 2)
    tensors["multi_modal_projector.mm_input_projection_weight"] = torch.zeros(2, 2)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def folder_for(name: str, hf_models, own_model_dir, family_decoders):
    if name == "own":
        return own_model_dir
    return hf_models[name] if name in hf_models else family_decoders[name]


def reference_for(name: str, hf_reference, family_decoders):
    """transformers' model of the family (eager attention, float32, eval)."""
    if name not in family_decoders:
        return hf_reference(name)
    from tests.pretrained.family_models import reference

    folder = family_decoders[IMAGE_TEXT.get(name, name)]
    if folder not in _REFERENCES:
        _REFERENCES[folder] = reference(folder)
    return _REFERENCES[folder]


_REFERENCES: dict = {}
"""folder → transformers' model, loaded once per session."""
