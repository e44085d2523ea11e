"""A Hugging Face hub on 127.0.0.1 for the download tests: exactly the endpoints ``huggingface_hub`` calls, never the
real hub. ``GET /api/models/REPO/revision/REV`` (the files with their sizes, blob ids and LFS hashes), ``HEAD`` and
``GET /REPO/resolve/REV/FILE`` with ``ETag``, ``X-Repo-Commit``, ``Content-Length`` and ``Range`` (206). It counts the
bytes it serves per file and records every request, so a test can say what was fetched, and can be told to send
slowly (``delay`` per ``piece``), to send a truncated body, to break the connection, or to refuse a gated repository.

``tiny_gpt2_files()``: a random 2-layer GPT-2 saved with transformers (safetensors) and a byte-level BPE tokenizer,
as a repository's files (plus a ``pytorch_model.bin`` the download must never ask for).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import socket
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


@dataclass
class FakeRepo:
    files: dict[str, bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    gated: int | None = None  # 401 or 403: the files are refused as the hub refuses a gated licence not accepted
    lfs: tuple[str, ...] = (".safetensors", ".bin")

    def is_lfs(self, name: str) -> bool:
        return name.endswith(self.lfs)

    def etag(self, name: str) -> str:
        data = self.files[name]
        return hashlib.sha256(data).hexdigest() if self.is_lfs(name) else hashlib.sha1(data).hexdigest()


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    served: Counter = field(default_factory=Counter)  # (repo, file) -> body bytes sent
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range)
    delay: float = 0.0
    piece: int = 16 * 1024
    truncate: set[str] = field(default_factory=set)  # files whose body stops halfway (a whole, short response)
    break_after: dict[str, int] = field(default_factory=dict)  # file -> bytes sent before the connection is cut
    corrupt: set[str] = field(default_factory=set)  # files served with their last byte changed
    bodies: list[tuple[str, str | None, int]] = field(default_factory=list)  # (file, Range, bytes sent): each GET

    def __post_init__(self) -> None:
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            owner = hub

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    def fetched(self, name: str) -> int:
        return sum(n for (_repo, f), n in self.served.items() if f == name)

    def sent_by_last_get(self, name: str) -> tuple[str | None, int]:
        """The Range header of the last GET of ``name`` and how many bytes its response carried (once it ended)."""
        return next((rng, n) for f, rng, n in reversed(self.bodies) if f == name)

    def asked(self, name: str) -> list[tuple[str, str, str | None]]:
        return [r for r in self.requests if r[1].endswith("/" + name)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FakeHub

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._route(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._route(head=True)

    def _route(self, head: bool) -> None:
        hub = self.owner
        path = urlsplit(self.path).path
        hub.requests.append(("HEAD" if head else "GET", path, self.headers.get("Range")))
        api = re.match(r"^/api/models/(.+?)/revision/([^/]+)$", path)
        if api:
            return self._info(unquote(api.group(1)), unquote(api.group(2)), head)
        res = re.match(r"^/(.+?)/resolve/([^/]+)/(.+)$", path)
        if res:
            return self._file(unquote(res.group(1)), unquote(res.group(2)), unquote(res.group(3)), head)
        self._send(404, b"not found", head=head)

    def _repo(self, repo_id: str, revision: str, head: bool) -> FakeRepo | None:
        repo = self.owner.repos.get(repo_id)
        if repo is None:
            self._send(404, b"{}", {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}, head)
            return None
        if revision not in ("main", repo.commit):
            self._send(404, b"{}", {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"}, head)
            return None
        return repo

    def _info(self, repo_id: str, revision: str, head: bool) -> None:
        repo = self._repo(repo_id, revision, head)
        if repo is None:
            return
        siblings = []
        for name, data in repo.files.items():
            s: dict[str, object] = {"rfilename": name, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()}
            if repo.is_lfs(name):
                s["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(s)
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": repo.commit, "private": False,
                           "gated": "manual" if repo.gated else False, "siblings": siblings}).encode()
        self._send(200, body, {"Content-Type": "application/json"}, head)

    def _file(self, repo_id: str, revision: str, name: str, head: bool) -> None:
        hub = self.owner
        repo = self._repo(repo_id, revision, head)
        if repo is None:
            return
        if repo.gated:
            self._send(repo.gated, b"{}", {"X-Error-Code": "GatedRepo",
                                           "X-Error-Message": "Access to this model is restricted"}, head)
            return
        if name not in repo.files:
            self._send(404, b"{}", {"X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found"}, head)
            return
        data = repo.files[name]
        if name in hub.corrupt:
            data = data[:-1] + bytes([data[-1] ^ 1])
        headers = {"ETag": f'"{repo.etag(name)}"', "X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes"}
        if repo.is_lfs(name):
            headers |= {"X-Linked-Etag": f'"{repo.etag(name)}"', "X-Linked-Size": str(len(data))}
        if head:
            self._send(200, data, headers, head=True)
            return
        start, code = 0, 200
        ask = re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))
        if ask:
            start, code = int(ask.group(1)), 206
            if start >= len(data):
                self._send(416, b"", headers)
                return
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        body = data[start:]
        if name in hub.truncate:
            body = body[: len(body) // 2]
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent = 0
        try:
            sent = self._body(hub, repo_id, name, body)
        finally:
            hub.bodies.append((name, self.headers.get("Range"), sent))

    def _body(self, hub: FakeHub, repo_id: str, name: str, body: bytes) -> int:
        cut = hub.break_after.get(name)
        sent = 0
        for i in range(0, len(body), hub.piece):
            part = body[i:i + hub.piece]
            if cut is not None and sent + len(part) > cut:
                part = part[: cut - sent]
            try:
                self.wfile.write(part)
                self.wfile.flush()
            except OSError:  # the client went away (a cancel): what it got is counted
                return sent
            sent += len(part)
            hub.served[(repo_id, name)] += len(part)
            if cut is not None and sent >= cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return sent
            if hub.delay:
                time.sleep(hub.delay)
        return sent


def closed_port() -> str:
    """An endpoint on 127.0.0.1 where nothing listens: no network."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


@functools.lru_cache(maxsize=1)
def tiny_gpt2_files() -> dict[str, bytes]:
    """A random GPT-2 (2 layers, 2 heads, d_model 32) saved by transformers as safetensors, its tokenizer.json, and
    files the download must leave alone (pytorch_model.bin, README.md)."""
    import torch
    import transformers as T
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["The quick brown fox jumps over the lazy dog."] * 8, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    torch.manual_seed(0)
    model = T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=64, vocab_size=300,
                                           bos_token_id=0, eos_token_id=0))
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        tok.save(str(Path(d) / "tokenizer.json"))
        files = {p.name: p.read_bytes() for p in sorted(Path(d).iterdir()) if p.is_file()}
    files["pytorch_model.bin"] = b"\x80pickle: never fetched" * 64
    files["README.md"] = b"# tiny-gpt2\n"
    return files
