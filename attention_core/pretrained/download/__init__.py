"""Fetch a model from the Hugging Face hub into the standard cache, so the Model tab and every other tool find it.

``plan_download(repo_id, revision=None) -> DownloadPlan`` asks the hub what the repository holds and refuses before
any weight moves: offline mode, no network, a gated licence, no ``.safetensors`` weights, no ``tokenizer.json`` (the
model could not be opened without it), a ``model_type`` this library cannot open (``config.json`` is read first;
the supported families are read at call time). Then
``iter_download(plan)`` yields ``DownloadProgress`` as bytes arrive and a ``DownloadResult`` last; ``download(...)``
does both. Only the safetensors weights, ``config.json`` and the tokenizer files are fetched.

The layout is the hub library's own (``models--ORG--NAME/blobs/ETAG``, ``snapshots/COMMIT/FILE`` linking to the blob,
``refs/REVISION``), in ``$HF_HUB_CACHE`` (else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``), read at call
time, as the endpoint is (``$HF_ENDPOINT``): ``huggingface_hub`` reads its own settings once, at import. A file
arrives in ``blobs/ETAG.incomplete``; stopping (Cancel, Ctrl+C, a broken connection) keeps it, and the next call asks
only for the rest (an HTTP Range). ``huggingface_hub`` 2.x deletes its partial files, hence the loop here.
``config.json`` is linked last: a snapshot the Model tab lists is always whole. Nothing here runs at import.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..memory import size_text
from .hub import (
    DISK_MARGIN,
    DownloadRefused,
    bytes_on_disk,
    check_repo_id,
    endpoint_now,
    etag_of,
    free_bytes,
    hub_cache_dir,
    hub_headers,
    is_transport_error,
    link_blob,
    offline_now,
    refusal,
    sha256_of,
)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "vocab.txt", "tokenizer.model", "added_tokens.json", "generation_config.json")
"""Fetched beside the weights and config.json when the repository has them (top level only)."""
@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int | None
    sha256: str | None  # the hub's LFS hash: checked once the file is whole


@dataclass(frozen=True)
class DownloadPlan:
    """What ``plan_download`` learnt; ``iter_download`` follows it. ``config`` holds config.json's bytes."""

    repo_id: str
    revision: str
    commit: str
    endpoint: str
    cache_dir: Path
    files: tuple[RemoteFile, ...]
    model_type: str
    config: bytes
    config_etag: str
    token: str | None = None

    @property
    def total_bytes(self) -> int:
        """Every file of the model, config.json included."""
        return sum(f.size or 0 for f in self.files) + len(self.config)

    @property
    def storage(self) -> Path:
        return self.cache_dir / ("models--" + self.repo_id.replace("/", "--"))

    @property
    def folder(self) -> Path:
        """The snapshot folder the model opens from once downloaded."""
        return self.storage / "snapshots" / self.commit


@dataclass(frozen=True)
class DownloadProgress:
    file: str
    file_done: int
    file_total: int
    done: int  # bytes of the whole plan on disk (kept from before included)
    total: int
    fetched: int  # bytes transferred by this call


@dataclass(frozen=True)
class DownloadResult:
    repo_id: str
    revision: str
    commit: str
    path: Path
    bytes: int
    fetched: int

    def to_json(self) -> dict[str, Any]:
        return {"repo": self.repo_id, "revision": self.revision, "commit": self.commit, "path": str(self.path),
                "bytes": self.bytes, "fetched": self.fetched}


def check_family(cfg: dict[str, Any], where: str) -> str:
    """``cfg``'s model_type if this library opens it (a nested ``text_config``'s counts too), else refused."""
    from .. import config as arch  # read now: the list of families grows

    families = arch.FAMILIES
    model_type = cfg.get("model_type")
    text = cfg.get("text_config")
    if model_type in families or (isinstance(text, dict) and text.get("model_type") in families):
        return str(model_type)
    raise DownloadRefused("unsupported", f"{where}: model_type {model_type!r} is not supported (supported: "
                                         f"{', '.join(sorted(families))}); nothing was downloaded")


def disk_refusal(repo_id: str, need: int, free: int, where: Path) -> str:
    """Why there is not room: the bytes still to fetch, the margin kept free beside them (``DISK_MARGIN``: said,
    else "needs 13.1 MB, 41.9 MB is free" reads as a wrong sum), what is free. The CLI and the window say this."""
    return (f"not enough free disk space for {repo_id}: it needs {size_text(need)} more in {where}, plus "
            f"{size_text(DISK_MARGIN)} kept free beside it (the cache's small files, the file system's own needs): "
            f"{size_text(need + DISK_MARGIN)} in all, and {size_text(free)} is free")


