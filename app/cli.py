"""Command line: launch the GUI, train headless (optionally filming the heads), export a preset's heatmap or its
whole pipeline. torch is imported only where used, Qt only where an image is rendered.

Progress goes to stderr (stdout carries the results: the JSON summary, the written path), through tqdm on a
terminal; a log file or a pipe gets a plain line every ~10 % of the run instead (see ``Progress``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from attention_core.steps import STEP_NAMES  # torch-free
from attention_core.task_shapes import POSITIONAL_KINDS, TASK_NAMES  # torch-free

from .rendering import ExportContext, colorbar_label, full_title, step_title  # Qt-free

if TYPE_CHECKING:
    from attention_core.train_config import TrainConfig
    from attention_core.training import ReversalTrainer, TrainingReport

VIEWS = (*STEP_NAMES, "pipeline")  # what `export --view` accepts


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(
        prog="attention-playground",
        description="See attention work. With no command, opens the desktop app.",
    )
    p.add_argument("--version", action="version", version=f"attention-playground {__version__}")
    p.add_argument("--self-test", metavar="DIR", nargs="?", const="", default=None,
                   help="open the window, render every view to PNG (into DIR or a temp folder) and exit 0")
    sub = p.add_subparsers(dest="command")

    sub.add_parser("gui", help="open the desktop app (the default)")

    t = sub.add_parser("train", help="train the tiny reversal transformer headless")
    t.add_argument("--epochs", type=int, default=None,
                   help="passes over the training set (default 1; for copy, sort and induction their recipe's steps)")
    t.add_argument("--steps", type=int, default=None, help="train this many batches instead of --epochs")
    t.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--lr", type=float, default=None, help="Adam learning rate (default 2e-2)")
    t.add_argument("--batch-size", type=int, default=None)
    t.add_argument("--seq-len", type=int, default=None)
    t.add_argument("--vocab-size", type=int, default=None)
    t.add_argument("--d-model", type=int, default=None)
    t.add_argument("--heads", type=int, default=None)
    t.add_argument("--layers", type=int, default=None)
    t.add_argument("--no-causal", action="store_true", help="train without the causal mask (it leaks)")
    t.add_argument("--task", choices=TASK_NAMES, default="reversal",
                   help="reversal (default), copy, sort or induction; a task other than reversal starts from its "
                        "default recipe (README), which the other flags override")
    t.add_argument("--positional", choices=POSITIONAL_KINDS, default=None,
                   help="position encoding: learned (default), sinusoidal, rotary or none")
    t.add_argument("--attention-dropout", type=float, default=None, metavar="P",
                   help="dropout on the attention weights while training, 0 to 0.9 (default 0)")
    t.add_argument("--out", required=True, help="folder for model.safetensors, config.json, history.csv")
    t.add_argument("--gif", metavar="FILE.gif", default=None,
                   help="also write the head grid's timeline as an animated GIF (one frame per recorded step)")
    t.add_argument("--mp4", metavar="FILE.mp4", default=None,
                   help="also write the head grid's timeline as an MP4 video (one frame per recorded step)")

    e = sub.add_parser("export", help="render one step of a preset, or the whole pipeline, as PNG, SVG, PDF or "
                                      "CSV, without a display")
    e.add_argument("--preset", required=True, help="cat-sat-mat, it-animal-street, magnitude, bank-river-loan, "
                                                   "lesson-random-4x8 or random-N")
    e.add_argument("--view", required=True, help="scores, scaled, masked, weights, output, or pipeline (every step "
                                                 "with Q, K and V in one figure; PNG, SVG or PDF)")
    e.add_argument("--out", required=True, help="FILE.png, FILE.svg, FILE.pdf or FILE.csv")
    e.add_argument("--mask", choices=("none", "causal"), default="none")
    e.add_argument("--scale", type=float, default=None, help="multiplier (default 1/sqrt(d_k))")
    from .cli_probe import add_probe_parser

    add_probe_parser(sub)
    from .cli_bench import add_parser as add_bench_parser

    add_bench_parser(sub)
    from .cli_lessons import add_parser as add_lessons_parser

    add_lessons_parser(sub)
    from .cli_experiment import add_parser as add_experiment_parser

    add_experiment_parser(sub)
    return p


class Progress:
    """Progress of a long command on stderr, fitted to where stderr goes.

    A terminal gets tqdm's live bar (one line redrawn in place). A file or a pipe gets a plain line (no carriage
    return) each time the run passes another 10 % of its total, or after ``LOG_EVERY_S`` seconds without one, so
    a log of a five-epoch run is a dozen readable lines rather than one 40 kB line of redrawn frames.
    """

    LOG_EVERY_S = 30.0

    def __init__(self, total: int, desc: str, unit: str = "step", stream: TextIO | None = None,
                 live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.desc, self.unit = max(int(total), 1), desc, unit
        self.live = _is_terminal(self.stream) if live is None else live
        self.start = self.last_line = time.monotonic()
        self.next_percent = 10
        self.done = 0
        self.bar: Any = None
        if self.live:
            from tqdm import tqdm

            # a terminal that reports no size (a pseudo-terminal nobody sized) would get no bar at all from tqdm
            sized = min(_terminal_size(self.stream)) > 0
            self.bar = tqdm(total=self.total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=sized,
                            ncols=None if sized else 100, nrows=None if sized else 24, leave=True, mininterval=0.1)

    def update(self, done: int, text: str = "") -> None:
        """``done`` of ``total`` finished; ``text``: what to show beside it (e.g. "loss 0.123 · seq-acc 45%")."""
        done = min(max(int(done), 0), self.total)
        if self.bar is not None:
            if text:
                self.bar.set_postfix_str(text, refresh=False)
            self.bar.update(done - self.bar.n)
            return
        now = time.monotonic()
        percent = 100 * done / self.total
        if done > self.done and (percent >= self.next_percent or done == self.total
                                 or now - self.last_line >= self.LOG_EVERY_S):
            self._line(done, now, text)
            self.next_percent = (math.floor(percent / 10) + 1) * 10
            self.last_line = now
        self.done = max(self.done, done)

    def _line(self, done: int, now: float, text: str) -> None:
        from tqdm import tqdm

        elapsed = now - self.start
        left = elapsed * (self.total - done) / done if done else 0.0
        parts = [f"{self.desc}: {self.unit} {done}/{self.total} ({100 * done / self.total:3.0f}%)",
                 f"{tqdm.format_interval(elapsed)} elapsed, {tqdm.format_interval(left)} left"]
        if text:
            parts.append(text)
        self.stream.write(" · ".join(parts) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _terminal_size(stream: Any) -> tuple[int, int]:
    """(columns, lines) of the terminal; 0s when unknown."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return 0, 0
    return size.columns, size.lines


