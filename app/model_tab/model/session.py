"""``InspectSession``: the Model tab's evented model, without Qt. Scripts reach it as ``w.inspect.model``.

It holds the models found offline (``sources``), the loaded ``PretrainedModel``, the text and its ``Trace``, the
head picked for the large map and the position hovered. Loading and tracing run through an injected ``Runner``
(``app.common.runner``: a superqt worker in the window, a plain thread in scripts), so the window never waits for
them: a load can be cancelled (its result is dropped when it arrives; a new load or text supersedes the old), and
every change emits one event per changed thing on ``session.events``, then ``changed`` (``app.common.evented``).

Layers and heads are numbered from 0 here, as in ``attention_core.pretrained`` and the interpretability
literature (GPT-2's induction head "5.1" is layer 5, head 1).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import Runner, ThreadRunner
from app.model_tab.model.cause import CauseAnalysis
from app.model_tab.model.detect import HeadsAnalysis
from app.model_tab.model.playground_head import PlaygroundHead, playground_head
from app.model_tab.model.sources import ModelSource, discover
from app.model_tab.model.views import off_text

if TYPE_CHECKING:
    from attention_core.pretrained import PretrainedModel, Trace

DTYPES = ("float32", "bfloat16")
DEFAULT_TEXT = "When Mary and John went to the store, John gave a drink to"
OWN_FAMILY = "attention-playground"
"""The family ``load_pretrained`` gives the app's own trained models (their tokens are numbers, PAD and SEP)."""
LOAD_STATES = ("empty", "loading", "ready", "error")
MAP_WINDOW, MAP_WINDOW_MIN, MAP_WINDOW_MAX = 128, 16, 512
"""A long trace's head map shows MAP_WINDOW positions at a time (zoom: MIN to MAX), computed on demand."""
NO_TEXT = "Type some text to trace."
"""Said for an empty text or one of only spaces, by Trace and by a load alike (the model opens; nothing is traced)."""


class InspectEvents(ModelEvents):
    sources = event()
    load = event()  # load state, progress text, the model
    text = event()
    trace = event()
    selected = event()
    hovered = event()
    window = event()  # the long-text head map's window of positions (``map_window``)


@dataclass(frozen=True)
class _Loaded:
    model: Any
    seconds: float


@dataclass(frozen=True)
class _Traced:
    trace: Any
    text: str
    seconds: float


@dataclass(frozen=True)
class _Failed:
    stage: str
    message: str