def plan_download(repo_id: str, revision: str | None = None, *, endpoint: str | None = None,
                  cache_dir: Path | None = None, token: str | None = None) -> DownloadPlan:
    """Ask the hub what ``repo_id`` at ``revision`` (default main) holds and read its config.json; refused (see the
    module docstring) before any weight is fetched."""
    repo_id, revision = check_repo_id(repo_id), (revision or "main").strip()
    if offline_now():
        raise DownloadRefused("offline", "offline mode is on (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set): unset "
                                         "it to download")
    ep = (endpoint or endpoint_now()).rstrip("/")
    from huggingface_hub import HfApi, hf_hub_url
    from huggingface_hub.utils import get_session, hf_raise_for_status

    try:
        info = HfApi(endpoint=ep, token=token).model_info(repo_id, revision=revision, files_metadata=True)
    except Exception as exc:
        raise refusal(exc, repo_id, ep) from None
    gated, commit = bool(info.gated), str(info.sha or revision)
    siblings = {s.rfilename: s for s in (info.siblings or []) if "/" not in s.rfilename}
    weights = sorted(n for n in siblings if n.endswith(".safetensors"))
    if "model.safetensors" in weights:
        weights = ["model.safetensors"]  # a single file beside shards or variants: the one the loader opens
    elif any(n.endswith(".safetensors.index.json") for n in siblings):
        weights = [n for n in weights if n.startswith("model-")] + sorted(
            n for n in siblings if n.endswith(".safetensors.index.json"))
    if not weights:
        others = sorted(n for n in siblings if n.endswith((".bin", ".pt", ".pth", ".h5", ".msgpack", ".gguf")))
        raise DownloadRefused("no_safetensors", f"{repo_id} has no .safetensors weights (it has "
                                                f"{', '.join(others) or 'no weight files'}): this app reads "
                                                "safetensors only, never pickled files; nothing was downloaded")
    if "config.json" not in siblings:
        raise DownloadRefused("unsupported", f"{repo_id} has no config.json: not a transformers model; nothing was "
                                             "downloaded")
    if "tokenizer.json" not in siblings:  # the loader reads text through tokenizer.json only: refused before a byte
        others = sorted(n for n in siblings if n in TOKENIZER_FILES and n != "generation_config.json")
        has = f" (it has {', '.join(others)}, which this app does not read)" if others else ""
        raise DownloadRefused("unsupported", f"{repo_id} has no tokenizer.json{has}: the app could not turn text "
                                             "into its tokens, so the model could not be opened; nothing was "
                                             "downloaded")
    try:
        r = get_session().get(hf_hub_url(repo_id, "config.json", revision=commit, endpoint=ep),
                              headers=hub_headers(token), timeout=30)
        hf_raise_for_status(r)
    except Exception as exc:
        raise refusal(exc, repo_id, ep, gated) from None
    try:
        cfg = json.loads(r.content)
        assert isinstance(cfg, dict)
    except (ValueError, AssertionError):
        raise DownloadRefused("unsupported", f"{repo_id}/config.json is not a JSON object") from None
    model_type = check_family(cfg, f"{repo_id}/config.json")
    names = [*weights, *(n for n in TOKENIZER_FILES if n in siblings)]
    files = tuple(_remote(n, siblings[n]) for n in names)
    return DownloadPlan(repo_id, revision, str(r.headers.get("X-Repo-Commit") or commit), ep,
                        Path(cache_dir) if cache_dir is not None else hub_cache_dir(), files, model_type, r.content,
                        etag_of(r.headers) or hashlib.sha1(r.content).hexdigest(), token)


def _remote(name: str, sibling: Any) -> RemoteFile:
    lfs = sibling.lfs
    size = sibling.size if sibling.size is not None else (lfs.size if lfs is not None else None)
    return RemoteFile(name, size, lfs.sha256 if lfs is not None else None)


class _Tally:
    def __init__(self, done: int, total: int) -> None:
        self.done, self.total, self.fetched = done, total, 0


def _fetch(url: str, partial: Path, remote: RemoteFile, headers: dict[str, str],
           tally: _Tally) -> Iterator[DownloadProgress]:
    """Stream ``url`` into ``partial``, from where an earlier call stopped; the file stays when it stops."""
    from huggingface_hub import constants
    from huggingface_hub.utils import hf_raise_for_status, http_stream_backoff

    size = remote.size
    start = partial.stat().st_size if partial.exists() else 0
    if size is not None and start > size:
        partial.unlink()
        tally.done -= start
        start = 0
    if size is not None and start == size:
        return
    if start:
        headers = {**headers, "Range": f"bytes={start}-"}
    with http_stream_backoff("GET", url, headers=headers, timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT,
                             retry_on_exceptions=(), retry_on_status_codes=(408, 429)) as response:
        hf_raise_for_status(response)
        if start and response.status_code != 206:  # the server sent the whole file again: start over
            tally.done -= start
            start = 0
        got = start
        with open(partial, "ab" if start else "wb") as f:
            for chunk in response.iter_bytes():
                f.write(chunk)
                got += len(chunk)
                tally.done += len(chunk)
                tally.fetched += len(chunk)
                if size is not None and got > size:
                    break
                yield DownloadProgress(remote.name, got, size or got, tally.done, tally.total, tally.fetched)