def _animation_targets(args: argparse.Namespace) -> list[Path] | str:
    """The --gif / --mp4 files, checked before training starts (a typo must not cost a run); a message if wrong."""
    targets = []
    for flag in ("gif", "mp4"):
        value = getattr(args, flag, None)
        if value is None:
            continue
        path = Path(value)
        if path.suffix.lower() != f".{flag}":
            return f"--{flag} must name a .{flag} file (got {value!r})"
        if path.is_dir():
            return f"--{flag} names a folder: {value!r}"
        targets.append(path)
    return targets


def train_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``TrainConfig`` options the ``train`` flags set (only those given)."""
    overrides = {k: v for k, v in {
        "epochs": args.epochs, "steps": args.steps, "device": args.device, "seed": args.seed, "lr": args.lr,
        "batch_size": args.batch_size, "seq_len": args.seq_len, "vocab_size": args.vocab_size,
        "d_model": args.d_model, "num_heads": args.heads, "num_layers": args.layers,
        "positional": args.positional, "attention_dropout": args.attention_dropout,
    }.items() if v is not None}
    if args.epochs is not None and args.steps is None:
        overrides["steps"] = None  # epochs given: they decide, not a recipe's step count
    if args.no_causal:
        overrides["causal"] = False
    return overrides


def train_run(config: TrainConfig, out: Path, desc: str = "train") -> tuple[ReversalTrainer, dict[str, Any]]:
    """Train ``config`` with a progress bar on stderr and write the run's folder (``write_run_folder``); returns
    the trainer and its summary (the JSON ``train`` prints)."""
    from attention_core.training import ReversalTrainer

    trainer = ReversalTrainer(config)
    bar = Progress(config.total_steps, desc)

    def on_report(r: TrainingReport) -> None:
        bar.update(r.step, f"loss {r.loss:.3f} · seq-acc {r.sequence_accuracy:.1%}")

    try:
        trainer.run(on_report)
    finally:
        bar.close()
    write_run_folder(out, trainer)
    return trainer, trainer.summary()


def write_run_folder(out: Path, trainer: ReversalTrainer) -> None:
    """One trained run as ``train`` writes it: ``model.safetensors`` (weights + configs in its metadata),
    ``config.json`` and ``history.csv``."""
    from attention_core.checkpoint import save_checkpoint
    from attention_core.fileio import atomic_write
    from attention_core.training import write_history_csv

    config = trainer.config
    save_checkpoint(out / "model.safetensors", trainer.model, extra={"train_config": config.to_dict()})
    config_json = json.dumps({"model_config": config.model_config().to_dict(), "train_config": config.to_dict()},
                             indent=2)
    atomic_write(out / "config.json", lambda fh: fh.write(config_json), text=True)
    write_history_csv(out / "history.csv", trainer.history)


def cmd_train(args: argparse.Namespace) -> int:
    from attention_core.experiments import task_recipe

    targets = _animation_targets(args)
    if isinstance(targets, str):
        print(f"attention-playground train: {targets}", file=sys.stderr)
        return 2
    try:
        config = task_recipe(args.task, **train_overrides(args)).validate()
    except ValueError as exc:
        print(f"attention-playground train: {exc}", file=sys.stderr)
        return 2
    trainer, summary = train_run(config, Path(args.out))
    for target in targets:
        summary[target.suffix.lower().lstrip(".")] = _write_animation(target, trainer)
    print(json.dumps(summary))
    return 0


def _write_animation(target: Path, trainer: Any) -> str:
    """Film the run's head grid into ``target`` (GIF or MP4), one frame per recorded step; returns the path."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    from .animation import history_from_reports, write_timeline

    cfg = trainer.config
    history = history_from_reports(trainer.history, trainer.probe.tolist(), cfg.seq_len, cfg.causal, task=cfg.task,
                                   positional=cfg.positional, attention_dropout=cfg.attention_dropout)
    bar = Progress(len(history), f"write {target.name}", unit="frame")
    try:
        write_timeline(target, history, total_steps=cfg.total_steps, progress=lambda done, _n: bar.update(done))
    finally:
        bar.close()
    return str(target.resolve())


