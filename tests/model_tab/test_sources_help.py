"""The Model tab's help line names every family the loader opens: it listed only the 2024 families after Qwen3,
Gemma, Phi-3, OLMo-2, SmolLM3 and the BERT family were added. A new ``model_type`` without a readable name here
fails, so the help cannot fall behind again."""

from __future__ import annotations

from app.model_tab.qt.sources import HELP
from attention_core.pretrained.config import FAMILIES

READABLE = {"gpt2": "GPT-2", "llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "gpt_neox": "Pythia",
            "gpt_neo": "GPT-Neo", "qwen3": "Qwen3", "olmo2": "OLMo-2", "phi3": "Phi-3", "smollm3": "SmolLM3",
            "gemma2": "Gemma 2", "gemma3_text": "Gemma 3", "gemma3": "Gemma 3", "bert": "BERT", "roberta": "RoBERTa",
            "distilbert": "DistilBERT"}


def test_the_help_names_every_supported_family():
    missing = [t for t in FAMILIES if t not in READABLE or READABLE[t] not in HELP]
    assert missing == []
