"""``CauseAnalysis``: the Model tab's Cause view without Qt — what a prediction depends on, by reading and
intervening on the loaded model (``attention_core.pretrained``'s logit lens, direct attribution, activation
patching and knockout), on the ``InspectSession`` (``session.cause``; scripts: ``w.inspect.model.cause``).

- **Lens** (``lens``): the traced text's half-layers unembedded at the position shown (the token hovered in the
  strip, else the last), recomputed when the text, the model or that position changes, while the view is shown;
  ``set_lens_target`` picks the token whose probability and rank are drawn through the layers ("" = the model's
  own top prediction). A string that is not exactly one token is refused (``lens_error``), the old target kept.
- **Attribution** (``attribution``): logit(target) − logit(foil) at that position split into embed, heads, MLPs
  and biases (``set_attr_tokens``, refused likewise). One run of each kind at a time (a hover's flurry waits).
- **Patch** (``patching``): ``set_corrupted`` (same token count as the traced text, else refused with the reason),
  ``set_patch_tokens``, ``set_sweep``; ``start_patch()`` runs the sweep off this thread with progress, and
  ``cancel_patch()`` keeps what it measured. A text or model change clears the result (its caption would lie).
- **Knockout** (``knockout``): ``set_knockout("5→1, 5→2", "all" | "1" | "1.2")`` blocks those query→key cells and
  compares the next-token distribution before and after; refused with the reason, old result kept.

Every result carries the text it was made for; ``*_caption`` says what is shown, for which text and position."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import RunHandle
from app.model_tab.model.cause_views import (
    SWEEPS,
    CauseHost,
    attribution_caption,
    knockout_caption,
    lens_caption,
    parse_edges,
    parse_layers,
    patch_caption,
)
from app.model_tab.model.detect_runs import ScanProgress, scan_items
from app.model_tab.model.views import off_text

__all__ = ["CauseAnalysis"]


class CauseEvents(ModelEvents):
    lens = event()  # the lens, its target, its error
    attribution = event()  # the attribution, its tokens, its error
    patch = event()  # the corrupted text, tokens, sweep, result, progress, running
    knockout = event()  # the cells, layers, result, error


@dataclass(frozen=True)
class _Done:
    """A run's result for ``what`` ("lens", "attribution", "knockout", "patch"), made for ``text`` and ``model``."""
    what: str
    result: Any
    text: str
    model: Any


@dataclass(frozen=True)
class _Error:  # a run's refusal or failure, said where that panel says its errors
    what: str
    message: str