def iter_download(plan: DownloadPlan) -> Iterator[DownloadProgress | DownloadResult]:
    """Fetch what ``plan`` names that the cache lacks: progress as bytes arrive, the ``DownloadResult`` last.
    Refused (``DownloadRefused``) for too little disk space before the first byte, for a broken connection, a
    truncated or corrupt file after it (a partial file stays for the next call, unless corrupt)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    ep, repo_id = plan.endpoint, plan.repo_id
    blobs = plan.storage / "blobs"
    headers = hub_headers(plan.token)
    metas: list[tuple[RemoteFile, str, str]] = []  # (file, etag, url)
    for remote in plan.files:
        try:
            meta = get_hf_file_metadata(hf_hub_url(repo_id, remote.name, revision=plan.commit, endpoint=ep),
                                        token=plan.token, endpoint=ep)
        except Exception as exc:
            raise refusal(exc, repo_id, ep, True) from None
        size = meta.size if meta.size is not None else remote.size
        metas.append((RemoteFile(remote.name, size, remote.sha256), str(meta.etag), str(meta.location)))
    have = {m[0].name: bytes_on_disk(blobs, m[1]) for m in metas}
    total = sum(m[0].size or 0 for m in metas) + len(plan.config)
    need = sum(max((m[0].size or 0) - have[m[0].name], 0) for m in metas)
    free = free_bytes(plan.cache_dir)
    if need and free < need + DISK_MARGIN:
        raise DownloadRefused("disk", disk_refusal(repo_id, need, free, plan.cache_dir))
    tally = _Tally(sum(min(have[m[0].name], m[0].size or 0) for m in metas), total)
    yield DownloadProgress("", 0, 0, tally.done, tally.total, 0)
    blobs.mkdir(parents=True, exist_ok=True)
    for remote, etag, url in metas:
        blob, partial = blobs / etag, blobs / f"{etag}.incomplete"
        if blob.is_file():
            continue
        same_host = url.startswith(ep + "/")
        try:
            yield from _fetch(url, partial, remote, headers if same_host else
                              {k: v for k, v in headers.items() if k.lower() != "authorization"}, tally)
        except DownloadRefused:
            raise
        except Exception as exc:
            if is_transport_error(exc):
                kept = partial.stat().st_size if partial.exists() else 0
                raise DownloadRefused("network", f"the connection broke during {remote.name} ({size_text(kept)} of "
                                                 f"{size_text(remote.size or 0)} kept): run it again to fetch the "
                                                 "rest") from None
            raise refusal(exc, repo_id, ep, True) from None
        got = partial.stat().st_size if partial.exists() else 0
        if remote.size is not None and got < remote.size:
            raise DownloadRefused("truncated", f"{remote.name} arrived truncated ({got:,} of {remote.size:,} bytes):"
                                               " refused; run it again to fetch the rest")
        if (remote.size is not None and got > remote.size) or (remote.sha256 and sha256_of(partial) != remote.sha256):
            partial.unlink()
            raise DownloadRefused("corrupt", f"{remote.name} arrived corrupt (its size or SHA-256 differs from the "
                                             "hub's): refused and removed; run it again")
        os.replace(partial, blob)
    config_blob = blobs / plan.config_etag
    if not config_blob.is_file():
        tmp = blobs / f"{plan.config_etag}.incomplete"
        tmp.write_bytes(plan.config)
        os.replace(tmp, config_blob)
    for remote, etag, _url in metas:
        link_blob(blobs / etag, plan.folder / remote.name)
    link_blob(config_blob, plan.folder / "config.json")  # last: a snapshot with a config.json is whole
    if plan.revision != plan.commit:
        ref = plan.storage / "refs" / plan.revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(plan.commit)
    yield DownloadResult(repo_id, plan.revision, plan.commit, plan.folder, total, tally.fetched)


def download(repo_id: str, revision: str | None = None, *,
             on_progress: Callable[[DownloadProgress], None] | None = None, endpoint: str | None = None,
             cache_dir: Path | None = None, token: str | None = None) -> DownloadResult:
    """``plan_download`` then ``iter_download``, progress to ``on_progress``; the result (or ``DownloadRefused``)."""
    plan = plan_download(repo_id, revision, endpoint=endpoint, cache_dir=cache_dir, token=token)
    for item in iter_download(plan):
        if isinstance(item, DownloadResult):
            return item
        if on_progress is not None:
            on_progress(item)
    raise DownloadRefused("network", f"{repo_id}: the download ended without its files")  # pragma: no cover
