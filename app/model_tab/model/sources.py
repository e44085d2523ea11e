"""Where the Model tab finds models without any network: the local Hugging Face cache, the folders the app saves
its own trained models in, and the folders opened before. Qt-free; nothing here loads a model.

The Hugging Face cache is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``; a model
there is ``models--ORG--NAME/snapshots/REVISION/`` holding ``config.json``. The app's own models are the
``.safetensors`` files the Training tab saves (not their ``.history.safetensors``) and the folders ``train --out``
writes (``model.safetensors`` + ``config.json``). ``CATALOGUE``: the small models "Get a model" offers to download
(``app.model_tab.model.get_model``); nothing is contacted until one is asked for."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

KINDS = ("hub", "own", "recent")


@dataclass(frozen=True)
class CatalogueEntry:
    """A small, openly licensed model "Get a model" offers. ``size``: its safetensors weights as the hub stores them
    (the tokenizer adds a few MB); ``revision``: where the safetensors are (a commit when main has none)."""

    title: str
    repo_id: str
    size: str
    licence: str
    family: str
    note: str = ""
    revision: str = "main"


CATALOGUE = (
    CatalogueEntry("GPT-2 small", "openai-community/gpt2", "548 MB", "MIT", "gpt2",
                   "12 layers × 12 heads, 124M parameters: induction heads"),
    CatalogueEntry("Pythia-70m", "EleutherAI/pythia-70m", "166 MB", "Apache-2.0", "gpt_neox",
                   "6 layers × 8 heads, rotary positions"),
    CatalogueEntry("Pythia-160m", "EleutherAI/pythia-160m", "375 MB", "Apache-2.0", "gpt_neox",
                   "12 layers × 12 heads, rotary positions"),
    CatalogueEntry("TinyStories-33M", "roneneldan/TinyStories-33M", "291 MB", "not stated", "gpt_neo",
                   "4 layers × 16 heads, local and global layers; children's stories",
                   revision="854a281ebcd3a0c8cd4be3f7e676bc20dca27cd3"),  # main has only pickled weights
    CatalogueEntry("SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M", "269 MB", "Apache-2.0", "llama",
                   "30 layers × 9 heads, 3 key/value heads (grouped-query attention)"),
    CatalogueEntry("Qwen3-0.6B", "Qwen/Qwen3-0.6B", "1.5 GB", "Apache-2.0", "qwen3",
                   "28 layers × 16 heads, 8 key/value heads, q/k norms"),
    CatalogueEntry("BERT base (uncased)", "google-bert/bert-base-uncased", "440 MB", "Apache-2.0", "bert",
                   "12 layers × 12 heads, bidirectional: predicts [MASK] tokens"),
)
"""What "Get a model" lists (sizes as the hub shows them); any other repository id can be typed."""
KIND_WORDS = {"hub": "Hugging Face cache", "own": "trained in this app", "recent": "opened before"}
MAX_PER_DIR = 200
"""At most this many models are listed from one folder (a cache of thousands must not stall the list)."""


@dataclass(frozen=True)
class ModelSource:
    """One model that can be opened: what the list shows, where it is, and where it was found."""

    label: str
    path: Path
    kind: str

    @property
    def text(self) -> str:
        return f"{self.label} — {KIND_WORDS.get(self.kind, self.kind)}"


def hub_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The local Hugging Face hub cache, as the hub library resolves it."""
    env = dict(os.environ) if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def hub_models(cache: Path) -> list[ModelSource]:
    """Each cached snapshot that holds a config.json, newest revision first per model, "org/name" as its label."""
    found: list[ModelSource] = []
    try:
        repos = sorted(p for p in cache.glob("models--*") if p.is_dir())[:MAX_PER_DIR]
    except OSError:
        return []
    for repo in repos:
        name = repo.name[len("models--"):].replace("--", "/")
        try:
            snaps = sorted((s for s in (repo / "snapshots").iterdir() if (s / "config.json").is_file()),
                           key=lambda s: s.stat().st_mtime, reverse=True)
        except OSError:
            continue
        for i, snap in enumerate(snaps):
            found.append(ModelSource(name if i == 0 else f"{name} @ {snap.name[:8]}", snap, "hub"))
    return found


def own_models(folders: Iterable[Path]) -> list[ModelSource]:
    """The app's own trained models in ``folders`` (and one level below): saved ``.safetensors`` files and
    ``train --out`` run folders."""
    found: list[ModelSource] = []
    seen: set[Path] = set()
    for folder in folders:
        try:
            candidates = sorted([*folder.glob("*.safetensors"), *folder.glob("*/model.safetensors")])
        except OSError:
            continue
        for f in candidates[:MAX_PER_DIR]:
            if f.name.endswith(".history.safetensors"):
                continue
            target = f.parent if f.name == "model.safetensors" and (f.parent / "config.json").is_file() else f
            if target in seen:
                continue
            seen.add(target)
            found.append(ModelSource(target.stem if target.is_file() else target.name, target, "own"))
    return found


def discover(own_folders: Sequence[Path] = (), recent: Sequence[str] = (),
             env: dict[str, str] | None = None) -> list[ModelSource]:
    """Every model found offline: the recent folders first (those that still exist), then the app's own models,
    then the Hugging Face cache; a path is listed once."""
    out: list[ModelSource] = []
    seen: set[Path] = set()
    recent_sources = [ModelSource(Path(r).name or str(r), Path(r), "recent") for r in recent if Path(r).exists()]
    for s in [*recent_sources, *own_models(own_folders), *hub_models(hub_cache_dir(env))]:
        key = s.path.resolve() if s.path.exists() else s.path
        if key not in seen:
            seen.add(key)
            out.append(s)
    return told_apart(out)


def told_apart(sources: list[ModelSource]) -> list[ModelSource]:
    """Sources that would read alike (two folders named ``ind`` opened before) say where they are: the label gets
    its folder's last two parents ("ind (…/run-a/out)"), so the list never shows one line three times."""
    counts: dict[str, int] = {}
    for s in sources:
        counts[s.label] = counts.get(s.label, 0) + 1
    return [s if counts[s.label] == 1 else replace(s, label=f"{s.label} (…/{'/'.join(s.path.parent.parts[-2:])})")
            for s in sources]