def export_context(preset_name: str, scale: float | None, d_k: int, mask: str = "none") -> ExportContext:
    """The setting an exported figure names: preset, mask, and the scale used (the default resolved)."""
    from attention_core.steps import default_scale

    return ExportContext(preset=preset_name, mask=mask, scale=default_scale(d_k) if scale is None else float(scale),
                         d_k=d_k)


def export_title(view: str, preset_name: str, scale: float | None, d_k: int, mask: str = "none") -> str:
    """An exported map's one-line title: what the step is, then the setting behind it (the preset, the mask and
    the scale, which every step after the raw scores depends on; ``None`` = the default 1/√d_k), e.g.
    "Weights = softmax — preset cat-sat-mat · causal mask · scale 1 (unscaled)". A scale of 1 is never called
    "scaled". The pipeline figure's title carries the same context."""
    return full_title(step_title(view, scale), export_context(preset_name, scale, d_k, mask))


def cmd_export(args: argparse.Namespace) -> int:
    from attention_core import attention_steps, causal_mask
    from attention_core.presets import get_preset

    view = args.view
    if view not in VIEWS:
        print(f"attention-playground export: unknown view {view!r}; choose one of {', '.join(VIEWS)}",
              file=sys.stderr)
        return 2
    suffix = Path(args.out).suffix.lower()
    allowed = (".png", ".svg", ".pdf") if view == "pipeline" else (".png", ".svg", ".pdf", ".csv")
    if suffix not in allowed:
        print(f"attention-playground export: --out must end in {', '.join(allowed)} for --view {view} "
              f"(got {args.out!r})", file=sys.stderr)
        return 2
    try:
        preset = get_preset(args.preset)
    except ValueError as exc:
        print(f"attention-playground export: {exc}", file=sys.stderr)
        return 2
    lq, lk = preset.q.shape[0], preset.k.shape[0]
    mask = None
    if args.mask == "causal":
        if lq != lk:
            print("attention-playground export: a causal mask needs as many queries as keys", file=sys.stderr)
            return 2
        mask = causal_mask(lq)
    try:
        steps = attention_steps(preset.q, preset.k, preset.v, mask=mask, scale=args.scale)
    except ValueError as exc:  # e.g. --scale nan
        print(f"attention-playground export: {exc}", file=sys.stderr)
        return 2
    context = export_context(preset.name, args.scale, preset.q.shape[1], args.mask)
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    if view == "pipeline":
        from .views.pipeline_figure import write_pipeline_figure

        write_pipeline_figure(args.out, steps, list(preset.query_tokens), list(preset.key_tokens), context=context)
        print(str(Path(args.out).resolve()))
        return 0
    values = getattr(steps, view)
    rows = list(preset.query_tokens)
    cols = list(preset.key_tokens) if view != "output" else [f"v{j}" for j in range(values.shape[1])]
    from .export import export_heatmap

    blocked = None if steps.mask is None else ~steps.mask
    export_heatmap(args.out, values, rows, cols, step_title(view, args.scale),
                   blocked=blocked if view in ("masked", "weights") else None,
                   kind="weights" if view == "weights" else "signed", context=context,
                   colorbar_label=colorbar_label(view, args.scale),
                   col_title="value dimension" if view == "output" else "")
    print(str(Path(args.out).resolve()))
    return 0


def run_gui(self_test_dir: str | None = None) -> int:
    from .gui import run

    return run(self_test_dir)


def main(argv: list[str]) -> int:
    args = _build_parser().parse_args(argv)
    if args.self_test is not None:
        return run_gui(args.self_test)
    if args.command in (None, "gui"):
        return run_gui(None)
    if args.command == "train":
        return cmd_train(args)
    if args.command == "export":
        return cmd_export(args)
    if args.command == "probe":
        from .cli_probe import cmd_probe

        return cmd_probe(args)
    if args.command == "bench":
        from .cli_bench import cmd_bench

        return cmd_bench(args)
    if args.command == "lessons":
        from .cli_lessons import cmd_lessons

        return cmd_lessons(args)
    if args.command == "experiment":
        from .cli_experiment import cmd_experiment

        return cmd_experiment(args)
    return 2
