"""Talking to the Hugging Face hub and writing its cache for ``download``: settings read at call time, the hub
library's errors turned into refusals that say what to do, the cache's links. Qt-free; ``huggingface_hub`` is
imported inside the functions that use it."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..errors import PretrainedError

DEFAULT_ENDPOINT = "https://huggingface.co"
DISK_MARGIN = 64 * 2**20
"""Free space kept beyond what the download needs (the cache's small files, the file system's own needs)."""
KINDS = ("bad_id", "offline", "network", "not_found", "gated", "no_safetensors", "unsupported", "disk", "truncated",
         "corrupt")
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][\w.\-]{0,95}/)?[A-Za-z0-9][\w.\-]{0,95}$")


class DownloadRefused(PretrainedError):
    """The download cannot go on; ``kind`` (one of ``KINDS``) says why, the message says what to do."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def endpoint_now(env: dict[str, str] | None = None) -> str:
    env = dict(os.environ) if env is None else env
    return (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The hub cache as the hub library resolves it, read now."""
    env = dict(os.environ) if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def hub_repo_id(folder: Path) -> str | None:
    """"ORG/NAME" when ``folder`` is a snapshot of the hub's cache (``models--ORG--NAME/snapshots/COMMIT``), else
    None: a model opened from there is named by its repository, not by the commit hash its folder is called."""
    p = Path(folder)
    if p.parent.name != "snapshots" or not p.parent.parent.name.startswith("models--"):
        return None
    return p.parent.parent.name[len("models--"):].replace("--", "/") or None


def check_repo_id(repo_id: str) -> str:
    text = str(repo_id).strip()
    if not _REPO_ID.match(text) or ".." in text or text.endswith((".", "-")):
        raise DownloadRefused("bad_id", f"{repo_id!r} is not a repository id: write ORG/NAME, e.g. "
                                        "openai-community/gpt2")
    return text


def free_bytes(path: Path) -> int:
    """Free space on the disk that holds ``path`` (its nearest existing folder)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def offline_now() -> bool:
    return any(os.environ.get(k, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def is_transport_error(exc: BaseException) -> bool:
    """A network failure of the hub library's HTTP client (httpx or its fork), told by name: no import needed."""
    return any(c.__name__ in ("TransportError", "TimeoutException", "NetworkError") for c in type(exc).__mro__)


def refusal(exc: Exception, repo_id: str, endpoint: str, gated: bool = False) -> DownloadRefused:
    """The hub library's error as a refusal that says what to do."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    login = (f"{repo_id} is gated: accept its licence on {endpoint}/{repo_id} while logged in, then set HF_TOKEN "
             "(or run `hf auth login`) and try again")
    if isinstance(exc, DownloadRefused):
        return exc
    if isinstance(exc, OfflineModeIsEnabled):
        return DownloadRefused("offline", "offline mode is on (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE was set when "
                                          "the app started): unset it to download")
    if is_transport_error(exc):
        return DownloadRefused("network", f"cannot reach {endpoint} ({type(exc).__name__}: {exc}); check the "
                                          "network connection (or HF_ENDPOINT) and try again")
    if isinstance(exc, GatedRepoError) or (gated and isinstance(exc, RepositoryNotFoundError)):
        return DownloadRefused("gated", login)
    if isinstance(exc, RevisionNotFoundError):
        return DownloadRefused("not_found", f"{repo_id} has no revision by that name")
    if isinstance(exc, RepositoryNotFoundError):
        return DownloadRefused("not_found", f"no model {repo_id} on {endpoint} (or it is private: log in with "
                                            "HF_TOKEN)")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status in (401, 403):
        return DownloadRefused("gated", login)
    if isinstance(exc, HfHubHTTPError):
        return DownloadRefused("network", f"the hub refused: {str(exc).splitlines()[0]}")
    raise exc


def hub_headers(token: str | None) -> dict[str, str]:
    from huggingface_hub.utils import build_hf_headers

    return dict(build_hf_headers(token=token, library_name="attention-playground"))


def etag_of(headers: Any) -> str:
    raw = headers.get("X-Linked-Etag") or headers.get("ETag") or ""
    return str(raw).removeprefix("W/").strip('"')


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**22), b""):
            h.update(block)
    return h.hexdigest()


def link_blob(blob: Path, pointer: Path) -> None:
    """``pointer`` → ``blob`` as the hub library links them (relative), a copy where links are not allowed."""
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if pointer.is_symlink() or pointer.exists():
        pointer.unlink()
    try:
        os.symlink(os.path.relpath(blob, pointer.parent), pointer)
    except (OSError, NotImplementedError):
        shutil.copyfile(blob, pointer)


def bytes_on_disk(blobs: Path, etag: str) -> int:
    """Bytes of this blob already here: whole, or kept from a download that stopped."""
    for p in (blobs / etag, blobs / f"{etag}.incomplete"):
        if p.is_file():
            return p.stat().st_size
    return 0
