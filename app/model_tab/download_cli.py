"""``attention-playground download REPO_ID [--revision R]``: a model from the Hugging Face hub into its standard cache
(``attention_core.pretrained.download``), where the Model tab (and every other tool) finds it.

Only the safetensors weights, config.json and the tokenizer files are fetched. Progress goes to stderr
(``app.common.progress``); the last stdout line is JSON: ``repo``, ``revision``, ``commit``, ``path`` (the snapshot
folder to open), ``bytes`` (the model's files) and ``fetched`` (what this run transferred). A refusal (no network,
a gated licence, no safetensors, no tokenizer.json, an unsupported family, too little disk, a truncated file) exits 2
with the reason.
Ctrl+C stops at once (exit 130); what arrived stays, and the same command fetches only the rest. The endpoint is
``$HF_ENDPOINT`` (default https://huggingface.co), the cache ``$HF_HUB_CACHE`` / ``$HF_HOME/hub``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROG = "attention-playground download"


def add_download_parser(sub: Any) -> None:
    """The ``download`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    p = sub.add_parser("download", help="fetch a model from the Hugging Face hub into its cache (safetensors, config "
                                        "and tokenizer only; resumes a stopped download)")
    p.add_argument("repo_id", metavar="REPO_ID", help="the repository, e.g. openai-community/gpt2")
    p.add_argument("--revision", default=None, metavar="R", help="a branch, tag or commit (default main)")


def cmd_download(args: Any) -> int:
    from app.common.progress import Progress
    from attention_core.pretrained.download import DownloadResult, iter_download, plan_download
    from attention_core.pretrained.download.hub import DownloadRefused
    from attention_core.pretrained.memory import size_text

    progress: Progress | None = None
    try:
        plan = plan_download(args.repo_id, args.revision)
        names = ", ".join(f.name for f in plan.files)
        print(f"{PROG}: {plan.repo_id} @ {plan.commit[:10]} ({plan.model_type}): {names}, "
              f"{size_text(plan.total_bytes)} into {plan.cache_dir}", file=sys.stderr, flush=True)
        for item in iter_download(plan):
            if isinstance(item, DownloadResult):
                if progress is not None:
                    progress.close()
                    progress = None
                print(json.dumps(item.to_json()))
                return 0
            if progress is None:
                progress = Progress(max(item.total // 1000, 1), f"download {plan.repo_id}", unit="kB")
            progress.update(item.done // 1000, item.file)
    except DownloadRefused as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the cache folder cannot be written
        print(f"{PROG}: cannot write the model into the cache: {exc}", file=sys.stderr)
        return 2
    finally:
        if progress is not None:
            progress.close()
    return 2  # pragma: no cover - iter_download always ends with its result or a refusal
