"""``HeadsAnalysis``: the Model tab's Detect view without Qt — what each head does, and the model with heads off.

It lives on the ``InspectSession`` (``session.heads``) and follows it; scripts reach it as ``w.inspect.model.heads``.

- **Detectors**: ``detect()`` runs the loaded model on ``BATCH`` seeded random token sequences repeated twice (the
  probe of ``attention_core.phenomena``), the heads that are off switched off, and keeps every detector's scores
  (``KINDS``: ``head_scores``'s numbers), the first sequence's attention and the loss at every position (a
  ``RepeatTrace``, as ``repeated_tokens``). ``set_kind`` picks the detector shown; nothing reruns.
- **Probe length and window** (``probe``, a ``DetectProbe``): ``set_probe_length(tokens)`` (checked, refused with
  the reason) runs the detectors again at that length, past ``LONG_PROBE`` positions one sequence and layer at a
  time with progress (``detect_progress``) and Cancel, keeping no full map; ``probe.window`` is what is shown of it.
- **Ablation scan**: ``start_scan()`` switches each head off alone (``ablation_scan`` on the traced text and on
  repeated tokens, the heads already off kept off), reporting progress; ``cancel_scan()`` keeps what it measured.
- **Covered by a lesson's question**: ``withhold(scores, scan)`` (the reason each is hidden, "" = shown): while
  withheld, ``scores()`` is None and ``heads_above()`` empty, so no view or export gives away where a head is (the
  scan's loss changes likewise); the measurements are kept and shown again once the question is answered.
- **Heads off**: ``toggle``, ``set_off``, ``switch_off_above``, ``switch_all_on``. The session traces its text again
  with them off (``PretrainedModel.trace(ablate=...)``), so the rest of the tab shows the model without them, and
  the detectors rerun; a scan made with other heads off says so (``detect_views``).

Everything long runs through the session's ``Runner``; a result for an older model, length or set of heads is
dropped (or, for the detectors, run again for the heads off now). Layers and heads count from 0 ("5.1").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import numpy as np

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import RunHandle, Runner
from app.model_tab.model.detect_long import ProbeProgress
from app.model_tab.model.detect_probe import DetectProbe
from app.model_tab.model.detect_runs import (
    KINDS,
    SCAN_HOWS,
    SCAN_MEASURES,
    THRESHOLD,
    Detection,
    Failed,
    Head,
    ScanProgress,
    ScanResult,
    iter_detectors,
    scan_items,
)
from app.model_tab.model.views import off_text

__all__ = ["HeadsAnalysis", "HeadsHost"]


class HeadsHost(Protocol):
    """What the analysis needs of the session (``InspectSession``)."""

    model: Any
    trace: Any
    text: str
    selected: tuple[int, int]
    runner: Runner
    events: Any

    def set_text(self, text: str) -> None: ...

    def select_head(self, layer: int, head: int) -> None: ...


class HeadsEvents(ModelEvents):
    detection = event()  # the detectors' result, whether they run, their status
    progress = event()  # how far a long probe's run is (``detect_progress``)
    kind = event()  # the detector shown
    scan = event()  # the scan: result, progress, running, how, measure
    off = event()  # the heads switched off
    cover = event()  # what a lesson's question withholds (the scores, the scan) changed


class HeadsAnalysis(Evented):
    """See the module docstring."""

    events: HeadsEvents

    def __init__(self, host: HeadsHost) -> None:
        self.host = host
        super().__init__()
        self.kind = "induction"
        self.off: tuple[Head, ...] = ()
        self.detection: Detection | None = None
        self.detecting = False
        self.detect_progress = (0, 0)  # a long probe's layer runs done, of all (0, 0: a short probe, or none)
        self.probe = DetectProbe()  # the probe's length asked for and the window of it shown
        self.scan: ScanResult | None = None
        self.scanning = False
        self.scan_progress = (0, 0)
        self.scan_how = "zero"
        self.scan_measure = "repeat"
        self.shown = False
        self.status = "Open a model, then run the detectors."
        self.withheld = ""  # why the detectors' scores are hidden now ("" = shown): a lesson's unanswered question
        self.scan_withheld = ""  # the same for the ablation scan's loss changes
        self._for_model: Any = None
        self._detect_job = self._scan_job = 0
        self._cancel_scan = False
        self._clean: Any = None  # the probe's losses with every head on: drawn beside a run with heads off
        self._handles: list[RunHandle] = []
        host.events.load.connect(self._follow_model)

    # ================================================================== reading
    @property
    def shape(self) -> tuple[int, int]:
        m = self.host.model
        return (int(m.info.layers), int(m.info.heads)) if m is not None else (0, 0)

    @property
    def scan_cancelling(self) -> bool:
        """Cancel was pressed and the scan has not stopped yet."""
        return self.scanning and self._cancel_scan

    @property
    def busy(self) -> bool:
        return self.detecting or self.scanning

    def scores(self) -> np.ndarray | None:
        """(layers, heads) scores of the detector shown, None before a run (or while withheld)."""
        if self.detection is None or self.withheld:
            return None
        return np.asarray(self.detection.scores[self.kind].scores)

    def heads_above(self) -> list[Head]:
        """Heads of the shown detector scoring above ``THRESHOLD``, best first (none while withheld)."""
        if self.detection is None or self.withheld:
            return []
        return list(self.detection.scores[self.kind].heads_above(THRESHOLD))

    def off_text(self) -> str:
        return off_text(self.off)

    # ================================================================== commands
    def withhold(self, scores: str = "", scan: str = "") -> None:
        """Hide the detectors' scores and/or the scan's loss changes, each with the reason the views say instead
        ("" shows it again)."""
        if (str(scores), str(scan)) != (self.withheld, self.scan_withheld):
            self.withheld, self.scan_withheld = str(scores), str(scan)
            self._announce("cover")

    def set_shown(self, shown: bool) -> None:
        """The Detect view is on screen (or not): while it is, a loaded model's detectors run when missing."""
        self.shown = bool(shown)
        if self.shown and self.detection is None and not self.detecting and self.host.model is not None:
            self.detect()

    def set_kind(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown detector {kind!r}: choose one of {', '.join(KINDS)}")
        if kind != self.kind:
            self.kind = kind
            self._announce("kind")

    def set_probe_length(self, tokens: Any) -> None:
        """Random tokens a copy of the probe ("" or None: the default, 50 cut to fit); ValueError with the reason,
        nothing changed, for a length the model has no room for. The detectors run again at the new length."""
        model = self.host.model
        if self.probe.set_tokens(tokens, model) and model is not None and (
                self.detection is not None or self.shown or self.detecting):
            self.detect()

    def detect(self) -> None:
        """Run every detector (and the probe's losses) off this thread, with the heads off now switched off."""
        model = self.host.model
        if model is None:
            self._set_status("No model yet: open one on the left.")
            return
        self._detect_job += 1
        seq_len = self.probe.seq_len(model)
        s = seq_len or self.probe.default(model)
        clean = self._clean if self._clean is not None and self._clean.seq_len == s else None
        job, off = self._detect_job, self.off
        self.detecting, self.detect_progress = True, (0, 0)
        self._set_status(f"Running the detectors on {model.name}"
                         f"{' with ' + off_text(off) if off else ''} ({s:,} random tokens, repeated)…")
        self._announce("detection", "progress")

        def work() -> Iterator[object]:
            from attention_core.pretrained import PretrainedError

            try:
                yield from iter_detectors(model, off, seq_len=seq_len, clean_repeat=clean,
                                          cancelled=lambda: job != self._detect_job)
            except (PretrainedError, ValueError) as exc:
                yield Failed(str(exc))

        self._start(work, lambda: job == self._detect_job, self._on_detection)

    def cancel_detect(self) -> None:
        """Stop the detectors (a long probe before its next layer; a short one's result is dropped when it
        arrives); the last result stays."""
        if self.detecting:
            self._detect_job += 1
            self.detecting, self.detect_progress = False, (0, 0)
            self._set_status("Detectors cancelled." + (" The last result stays." if self.detection else ""))
            self._announce("detection", "progress")

    def set_scan_how(self, how: str) -> None:
        if how not in SCAN_HOWS:
            raise ValueError(f"how must be one of {', '.join(SCAN_HOWS)}, got {how!r}")
        if how != self.scan_how:
            self.scan_how = how
            self._announce("scan")

    def set_scan_measure(self, measure: str) -> None:
        """Which loss the scan grid shows: ``repeat`` (the repeated tokens' second copy) or ``text`` (your text)."""
        if measure not in SCAN_MEASURES:
            raise ValueError(f"measure must be one of {', '.join(SCAN_MEASURES)}, got {measure!r}")
        if measure != self.scan_measure:
            self.scan_measure = measure
            self._announce("scan")

    def start_scan(self) -> bool:
        """Switch each head off alone, off this thread (``ablation_scan`` on the traced text and the repeated tokens,
        the heads off now kept off); False (and the status says why) when there is nothing to scan yet."""
        model, trace = self.host.model, self.host.trace
        if model is None or trace is None:
            self._set_status("Trace a text first: the scan measures the loss on it.")
            return False
        if len(trace) < 2:
            self._set_status("The text needs at least 2 tokens for a next-token loss.")
            return False
        if self.scanning:
            return False
        self._scan_job += 1
        job, ids, off, how = self._scan_job, np.asarray(trace.ids), self.off, self.scan_how
        self._cancel_scan = False
        self.scanning = True
        layers, heads = self.shape
        self.scan_progress = (0, layers * heads)
        self._set_status(f"Scanning {layers * heads} heads of {model.name} ({how} ablation)…")
        self._announce("scan")
        t0 = time.perf_counter()

        def cancelled() -> bool:
            return self._cancel_scan or job != self._scan_job

        def work() -> Iterator[object]:
            from attention_core.phenomena import ablation_scan
            from attention_core.pretrained import PretrainedError

            done = 0
            try:
                for item in scan_items(lambda progress: ablation_scan(model, ids, how, progress=progress,
                                                                      cancel=cancelled, also_off=off)):
                    if isinstance(item, ScanProgress):
                        done = item.done
                        yield item
                    else:
                        yield ScanResult(item, off, done, layers * heads, time.perf_counter() - t0)
            except (PretrainedError, ValueError) as exc:
                yield Failed(str(exc))

        self._start(work, lambda: job == self._scan_job, self._on_scan)
        return True

    def cancel_scan(self) -> None:
        """Stop the scan before its next head; the heads it measured stay on the grid."""
        if self.scanning and not self._cancel_scan:
            self._cancel_scan = True
            self._set_status("Cancelling the scan…")
            self._announce("scan")

    def toggle(self, layer: int, head: int) -> None:
        """Switch one head off, or back on."""
        pair = self._check(layer, head)
        self.set_off(tuple(p for p in self.off if p != pair) if pair in self.off else (*self.off, pair))

    def set_off(self, heads: Iterable[Head]) -> None:
        """Exactly these heads off (the rest on); the text is traced again and the detectors rerun."""
        new = tuple(sorted({self._check(*p) for p in heads}))
        if new == self.off:
            return
        self.off = new
        self._set_status(f"{off_text(new).capitalize() if new else 'Every head is on again'}: tracing the text "
                         "again…")
        self._announce("off")
        if self.host.model is not None:
            self.host.set_text(self.host.text)
            if not self.detecting and (self.detection is not None or self.shown):
                self.detect()  # (a run under way starts again for these heads when it ends: one at a time)

    def switch_off_above(self) -> int:
        """Switch off the shown detector's heads above the threshold (the rest stay as they are); how many."""
        if self.withheld:
            self._set_status(self.withheld)
            return 0
        above = self.heads_above()
        if not above:
            self._set_status(f"No head scores above {THRESHOLD:g} as {self.kind}" +
                             ("" if self.detection else ": run the detectors first") + ".")
            return 0
        self.set_off((*self.off, *above))
        return len(above)

    def switch_all_on(self) -> None:
        self.set_off(())

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Drop pending results, stop a scan and wait for the threads (the window closes)."""
        self._detect_job, self._scan_job, self._cancel_scan = self._detect_job + 1, self._scan_job + 1, True
        for handle in self._handles:
            handle.wait(timeout_s)
        self._handles.clear()

    def wait_idle(self, timeout_s: float = 120.0) -> bool:
        """Scripts and tests: deliver results on this thread until neither the detectors nor a scan run."""
        deadline = time.perf_counter() + timeout_s
        while self.busy:
            pump = getattr(self.host.runner, "pump", None)
            if pump is None or time.perf_counter() > deadline:
                return False
            pump(0.05)
        return True

    # ================================================================== results
    def _on_detection(self, item: object) -> None:
        if isinstance(item, ProbeProgress):
            self.detect_progress = (item.done, item.total)
            self._announce("progress")
            return
        if isinstance(item, Detection):
            if item.off != self.off:  # heads switched meanwhile: measure the model as it is now
                self.detect()
                return
            self.detecting, self.detect_progress = False, (0, 0)
            self.detection = item
            self.probe.follow(item.positions, item.seq_len, item.offset)  # (announced with the detection)
            if not item.off:
                self._clean = item.repeat
            elif item.clean_repeat is not None:
                self._clean = item.clean_repeat
            self._set_status(f"Detectors run in {item.seconds:.2f} s ({len(item.repeat.ids)} × {item.seq_len:,} "
                             "random tokens, repeated).")
        elif isinstance(item, Failed):
            self.detecting, self.detect_progress = False, (0, 0)
            self._set_status(f"Could not run the detectors: {item.message}")
        self._announce("detection")

    def _on_scan(self, item: object) -> None:
        if isinstance(item, ScanProgress):
            self.scan_progress = (item.done, item.total)
            self._announce("scan")
            return
        self.scanning = False
        if isinstance(item, ScanResult):
            self.scan = item
            if item.scan.completed:
                self._set_status(f"Scan done: {item.total} heads in {item.seconds:.1f} s.")
            else:
                self._set_status(f"Scan cancelled after {item.done} of {item.total} heads.")
        elif isinstance(item, Failed):
            self._set_status(f"Could not scan: {item.message}")
        self._announce("scan")

    def _follow_model(self) -> None:
        """A new model: nothing measured on the old one counts, every head is on."""
        model = self.host.model
        if model is self._for_model:
            return
        self._for_model = model
        self._detect_job, self._scan_job, self._cancel_scan = self._detect_job + 1, self._scan_job + 1, True
        self.detection, self.scan, self._clean = None, None, None
        self.detecting = self.scanning = False
        self.off, self.scan_progress, self.detect_progress = (), (0, 0), (0, 0)
        self.probe.forget_if_unfit(model)
        self.probe.forget()
        self._set_status("Run the detectors to see what each head does." if model is not None else
                         "Open a model, then run the detectors.")
        self._announce("detection", "progress", "scan", "off")
        if self.shown and model is not None:
            self.detect()

    # ================================================================== plumbing
    def _check(self, layer: int, head: int) -> Head:
        layers, heads = self.shape
        if not (0 <= int(layer) < layers and 0 <= int(head) < heads):
            raise ValueError(f"no head {layer}.{head}: the model has {layers} layers × {heads} heads (from 0)")
        return int(layer), int(head)

    def _start(self, work: Callable[[], Iterator[object]], current: Callable[[], bool],
               deliver: Callable[[object], None]) -> None:
        def on_item(item: object) -> None:
            if current():
                deliver(item)

        def on_done(reason: str) -> None:
            if current() and reason.startswith("error"):
                deliver(Failed(reason.strip().splitlines()[-1]))

        self._handles = [h for h in self._handles if h.is_alive()]
        self._handles.append(self.host.runner.start(work, on_item, on_done))
