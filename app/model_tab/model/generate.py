"""``GenerateSession``: the Model tab's Generate view without Qt — a real model writing one token at a time over
its key/value cache. Scripts reach it as ``w.inspect.tab.generate.model`` (the view makes it on the tab's
``InspectSession``).

It holds the prompt, the sampling settings (greedy, temperature, top-k, top-p, seed), the cache policy (``full``,
``window``, ``sinks``), the library's ``Decoder`` (``PretrainedModel.decoder``) and the ``GenerationStep`` of every
token made so far (``steps``). ``run(n)`` makes ``n`` tokens through the session's ``Runner`` (off the GUI thread
in the window); ``cancel()`` stops it before its next token and keeps the tokens made. ``step()`` is ``run(1)``.
``undo()`` takes back the newest token (the decoder restores its cache and its random state).

Sampling and the cache policy change mid-way without restarting: the decoder takes them for its next token (while a
run is under way they wait for the worker, which applies them between two tokens: the decoder is only ever touched
by one thread). A new prompt, a new seed (it defines the whole draw) or a new model starts again from the prompt.
Bad values raise ``ValueError`` with the reason and change nothing (the view shows it next to its control).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.common.evented import Evented, ModelEvents, event

if TYPE_CHECKING:
    from app.model_tab.model.session import InspectSession

CACHES = ("full", "window", "sinks")
MAX_RUN = 1024
"""The most tokens one Run makes (the model's context usually ends it first)."""
DEFAULT_WINDOW = 16
DEFAULT_SINKS = 4


class GenerateEvents(ModelEvents):
    steps = event()  # a token made or taken back, the generation started again
    settings = event()  # the prompt, sampling or the cache policy
    running = event()  # a run started, moved on or ended


@dataclass(frozen=True)
class _Started:
    decoder: Any


@dataclass(frozen=True)
class _RunStopped:
    """The worker's last item: why the run stopped before its count (the decoder is done, or an error)."""

    reason: str


def parse_optional(value: Any, kind: type, what: str) -> Any:
    """``value`` as ``kind`` (int or float), or None for "", "off", "none" or None; ValueError saying why not."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "off", "none")):
        return None
    try:
        out = kind(str(value).strip()) if isinstance(value, str) else kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if kind is int and isinstance(value, float) and value != int(value):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    return out


class GenerateSession(Evented):
    """See the module docstring. ``host``: the Model tab's ``InspectSession`` (its model, its runner, its text)."""

    events: GenerateEvents

    def __init__(self, host: InspectSession) -> None:
        super().__init__()
        self.host = host
        self.prompt = ""  # "" = the Model tab's text (what the Heads view traced)
        self.greedy = True
        self.temperature = 1.0  # used when greedy is off
        self.top_k: int | None = None
        self.top_p: float | None = None
        self.seed = 0
        self.cache = "full"
        self.window = DEFAULT_WINDOW
        self.sinks = DEFAULT_SINKS
        self.decoder: Any = None
        self.steps: list[Any] = []
        self.prompt_ids: list[int] = []
        self.running = False
        self.run_total = self.run_done = 0
        self.ended = ""  # why the last run stopped early ("" when it made every token asked)
        self.status = "Open a model, then Step or Run to let it write."
        self._cancel = False
        self._job = 0
        self._pending: dict[str, Any] = {}  # settings the worker applies before its next token
        self._lock = threading.Lock()
        self._for_model: Any = None
        self._handles: list[Any] = []
        host.events.load.connect(self._follow_model)

    # ================================================================== reading
    @property
    def model(self) -> Any:
        return self.host.model

    @property
    def refusal(self) -> str:
        """Why the open model cannot write (an encoder predicts masked tokens), or "" when it can or none is open."""
        if self.model is None:
            return ""
        from attention_core.pretrained.generate import cannot_generate

        return cannot_generate(self.model)

    @property
    def effective_prompt(self) -> str:
        """What the model is given: the prompt typed here, else the Model tab's (traced) text."""
        return self.prompt or self.host.traced_text or self.host.text

    @property
    def cancelling(self) -> bool:
        return self.running and self._cancel

    def sampling(self) -> dict[str, Any]:
        """The decoder's sampling arguments now (greedy: temperature 0)."""
        return {"temperature": 0.0 if self.greedy else self.temperature, "top_k": self.top_k, "top_p": self.top_p}

    def cache_policy(self) -> dict[str, Any]:
        return {"cache": self.cache, "window": None if self.cache == "full" else self.window, "sinks": self.sinks}

    def ids(self) -> list[int]:
        """Every token id so far: the prompt's, then the ones made."""
        return [*self.prompt_ids, *(int(s.id) for s in self.steps)]

    def tokens(self) -> list[str]:
        """Every token so far as the model shows tokens (spaces as ␣)."""
        return list(self.model.token_strings(self.ids())) if self.model is not None and self.prompt_ids else []

    def text(self) -> str:
        """The prompt and the tokens made, decoded."""
        if self.model is None or not self.prompt_ids:
            return self.effective_prompt
        return str(self.model.tokenizer.decode(self.ids()))

    # ================================================================== settings
    def set_prompt(self, text: str) -> None:
        """A new prompt: the generation starts again from it (the next Step or Run)."""
        if not str(text).strip():
            raise ValueError("type a prompt: the model needs at least one token to start from")
        self._refuse_while_running("change the prompt")
        self.prompt = str(text)
        self._restart("settings")

    def set_greedy(self, greedy: bool) -> None:
        self.greedy = bool(greedy)
        self._push_sampling()

    def set_temperature(self, value: Any) -> None:
        """> 0 (0 is greedy: use the greedy switch); it applies from the next token."""
        t = parse_optional(value, float, "the temperature")
        if t is None or not math.isfinite(t) or t <= 0:
            raise ValueError("the temperature must be a number above 0 (0 is greedy: tick Greedy instead)")
        self.temperature = float(t)
        self._push_sampling()

    def set_top_k(self, value: Any) -> None:
        """A whole number ≥ 1, or off ("" / None / 0)."""
        k = parse_optional(value, int, "top-k")
        if k is not None and k < 0:
            raise ValueError(f"top-k must be 1 or more (or empty: off), got {k}")
        self.top_k = k or None
        self._push_sampling()

    def set_top_p(self, value: Any) -> None:
        """In (0, 1], or off ("" / None / 1)."""
        p = parse_optional(value, float, "top-p")
        if p is not None and not (math.isfinite(p) and 0 < p <= 1):
            raise ValueError(f"top-p must be above 0 and at most 1 (or empty: off), got {p:g}")
        self.top_p = None if p is None or p == 1 else float(p)
        self._push_sampling()

    def set_seed(self, value: Any) -> None:
        """A whole number ≥ 0; the seed defines the whole draw, so the generation starts again from the prompt."""
        s = parse_optional(value, int, "the seed")
        if s is None or s < 0:
            raise ValueError("the seed must be a whole number, 0 or more")
        self._refuse_while_running("change the seed")
        if s != self.seed:
            self.seed = int(s)
            self._restart("settings")

    def set_cache(self, cache: str, window: int | str | None = None, sinks: int | str | None = None) -> None:
        """The cache policy for the next token: ``full``, ``window`` (the last ``window`` positions) or ``sinks``
        (the first ``sinks`` and the last ``window − sinks``); the tokens made so far stay."""
        if cache not in CACHES:
            raise ValueError(f"the cache must be one of {', '.join(CACHES)}, got {cache!r}")
        w = self.window if window is None else parse_optional(window, int, "the window")
        s = self.sinks if sinks is None else parse_optional(sinks, int, "the sinks")
        if w is None or w < 1:
            raise ValueError("the window must be 1 position or more")
        if s is None or s < 0:
            raise ValueError("the sinks must be 0 or more")
        if cache == "sinks" and s >= w:
            raise ValueError(f"the sinks ({s}) must be fewer than the window ({w}): the window holds the sinks and "
                             "the most recent positions")
        self.cache, self.window, self.sinks = cache, int(w), int(s)
        self._push("cache", self.cache_policy())

    # ================================================================== commands
    def step(self) -> bool:
        """One token (off this thread); False (the status says why) when none can be made now."""
        return self.run(1)

    def run(self, n: Any) -> bool:
        """``n`` tokens off this thread, each delivered as it is made; False (the status says why) when nothing
        starts. ValueError for a count that is not 1 … ``MAX_RUN``."""
        count = parse_optional(n, int, "the number of tokens")
        if count is None or not 1 <= count <= MAX_RUN:
            raise ValueError(f"the number of tokens must be 1 to {MAX_RUN}")
        model = self.model
        if model is None or self.host.load_state == "loading":
            self._set_status("Open a model first (the list on the left).")
            return False
        if self.refusal:
            self._set_status(self.refusal)
            return False
        if self.running:
            self._set_status("A run is under way: Cancel it first.")
            return False
        prompt = self.effective_prompt
        if not prompt.strip():
            self._set_status("Type a prompt first.")
            return False
        self._job += 1
        job, decoder, sampling, policy, seed = self._job, self.decoder, self.sampling(), self.cache_policy(), self.seed
        with self._lock:
            self._pending.clear()
        self._cancel, self.running, self.ended = False, True, ""
        self.run_total, self.run_done = count, 0
        self._set_status(f"Writing {count} token{'s' if count != 1 else ''} with {model.name}…")
        self._announce("running")
        t0 = time.perf_counter()

        def work() -> Iterator[object]:
            from attention_core.pretrained import PretrainedError

            dec = decoder
            if dec is None:
                try:
                    dec = model.decoder(prompt, seed=seed, **sampling, **policy)
                except (PretrainedError, ValueError) as exc:
                    yield _RunStopped(f"error: {exc}")
                    return
                yield _Started(dec)
            for _ in range(count):
                if self._cancel or job != self._job:
                    return
                with self._lock:
                    pending, self._pending = self._pending, {}
                try:
                    if "sampling" in pending:
                        dec.set_sampling(**pending["sampling"])
                    if "cache" in pending:
                        dec.set_cache(**pending["cache"])
                    made = dec.step()
                except (PretrainedError, ValueError) as exc:
                    yield _RunStopped(f"error: {exc}")
                    return
                if made is None:
                    yield _RunStopped(str(dec.generation.stopped or "done"))
                    return
                yield made

        def on_item(item: object) -> None:
            if job == self._job:
                self._on_item(item, t0)

        def on_done(reason: str) -> None:
            if job == self._job:
                self._finish(reason, t0)

        self._handles = [h for h in self._handles if h.is_alive()]
        self._handles.append(self.host.runner.start(work, on_item, on_done))
        return True

    def cancel(self) -> None:
        """Stop the run before its next token; the tokens made stay."""
        if self.running and not self._cancel:
            self._cancel = True
            self._set_status("Cancelling after the token being made…")
            self._announce("running")

    def undo(self) -> bool:
        """Take back the newest token (cache and random state as they were before it); False when there is none
        or a run is under way (the status says why)."""
        if self.running:
            self._set_status("A run is under way: Cancel it before taking a token back.")
            return False
        if not self.steps or self.decoder is None:
            self._set_status("No generated token to take back.")
            return False
        self.decoder.undo()
        gone = self.steps.pop()
        self.ended = ""
        self._set_status(f"Took back '{gone.token}' (position {gone.query_position + 1}).")
        self._announce("steps")
        return True

    def restart(self) -> None:
        """Back to the prompt alone (the next Step or Run starts from it)."""
        self._refuse_while_running("start again")
        self._restart("steps")

    def shutdown(self, timeout_s: float = 30.0) -> None:
        self._job += 1
        self._cancel = True
        for handle in self._handles:
            handle.wait(timeout_s)
        self._handles.clear()

    def wait_idle(self, timeout_s: float = 120.0) -> bool:
        """Scripts and tests: deliver results on this thread until no run is under way."""
        deadline = time.perf_counter() + timeout_s
        while self.running:
            pump = getattr(self.host.runner, "pump", None)
            if pump is None or time.perf_counter() > deadline:
                return False
            pump(0.05)
        return True

    # ================================================================== plumbing
    def _refuse_while_running(self, what: str) -> None:
        if self.running:
            raise ValueError(f"a run is under way: Cancel it to {what}")

    def _restart(self, *names: str) -> None:
        self._job += 1
        self.decoder, self.steps, self.prompt_ids, self.ended = None, [], [], ""
        self.running = False
        self._announce(*names, "steps", "running")

    def _push_sampling(self) -> None:
        self._push("sampling", self.sampling())

    def _push(self, what: str, kwargs: dict[str, Any]) -> None:
        """Hand new settings to the decoder: now when idle, else to the worker for its next token."""
        if self.running:
            with self._lock:
                self._pending[what] = kwargs
        elif self.decoder is not None:
            (self.decoder.set_sampling if what == "sampling" else self.decoder.set_cache)(**kwargs)
        self._announce("settings")

    def _on_item(self, item: object, t0: float) -> None:
        if isinstance(item, _Started):
            self.decoder = item.decoder
            self.prompt_ids = [int(i) for i in item.decoder.generation.prompt_ids]
            self._announce("steps")
        elif isinstance(item, _RunStopped):
            self.ended = item.reason
        else:
            self.steps.append(item)
            self.run_done += 1
            self._announce("steps", "running")

    def _finish(self, reason: str, t0: float) -> None:
        self.running = False
        seconds = time.perf_counter() - t0
        if reason.startswith("error"):
            self.ended = "error: " + reason.strip().splitlines()[-1]
        made = self.run_done
        rate = f" ({made / seconds:.1f} tokens/s)" if made and seconds > 0 else ""
        if self.ended.startswith("error"):
            self._set_status(f"Could not write: {self.ended[len('error: '):]}")
        elif self.ended:
            why = {"eos": "it wrote its end-of-text token",
                   "context": f"its context is full ({self.model.info.max_positions if self.model else '?'} "
                              "positions)"}.get(self.ended, "it cannot write more")
            self._set_status(f"{made} token{'s' if made != 1 else ''} made{rate}{self._in_all()}; the model stopped: "
                             f"{why}.")
        elif self._cancel:
            self._set_status(f"Cancelled after {made} of {self.run_total} tokens{rate}; they stay.")
        else:
            self._set_status(f"{made} token{'s' if made != 1 else ''} made{rate}{self._in_all()}. Ctrl+Z takes the "
                             "newest back.")
        self._cancel = False
        self._announce("running", "steps")

    def _in_all(self) -> str:
        """", 6 in all" when earlier runs made tokens too: this run's count alone reads as the whole text's."""
        return f", {len(self.steps)} in all" if len(self.steps) != self.run_done else ""

    def _follow_model(self) -> None:
        """A new model: the generation starts again (the prompt typed here is kept)."""
        if self.model is self._for_model:
            return
        self._for_model = self.model
        if self.model is not None:
            self.status = self.refusal or "Step or Run to let the model write."
        self._restart("settings", "status")