class InspectSession(Evented):
    """See the module docstring. ``own_folders``: where the app saves its trained models; ``recent``: folders
    opened before (the window keeps them in its settings)."""

    events: InspectEvents

    def __init__(self, runner: Runner | None = None, own_folders: Sequence[Path] = (),
                 recent: Sequence[str] = ()) -> None:
        super().__init__()
        self.runner: Runner = runner if runner is not None else ThreadRunner()
        self.own_folders, self.recent = list(own_folders), list(recent)
        self.sources: list[ModelSource] = []
        self.model: PretrainedModel | None = None
        self.path: Path | None = None
        self.dtype = "float32"
        self.load_state = "empty"
        self.loading_text = ""
        self.text = DEFAULT_TEXT
        self.trace: Trace | None = None
        self.traced_text = ""
        self.tracing = False
        self.selected = (0, 0)
        self.hovered: int | None = None
        self.map_window = (0, MAP_WINDOW)  # a long trace's head map: (first position, positions shown)
        self._map_keys: int | None = None  # its first key, when moved apart from the first query (``map_keys``)
        self.error = ""
        self.status = "No model yet: pick one from the list or open a folder."
        self._job = 0  # the run whose results count; older runs' items are dropped
        self._handles: list[Any] = []
        self._top: tuple[Any, int, list[list[tuple[str, int, float]]]] | None = None
        self.heads = HeadsAnalysis(self)  # the Detect view: detectors, ablation scan, heads switched off
        self.cause = CauseAnalysis(self)  # the Cause view: lens, attribution, patching, knockout

    # ================================================================== reading
    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads) of the loaded model, (0, 0) without one."""
        return (self.model.info.layers, self.model.info.heads) if self.model is not None else (0, 0)

    def top_next(self, position: int | None = None, k: int = 5) -> list[tuple[str, int, float]]:
        """The ``k`` likeliest next tokens after ``position`` (default: the hovered one, else the last)."""
        if self.trace is None:
            return []
        pos = self.shown_position if position is None else position
        if not 0 <= pos < len(self.trace):
            return []
        if self.trace.is_long:  # one position on demand: naming every position's tokens would take ~1 s here
            return self.trace.top_next(k, positions=[pos])[0]
        if self._top is None or self._top[0] is not self.trace or self._top[1] < k:
            self._top = (self.trace, k, self.trace.top_next(k))  # every position at once, once per trace
        return self._top[2][pos][:k]

    @property
    def shown_position(self) -> int:
        """The position the next-token list is about: the hovered one, else the last token; an encoder's (a trace
        that predicts masked tokens), else its last ``[MASK]``: what the text asked it to fill in."""
        if self.hovered is not None:
            return self.hovered
        if self.trace is None:
            return -1
        if self.trace.prediction == "masked" and self.trace.masked_positions:
            return max(self.trace.masked_positions)
        return len(self.trace) - 1

    def head_for_playground(self, layer: int | None = None, head: int | None = None) -> PlaygroundHead:
        """The picked (or given) head as Playground inputs; ValueError when there is no trace or it cannot be
        shown there."""
        if self.trace is None:
            raise ValueError("no trace yet: load a model and type a text first")
        li, h = self.selected if layer is None else (int(layer), int(head if head is not None else 0))
        return playground_head(self.trace, li, h, self.traced_text)

    # ================================================================== commands
    def refresh_sources(self) -> list[ModelSource]:
        self.sources = discover(self.own_folders, self.recent)
        self._announce("sources")
        return self.sources

    def set_dtype(self, dtype: str) -> None:
        """float32 (exact, the default) or bfloat16 (half the memory); used by the next load."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.dtype = dtype
        self._announce("load")

    def load(self, path: str | Path) -> None:
        """Load the model at ``path`` off this thread, then trace the text. A load already running is superseded."""
        p = Path(path).expanduser()
        self._job += 1
        job, dtype, text = self._job, self.dtype, self.text
        self.load_state, self.loading_text, self.error = "loading", f"Loading {p.name} ({dtype})…", ""
        self._set_status(f"Loading {p}…")
        self._announce("load")

        def work() -> Iterator[object]:
            from attention_core.pretrained import PretrainedError, load_pretrained

            t0 = time.perf_counter()
            try:
                model = load_pretrained(p, dtype=dtype, threads=1)
            except (PretrainedError, OSError) as exc:
                yield _Failed("load", str(exc))
                return
            yield _Loaded(model, time.perf_counter() - t0)
            prompt = text
            if model.family == OWN_FAMILY and not _encodes(model, text):
                prompt = own_example(model)  # the app's own models read numbers, not words: show them a prompt
            elif not prompt.strip():  # the rule Trace keeps: a text of only spaces is refused, on load too
                yield _Failed("trace", NO_TEXT)
                return
            yield from _trace(model, prompt)

        self._start(job, work, path=p)

    def cancel(self) -> None:
        """Stop waiting for the load or trace under way: its result is dropped when it arrives."""
        if self.load_state != "loading" and not self.tracing:
            return
        self._job += 1
        was_loading = self.load_state == "loading"
        self.tracing = False
        if was_loading:
            self.load_state = "ready" if self.model is not None else "empty"
        self.loading_text = ""
        self._set_status("Cancelled." + (" The model shown before stays." if self.model is not None else ""))
        self._announce("load", "trace")

    def set_text(self, text: str) -> None:
        """Trace ``text`` with the loaded model (off this thread); without a model it is kept for the next load."""
        self.text = str(text)
        self._announce("text")
        if self.model is None or self.load_state == "loading":
            return
        if not self.text.strip():
            self.error = NO_TEXT
            self._set_status(self.error)
            self._announce()
            return
        self._job += 1
        job, model, text_now = self._job, self.model, self.text
        self.tracing, self.error = True, ""
        self._set_status(f"Tracing {len(text_now)} characters through {model.name}…")
        self._announce("trace")
        off = self.heads.off  # the heads switched off now (the Detect view)
        self._start(job, lambda: _trace(model, text_now, off))

    def select_head(self, layer: int, head: int) -> None:
        layers, heads = self.shape
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(f"no layer {layer} head {head}: the model has {layers} layers × {heads} heads "
                             "(numbered from 0)")
        if (layer, head) != self.selected:
            self.selected = (int(layer), int(head))
            self._announce("selected")

    @property
    def map_keys(self) -> int:
        """The first key of a long trace's head-map window: its first query's (the diagonal) until moved apart with
        ``set_map_window(keys=)``, e.g. to an induction head's stripe, a copy's length left of the diagonal."""
        return self.map_window[0] if self._map_keys is None else self._map_keys

    def set_map_window(self, start: int, size: int | None = None, *, keys: int | None = None) -> None:
        """Show queries start … start + size − 1 in a long trace's head map (clamped into the text; ``size``
        between MAP_WINDOW_MIN and MAP_WINDOW_MAX): its exact weights are computed for that window only. The keys
        are the same positions, or, once ``keys`` (the first key) moved them apart, keep their distance from the
        queries as the window scrolls and zooms."""
        size = self.map_window[1] if size is None else min(MAP_WINDOW_MAX, max(MAP_WINDOW_MIN, int(size)))
        n = len(self.trace) if self.trace is not None else size

        def clamped(first: int) -> int:
            return min(max(0, int(first)), max(0, n - size))

        window = (clamped(start), size)
        apart = self._map_keys if keys is None else int(keys)
        if keys is None and apart is not None:  # moved apart before: the same shift as the queries'
            apart += window[0] - self.map_window[0]
        key_start = None if apart is None else clamped(apart)
        if (window, key_start) != (self.map_window, self._map_keys):
            self.map_window, self._map_keys = window, key_start
            self._announce("window")

    def hover(self, position: int | None) -> None:
        """The query position under the pointer (None: none); the next-token list follows it."""
        pos = None if position is None or self.trace is None or not 0 <= position < len(self.trace) else position
        if pos != self.hovered:
            self.hovered = pos
            self._announce("hovered")

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Drop every pending result and wait for the worker threads (the window closes)."""
        self._job += 1
        self.heads.shutdown(timeout_s)
        self.cause.shutdown(timeout_s)
        for handle in self._handles:
            handle.wait(timeout_s)
        self._handles.clear()

    def wait_idle(self, timeout_s: float = 120.0) -> bool:
        """Scripts and tests: deliver results on this thread until no load or trace is under way."""
        deadline = time.perf_counter() + timeout_s
        while self.load_state == "loading" or self.tracing:
            pump = getattr(self.runner, "pump", None)
            if pump is None or time.perf_counter() > deadline:
                return False
            pump(0.05)
        return True

    # ================================================================== the runs
    def _start(self, job: int, work: Any, path: Path | None = None) -> None:
        def on_item(item: object) -> None:
            if job == self._job:
                self._on_item(item, path)

        def on_done(reason: str) -> None:
            if job == self._job and reason.startswith("error"):
                self._on_item(_Failed("trace" if path is None else "load", reason.splitlines()[-1]), path)

        self._handles = [h for h in self._handles if h.is_alive()]
        self._handles.append(self.runner.start(work, on_item, on_done))

    def _on_item(self, item: object, path: Path | None) -> None:
        if isinstance(item, _Loaded):
            self.model, self.path = item.model, path
            self.load_state, self.loading_text, self.trace = "ready", "", None
            self.tracing = True
            layers, heads = self.shape
            li, h = self.selected
            self.selected = (min(li, layers - 1), min(h, heads - 1))
            if path is not None:
                self.recent = [str(path)] + [r for r in self.recent if r != str(path)][:9]
                self.sources = discover(self.own_folders, self.recent)  # the list shows it under "opened before"
            i = item.model.info
            self._set_status(f"Loaded {item.model.name} in {item.seconds:.1f} s: {i.family}, {i.layers} layers × "
                             f"{i.heads} heads, {i.parameters:,} parameters ({i.dtype}). Tracing…")
            self._announce("load", "selected", "trace", "sources")
        elif isinstance(item, _Traced):
            self.trace, self.traced_text, self.tracing, self.hovered = item.trace, item.text, False, None
            if item.text != self.text:
                self.text = item.text
                self._announce("text")
            note = "".join(f" ({n})" for n in (item.trace.note, off_text(item.trace.ablated)) if n)
            n, size = len(item.trace), self.map_window[1]
            self.map_window, self._map_keys = (max(0, n - size), size), None  # a long text opens on its end
            long = (f" A long text: every head's map pooled to blocks of {item.trace.overview.block} tokens; the "
                    "head map shows an exact window (wheel scrolls, Shift+wheel moves its keys, Ctrl+wheel zooms)."
                    if item.trace.is_long else "")
            self._set_status(f"{self.model.name if self.model else ''}: {n:,} tokens traced in "
                             f"{item.seconds:.2f} s, {item.trace.kept_bytes / 2**20:.1f} MB kept{note}.{long} "
                             "Hover a map for weights; click a head to enlarge it.")
            self._announce("trace", "hovered", "window")
        elif isinstance(item, _Failed):
            self.error, self.tracing = item.message, False
            if item.stage == "load":
                self.load_state = "ready" if self.model is not None else "error"
                self.loading_text = ""
                kept = " The model shown before stays." if self.model is not None else ""
                self._set_status(f"Could not open it: {item.message}{kept}")
            else:
                self._set_status(item.message if item.message == NO_TEXT else
                                 f"Could not trace the text: {item.message}")
            self._announce("load", "trace")


def _trace(model: PretrainedModel, text: str, off: Sequence[tuple[int, int]] = ()) -> Iterator[object]:
    from attention_core.pretrained import PretrainedError

    t0 = time.perf_counter()
    try:
        trace = model.trace(text, truncate=True, ablate={p: "zero" for p in off} or None)
    except (PretrainedError, ValueError) as exc:
        yield _Failed("trace", str(exc))
        return
    yield _Traced(trace, text, time.perf_counter() - t0)


def _encodes(model: PretrainedModel, text: str) -> bool:
    from attention_core.pretrained import PretrainedError

    try:
        return bool(model.encode(text))
    except PretrainedError:
        return False


def own_example(model: PretrainedModel) -> str:
    """A prompt an app-trained model reads: L distinct input tokens then SEP (L from its positions: a task
    sequence is 2L + 1 long), so the next-token list shows the first token it answers."""
    vocab, positions = model.info.vocab, model.info.max_positions
    length = max(1, min((positions - 1) // 2, vocab - 2))
    tokens = [2 + (5 * i + 1) % (vocab - 2) for i in range(length)]
    return " ".join(str(t) for t in tokens) + " SEP"
