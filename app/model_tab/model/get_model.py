"""``ModelFetch``: "Get a model" without Qt: one download from the Hugging Face hub at a time, off the caller's thread
(an injected ``Runner``), with its progress, Cancel, and the refusal said in words.

States: ``idle``, ``working`` (asking the hub, then fetching), ``cancelling`` (Cancel pressed; the worker stops at
the next piece of data and keeps what arrived), ``cancelled``, ``refused`` (``message`` says why: no network, a
gated licence, no safetensors, an unsupported family, too little disk…), ``done`` (``path``: the snapshot folder,
now in the Hugging Face cache, where the Model tab's list finds it). Download again after a cancel or a broken
connection resumes: only the missing bytes are fetched. Nothing touches the network before ``start``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import Runner, ThreadRunner

STATES = ("idle", "working", "cancelling", "cancelled", "refused", "done")
EVERY_S = 0.1
"""At most one progress item per this many seconds crosses to the caller's thread (a 500 MB file is ~8,000 reads)."""


class FetchEvents(ModelEvents):
    state = event()  # state, message, path
    progress = event()  # done, total, file


@dataclass(frozen=True)
class _Planned:
    files: tuple[str, ...]
    total: int
    commit: str
    model_type: str


@dataclass(frozen=True)
class _Progress:
    file: str
    done: int
    total: int
    fetched: int


@dataclass(frozen=True)
class _Ended:
    state: str
    message: str
    path: Path | None = None


class ModelFetch(Evented):
    """See the module docstring."""

    events: FetchEvents

    def __init__(self, runner: Runner | None = None) -> None:
        super().__init__()
        self.runner: Runner = runner if runner is not None else ThreadRunner()
        self.state = "idle"
        self.repo_id = ""
        self.revision = ""
        self.message = ""
        self.file = ""
        self.files: tuple[str, ...] = ()
        self.done = 0
        self.total = 0
        self.fetched = 0
        self.path: Path | None = None
        self._job = 0
        self._stop = threading.Event()
        self._handles: list[object] = []

    @property
    def busy(self) -> bool:
        return self.state in ("working", "cancelling")

    def start(self, repo_id: str, revision: str = "") -> None:
        """Download ``repo_id`` (at ``revision``, default main) off this thread; refused at once while one runs."""
        if self.busy:
            self._end("refused", "A download is under way: cancel it first.", keep_state=True)
            return
        repo, rev = str(repo_id).strip(), str(revision).strip() or "main"
        if not repo:
            self._end("refused", "Pick a model from the list or type a repository id (ORG/NAME).")
            return
        self._job += 1
        job, stop = self._job, threading.Event()
        self._stop = stop
        self.repo_id, self.revision, self.path, self.message = repo, rev, None, ""
        self.state, self.file, self.files, self.done, self.total, self.fetched = "working", "", (), 0, 0, 0
        self._set_status(f"Asking the hub about {repo}…")
        self._announce("state", "progress")

        def work() -> Iterator[object]:
            from attention_core.pretrained.download import DownloadResult, iter_download, plan_download
            from attention_core.pretrained.download.hub import DownloadRefused

            try:
                plan = plan_download(repo, rev)
                yield _Planned(tuple(f.name for f in plan.files), plan.total_bytes, plan.commit, plan.model_type)
                last = 0.0
                for item in iter_download(plan):
                    if stop.is_set():  # the generator closes here: the partial file stays for the next time
                        yield _Ended("cancelled", "")
                        return
                    if isinstance(item, DownloadResult):
                        yield _Ended("done", f"{item.repo_id} is in the Hugging Face cache ({item.fetched:,} bytes "
                                             "fetched).", item.path)
                        return
                    now = time.monotonic()
                    if now - last >= EVERY_S or item.done >= item.total:
                        last = now
                        yield _Progress(item.file, item.done, item.total, item.fetched)
            except DownloadRefused as exc:
                yield _Ended("refused", str(exc))
            except OSError as exc:
                yield _Ended("refused", f"Cannot write into the Hugging Face cache: {exc}")

        def on_item(item: object) -> None:
            if job == self._job:
                self._on_item(item)

        def on_done(reason: str) -> None:
            if job == self._job and self.busy:
                self._end("cancelled" if self.state == "cancelling" else "refused",
                          "" if not reason.startswith("error") else reason.strip().splitlines()[-1])

        self._handles = [h for h in self._handles if getattr(h, "is_alive", lambda: False)()]
        self._handles.append(self.runner.start(work, on_item, on_done))

    def cancel(self) -> None:
        """Stop the download under way at its next piece of data; what arrived is kept for the next try."""
        if self.state != "working":
            return
        self._stop.set()
        self.state = "cancelling"
        self._set_status("Cancelling…")
        self._announce("state")

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """Scripts and tests: deliver results on this thread until no download runs."""
        deadline = time.monotonic() + timeout_s
        while self.busy:
            pump = getattr(self.runner, "pump", None)
            if pump is None or time.monotonic() > deadline:
                return False
            pump(0.05)
        return True

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """The window closes: stop the download and wait for its thread."""
        self._stop.set()
        self._job += 1
        for handle in self._handles:
            wait = getattr(handle, "wait", None)
            if wait is not None:
                wait(timeout_s)
        self._handles.clear()

    # ------------------------------------------------------------------ results, on this thread
    def _on_item(self, item: object) -> None:
        if isinstance(item, _Planned):
            self.files, self.total = item.files, item.total
            self._set_status(f"{self.repo_id} ({item.model_type}): fetching {', '.join(item.files)}…")
            self._announce("progress")
        elif isinstance(item, _Progress):
            self.file, self.done, self.total, self.fetched = item.file, item.done, item.total, item.fetched
            self._announce("progress")
        elif isinstance(item, _Ended):
            if item.state == "done":
                self.done = self.total
            self._end(item.state, item.message, path=item.path)

    def _end(self, state: str, message: str, path: Path | None = None, keep_state: bool = False) -> None:
        if not keep_state:
            self.state, self.path = state, path
        self.message = message or ("Cancelled: what arrived is kept; Download again fetches only the rest."
                                   if state == "cancelled" else "")
        self._set_status(self.message)
        self._announce("state", "progress")
