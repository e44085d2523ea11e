"""What a learner does with a run's recorded steps, as ``TrainingSession`` commands: the timeline (seek, live,
replay), the probe, Try it and switching heads off. Each acts on the *shown* step's recorded parameters, never on
the model that is training, and says which step it used. Qt-free; part of ``TrainingSession`` (a base class, so
the session module keeps to running and files)."""

from __future__ import annotations

import time

from app.training.model.results import TryIt, run_try_it
from app.training.model.session_base import TrainingSessionBase
from app.training.model.tools import parse_tokens, reprobed

TRY_INTERVAL_S = 0.5
"""While training runs, Try it is recomputed for the live step at most this often (seconds)."""


class RecordedSteps(TrainingSessionBase):
    """The timeline, probe, Try it and ablation commands of ``TrainingSession`` (see the module docstring)."""

    # ================================================================== timeline
    def seek(self, index: int) -> None:
        """Show recorded snapshot ``index`` (0 = the untrained model); stops following the live run."""
        self.cursor.set_length(len(self.history))
        self.cursor.seek(index)
        self._shown_changed()

    def go_live(self) -> None:
        """Follow the newest step."""
        self.cursor.go_live()
        self.cursor.set_length(len(self.history))
        self._shown_changed()

    def replay(self) -> None:
        """Play the recorded steps from the shown one at the chosen speed (``tick`` advances it); every head is
        switched back on first (a replay shows the run as it was)."""
        self._clear_ablation()
        self.cursor.set_length(len(self.history))
        self.cursor.play(time.perf_counter(), self.history)
        self._shown_changed()

    def tick(self, now: float | None = None) -> None:
        """Advance a replay to ``now``; refresh Try it for the live step at most twice a second while training."""
        now = time.perf_counter() if now is None else now
        before = (self.cursor.index, self.cursor.playing)
        self.cursor.set_length(len(self.history))
        self.cursor.tick(now, self.history)
        if (self.cursor.index, self.cursor.playing) != before:
            self._shown_changed()
        t = self.try_it
        if (self.is_running and t is not None and t.result is not None and t.step != self.shown_step
                and now - self._try_at >= TRY_INTERVAL_S):
            self._try_at = now
            self._refresh_try_it()
            self._changed("try_it")

    # ================================================================== probe, try it, ablation
    def set_probe(self, text: str) -> bool:
        """Use these L tokens as the probe (the grid's maps); a refused text sets ``probe_error``."""
        cfg = self.model_config
        if cfg is None:
            return False
        if self.run_state == "building":  # the model being built may have another shape than ``cfg``: a probe
            # handed to it that does not fit would end its run with an error
            self.probe_error = "The model is still being built: set the probe once it is shown."
            self._changed("probe")
            return False
        try:
            tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size, cfg.task)
        except ValueError as exc:
            self.probe_error = str(exc)
            self._changed("probe")
            return False
        self.probe, self.probe_error = tuple(tokens), ""
        trainer = self.trainer
        if trainer is not None:
            if self._control is not None and self.is_alive:
                self._control.submit(lambda t: t.set_probe(tokens))
            else:
                trainer.set_probe(tokens)
            latest = self.history.latest
            if latest is not None and latest.params is not None and not self.is_running:
                self.history.replace_latest(reprobed(trainer.config, tokens, latest))
        self._changed("probe", "history", "shown")
        return True

    def try_sequence(self, text: str) -> TryIt:
        """The model's greedy answer (its task's) to the typed tokens at the shown step; a refused text is an error
        result."""
        cfg, snap = self.model_config, self.shown_snapshot
        if cfg is None or snap is None or self.trainer is None:
            self.try_it = TryIt(text, error="No model yet: press Start (or Step, or Load a model) first.")
        else:
            try:
                tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size, cfg.task)
            except ValueError as exc:
                self.try_it = TryIt(text, error=str(exc))
            else:
                self.try_it = run_try_it(text, tokens, cfg, snap, self.ablated)
        self._changed("try_it")
        return self.try_it

    def toggle_head(self, layer: int, head: int) -> bool:
        """Switch one head off (or back on) in the shown step's model and measure the effect."""
        if self.is_running:
            self._note("To switch heads off, pause or stop training first.", error=True)
            return False
        if self.shown_snapshot is None or self.model_config is None:
            self._note("No model yet: Start, Step or Load first.", error=True)
            return False
        cfg = self.model_config
        if not (0 <= layer < cfg.num_layers and 0 <= head < cfg.num_heads):
            self._note(f"No head {layer + 1}.{head + 1}: this model has {cfg.num_layers} layers of "
                       f"{cfg.num_heads} heads.", error=True)
            return False
        off = set(self.ablated) ^ {(layer, head)}
        self.ablated = tuple(sorted(off))
        self._recompute_ablation()
        self._refresh_try_it()
        self._changed("ablation", "try_it")
        return True

    def restore_heads(self) -> None:
        """Switch every head back on."""
        self._clear_ablation()
        self._refresh_try_it()
        self._changed("ablation", "try_it")
