"""The families the generation tests run on: the tiny random models of conftest.py (built with transformers, saved
here) and this app's own model ("own"). A new family joins every generation test with one line here (its name as
conftest's ``hf_models`` spells it)."""

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
    "own",
]

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"
OWN_TEXT = "3 7 1 9 4 3 7 1 9"  # this app's models read numbers (0-15); the test model holds 12 positions


def text_for(name: str) -> str:
    return OWN_TEXT if name == "own" else TEXT


def folder_for(name: str, hf_models, own_model_dir):
    return own_model_dir if name == "own" else hf_models[name]