class CauseAnalysis(Evented):
    """See the module docstring. ``host``: the ``InspectSession``."""

    events: CauseEvents

    def __init__(self, host: CauseHost) -> None:
        super().__init__()
        self.host = host
        self.shown = False
        self.lens: Any = None
        self.lens_text = ""
        self.lens_target = ""  # "" = the model's own top prediction at the lens's position
        self.lens_error = ""
        self.attribution: Any = None
        self.attr_text = ""
        self.attr_target, self.attr_foil, self.attr_error = "", "", ""
        self.corrupted, self.patch_target, self.patch_foil, self.sweep = "", "", "", "resid"
        self.patching: Any = None
        self.patch_texts = ("", "")  # (clean, corrupted) the result was made for
        self.patch_running, self.patch_progress, self.patch_error, self.patch_note = False, (0, 0), "", ""
        self.knock_edges, self.knock_layers = "", "all"
        self.knockout: Any = None
        self.knock_text = ""
        self.knock_error = ""
        self.status = "Open a model and trace a text."
        self._jobs = {"lens": 0, "attribution": 0, "knockout": 0, "patch": 0}
        self._cancel = False
        self._handles: list[RunHandle] = []
        self._running: dict[str, bool] = {}
        self._again: set[str] = set()  # kinds asked for again while one ran: started when it ends
        host.events.trace.connect(self._follow_trace)
        host.events.hovered.connect(self._follow_position)

    @property
    def position(self) -> int:
        """The position the lens and the attribution are about: the hovered token, else the last (an encoder's
        last [MASK]): the session's ``shown_position``."""
        return int(self.host.shown_position)

    @property
    def busy(self) -> bool:
        return self.patch_running or any(self._running.values()) or any(h.is_alive() for h in self._handles)

    def lens_caption(self) -> str:
        if self.lens is None:
            return ("Trace a text: the lens appears here." if self.host.trace is None else
                    "Computing the lens…" if self._running.get("lens") else "The lens follows the text while shown.")
        return lens_caption(self._model_words(), self.lens_text, self.lens)

    def attribution_caption(self) -> str:
        if self.attribution is None:
            return self.attr_error or ("Trace a text first." if self.host.trace is None else "Computing…")
        return attribution_caption(self._model_words(), self.attr_text, self.attribution)

    def patch_caption(self) -> str:
        if self.patching is None:
            return self.patch_note or ("Type a corrupted text with as many tokens as yours (e.g. another name in "
                                       "the same place), then press Patch.")
        return patch_caption(self._model_words(), *self.patch_texts, self.patching, self._token_name)

    def knockout_caption(self) -> str:
        if self.knockout is None:
            return "Name query→key cells (e.g. 5→1) and layers, then press Knock out."
        return knockout_caption(self._model_words(), self.knock_text, self.knockout, self.host.trace.tokens)

    def lens_curve(self) -> tuple[str, Any, Any] | None:
        """(token, probability per row, rank per row) of the lens's target, None without a lens."""
        if self.lens is None:
            return None
        token = self.lens_target or int(self.lens.top[-1][0][0])
        return self._token_name(token), self.lens.probs_of(token), self.lens.rank_of(token)

    def set_shown(self, shown: bool) -> None:
        """The Cause view is on screen (or not): while it is, the lens and the attribution follow the text."""
        self.shown = bool(shown)
        if self.shown:
            self._refresh()

    def set_lens_target(self, token: str) -> bool:
        """The token drawn through the layers ("" = the top prediction); refused (``lens_error``) unless one token."""
        ok, self.lens_error = self._check(token, "target")
        if ok:
            self.lens_target = str(token)
        self._announce("lens")
        return ok

    def set_attr_tokens(self, target: str, foil: str = "") -> bool:
        """Attribution's target and optional foil ("" target = the top prediction); refused with the reason, the
        old ones kept; the attribution is computed again."""
        self.attr_error = self._check(target, "target")[1] or self._check(foil, "foil")[1]
        if not self.attr_error:
            self.attr_target, self.attr_foil = str(target), str(foil)
            self._run("attribution")
        self._announce("attribution")
        return not self.attr_error

    def set_corrupted(self, text: str) -> bool:
        """The corrupted text: refused (``patch_error``) unless it has as many tokens as the traced text."""
        model, trace = self.host.model, self.host.trace
        if model is None or trace is None:
            self.patch_error = "Trace a text first: the corrupted text must match its tokens."
        else:
            try:
                n = len(model.ids_of(str(text))[0]) if str(text).strip() else 0
            except ValueError as exc:
                n, self.patch_error = -1, str(exc)
            if n == len(trace):
                self.corrupted, self.patch_error = str(text), ""
            elif n >= 0:
                self.patch_error = (f"the corrupted text has {n} tokens, yours has {len(trace)}: patching puts an "
                                    "activation of one position into the same position, so they must match")
        self._announce("patch")
        return not self.patch_error

    def set_patch_tokens(self, target: str, foil: str = "") -> bool:
        """The metric's target ("" = the top prediction) and foil; refused (``patch_error``) unless one token each."""
        self.patch_error = self._check(target, "target")[1] or self._check(foil, "foil")[1]
        if not self.patch_error:
            self.patch_target, self.patch_foil = str(target), str(foil)
        self._announce("patch")
        return not self.patch_error

    def set_sweep(self, sweep: str) -> None:
        if sweep not in SWEEPS:
            raise ValueError(f"sweep must be one of {', '.join(SWEEPS)}, got {sweep!r}")
        self.sweep = sweep
        self._announce("patch")

    def start_patch(self) -> bool:
        """Run the sweep off this thread (progress in ``patch_progress``); False with ``patch_error`` saying why."""
        model, trace = self.host.model, self.host.trace
        if self.patch_running:
            return False
        if model is None or trace is None or not self.corrupted:
            self.patch_error = self.patch_error or "Type the corrupted text first."
            self._announce("patch")
            return False
        self._jobs["patch"] += 1
        job, clean, corrupted, sweep = self._jobs["patch"], self.host.traced_text, self.corrupted, self.sweep
        target, foil, position = self._token_or_top(self.patch_target, self.position), self.patch_foil or None, \
            self.position
        self._cancel, self.patch_running, self.patch_error, self.patch_progress = False, True, "", (0, 0)
        self._set_status(f"Patching {sweep} of {model.name}…")
        self._announce("patch")

        def work() -> Iterator[object]:
            t0 = time.perf_counter()
            try:
                for item in scan_items(lambda progress: model.patch(
                        clean, corrupted, target=target, foil=foil, position=position, sweep=sweep,
                        progress=progress, cancel=lambda: self._cancel or job != self._jobs["patch"])):
                    yield item if isinstance(item, ScanProgress) else _Done("patch", (item, clean, corrupted,
                                                                                        time.perf_counter() - t0),
                                                                             clean, model)
            except ValueError as exc:
                yield _Error("patch", str(exc))

        self._start("patch", work)
        return True

    def cancel_patch(self) -> None:
        """Stop the sweep before its next batch; the cells measured so far are kept."""
        if self.patch_running:
            self._cancel = True
            self._set_status("Cancelling the patch sweep…")

    def set_knockout(self, edges: str, layers: str = "all") -> bool:
        """Block ``edges`` ("q→k, …") in ``layers`` ("all", "0, 1", "1.2") and compare the next token before and
        after (off this thread); refused (``knock_error``) with the reason, the old cells and result kept."""
        model, trace = self.host.model, self.host.trace
        try:
            if model is None or trace is None:
                raise ValueError("trace a text first")
            parse_edges(edges, len(trace))
            parse_layers(layers, model.info.layers, model.info.heads)
        except ValueError as exc:
            self.knock_error = str(exc)
            self._announce("knockout")
            return False
        self.knock_edges, self.knock_layers, self.knock_error = str(edges), str(layers), ""
        self._run("knockout")
        self._announce("knockout")
        return True

    def shutdown(self, timeout_s: float = 30.0) -> None:
        self._cancel = True
        self._jobs = {what: job + 1 for what, job in self._jobs.items()}
        for handle in self._handles:
            handle.wait(timeout_s)
        self._handles.clear()

    def wait_idle(self, timeout_s: float = 120.0) -> bool:
        """Scripts and tests: deliver results on this thread until no run of this view is under way."""
        deadline = time.perf_counter() + timeout_s
        while self.busy:
            pump = getattr(self.host.runner, "pump", None)
            if pump is None or time.perf_counter() > deadline:
                return False
            pump(0.05)
        getattr(self.host.runner, "pump", lambda: 0)()  # what the last thread delivered as it ended
        return True

    def _follow_trace(self) -> None:
        """A new text or model: every result made for the old one goes (its caption would describe another
        state); the lens and the attribution are computed again while shown."""
        self.lens = self.attribution = self.knockout = None
        if self.patching is not None or self.patch_running:
            self.patch_note = "The text or the model changed since the last patch run: press Patch to run it again."
        if self.patch_running:
            self._cancel = True
            self._jobs["patch"] += 1
            self.patch_running = False
        self.patching = None
        if self.corrupted and self.host.trace is not None and not self.set_corrupted(self.corrupted):
            self.corrupted = ""  # the new text has another length: the reason is in patch_error
        self._announce("lens", "attribution", "patch", "knockout")
        self._refresh()

    def _follow_position(self) -> None:
        if self.shown and self.host.trace is not None and (self.lens is None or self._running.get("lens") or
                                                           self.lens.position != self.position % len(self.host.trace)):
            self._refresh()

    def _refresh(self) -> None:
        if not self.shown or self.host.trace is None or self.host.model is None:
            return
        self._run("lens")
        self._run("attribution")
        if self.knock_edges:
            self._run("knockout")

    def _check(self, token: str, what: str) -> tuple[bool, str]:
        if str(token) == "":  # the default: the top prediction (a target) or none (a foil)
            return True, ""
        if self.host.model is None:
            return False, "open a model first"
        from attention_core.pretrained.cause.targets import token_id

        try:
            token_id(self.host.model, str(token), what)
        except ValueError as exc:
            return False, str(exc)
        return True, ""

    def _model_words(self) -> str:
        """The model's name, and that every head is on here when the Detect view switched some off."""
        off = tuple(self.host.heads.off)
        return self.host.model.name + (f" with every head on ({off_text(off)} in the Detect view, not here)"
                                       if off else "")

    def _token_name(self, token: Any) -> str:
        if isinstance(token, str):
            return token
        return str(self.host.model.token_strings([int(token)])[0])

    def _token_or_top(self, token: str, position: int) -> Any:
        """``token`` or, when empty, the id the traced text predicts at ``position``."""
        return token if token else int(self.host.top_next(position, 1)[0][1])

    def _run(self, what: str) -> None:
        model, trace, text = self.host.model, self.host.trace, self.host.traced_text
        if model is None or trace is None:
            return
        self._jobs[what] += 1  # the result of a run under way is dropped
        if self._running.get(what):
            self._again.add(what)
            return
        p, ids = self.position, list(trace.ids)
        work: Callable[[], Any]
        if what == "lens":
            work = lambda: model.logit_lens(ids, position=p)  # noqa: E731 (one call)
        elif what == "attribution":
            target, foil = self._token_or_top(self.attr_target, p), self.attr_foil or None
            work = lambda: model.attribute(ids, target=target, foil=foil, position=p)  # noqa: E731
        else:
            edges = parse_edges(self.knock_edges, len(trace))
            layers = parse_layers(self.knock_layers, model.info.layers, model.info.heads)
            work = lambda: model.knockout(ids, edges, layers=layers, position=p)  # noqa: E731

        def gen() -> Iterator[object]:
            try:
                yield _Done(what, work(), text, model)
            except ValueError as exc:
                yield _Error(what, str(exc))

        self._start(what, gen)

    def _start(self, what: str, work: Callable[[], Iterator[object]]) -> None:
        job = self._jobs[what]

        def on_item(item: object) -> None:
            if job == self._jobs[what]:
                self._deliver(item)

        def on_done(reason: str) -> None:
            self._running[what] = False
            if what in self._again:
                self._again.discard(what)
                self._run(what)
            if job == self._jobs[what] and reason.startswith("error"):
                self._deliver(_Error(what, reason.strip().splitlines()[-1]))
            if what == "patch" and job == self._jobs[what] and self.patch_running:
                self.patch_running = False
                self._announce("patch")

        self._handles = [h for h in self._handles if h.is_alive()]
        self._running[what] = True
        self._handles.append(self.host.runner.start(work, on_item, on_done))

    def _deliver(self, item: object) -> None:
        if isinstance(item, ScanProgress):
            self.patch_progress = (item.done, item.total)
            self._announce("patch")
        elif isinstance(item, _Error):
            setattr(self, {"lens": "lens_error", "attribution": "attr_error", "knockout": "knock_error",
                           "patch": "patch_error"}[item.what], item.message)
            if item.what == "patch":
                self.patch_running = False
            self._set_status(item.message)
            self._announce(item.what)
        elif isinstance(item, _Done) and item.model is self.host.model and item.text == self.host.traced_text:
            if item.what == "lens":
                self.lens, self.lens_text = item.result, item.text
            elif item.what == "attribution":
                self.attribution, self.attr_text = item.result, item.text
            elif item.what == "knockout":
                self.knockout, self.knock_text = item.result, item.text
            else:
                result, clean, corrupted, seconds = item.result
                self.patching, self.patch_texts, self.patch_running = result, (clean, corrupted), False
                self.patch_note = ""
                self._set_status(f"Patched {result.sweep} in {seconds:.2f} s"
                                 f"{'' if result.completed else ' (cancelled: what was measured stays)'}.")
            self._announce(item.what)
