"""Command line: launch the GUI, train headless, export a preset's heatmap. torch is imported only where used."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attention_core.steps import STEP_NAMES, STEP_TITLES, default_scale  # torch-free

if TYPE_CHECKING:
    from attention_core.training import TrainingReport

VIEWS = STEP_NAMES  # what `export --view` accepts


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
    t.add_argument("--epochs", type=int, default=1, help="passes over the training set (default 1)")
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
    t.add_argument("--out", required=True, help="folder for model.safetensors, config.json, history.csv")

    e = sub.add_parser("export", help="render one step of a preset as PNG, SVG or CSV, without a display")
    e.add_argument("--preset", required=True, help="cat-sat-mat, it-animal-street, magnitude, bank-river-loan, "
                                                   "lesson-random-4x8 or random-N")
    e.add_argument("--view", required=True, help="scores, scaled, masked, weights or output")
    e.add_argument("--out", required=True, help="FILE.png, FILE.svg or FILE.csv")
    e.add_argument("--mask", choices=("none", "causal"), default="none")
    e.add_argument("--scale", type=float, default=None, help="multiplier (default 1/sqrt(d_k))")
    return p


class _ProgressBar:
    """A one-line text progress bar on stderr (tqdm-like, no dependency)."""

    def __init__(self, total: int, stream: Any = sys.stderr, width: int = 30) -> None:
        self.total, self.stream, self.width = max(total, 1), stream, width
        self.start = time.perf_counter()

    def update(self, done: int, text: str = "") -> None:
        frac = min(done / self.total, 1.0)
        filled = int(frac * self.width)
        elapsed = time.perf_counter() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} "
                          f"{elapsed:5.1f}s eta {eta:4.1f}s {text}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def cmd_train(args: argparse.Namespace) -> int:
    from attention_core.checkpoint import save_checkpoint
    from attention_core.fileio import atomic_write
    from attention_core.training import ReversalTrainer, TrainConfig, write_history_csv

    overrides = {k: v for k, v in {
        "epochs": args.epochs, "steps": args.steps, "device": args.device, "seed": args.seed, "lr": args.lr,
        "batch_size": args.batch_size, "seq_len": args.seq_len, "vocab_size": args.vocab_size,
        "d_model": args.d_model, "num_heads": args.heads, "num_layers": args.layers,
    }.items() if v is not None}
    if args.no_causal:
        overrides["causal"] = False
    try:
        config = TrainConfig(**overrides).validate()
    except ValueError as exc:
        print(f"attention-playground train: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    trainer = ReversalTrainer(config)
    bar = _ProgressBar(config.total_steps)

    def on_report(r: TrainingReport) -> None:
        bar.update(r.step, f"loss {r.loss:.3f} seq-acc {r.sequence_accuracy:.1%}")

    trainer.run(on_report)
    bar.close()
    summary = trainer.summary()
    save_checkpoint(out / "model.safetensors", trainer.model, extra={"train_config": config.to_dict()})
    config_json = json.dumps({"model_config": config.model_config().to_dict(), "train_config": config.to_dict()},
                             indent=2)
    atomic_write(out / "config.json", lambda fh: fh.write(config_json), text=True)
    write_history_csv(out / "history.csv", trainer.history)
    print(json.dumps(summary))
    return 0


def export_title(view: str, preset_name: str, scale: float | None, d_k: int) -> str:
    """An exported map's title: the step's title, the scale behind it (every step after the raw scores depends on
    it; ``None`` = the default 1/√d_k), then the preset: "Scaled scores (× 1, unscaled) — magnitude"."""
    if view == "scores":
        return f"{STEP_TITLES[view]} — {preset_name}"
    if scale is None:
        words = f"1/√{d_k}"
    elif scale == 1.0:
        words = "1, unscaled"
    elif math.isclose(scale, default_scale(d_k)):
        words = f"{scale:g} = 1/√{d_k}"
    else:
        words = f"{scale:g}"
    scale_part = f"(× {words})" if view == "scaled" else f"(scale {words})"
    return f"{STEP_TITLES[view]} {scale_part} — {preset_name}"


def cmd_export(args: argparse.Namespace) -> int:
    from attention_core import attention_steps, causal_mask
    from attention_core.presets import get_preset

    view = args.view
    if view not in VIEWS:
        print(f"attention-playground export: unknown view {view!r}; choose one of {', '.join(VIEWS)}",
              file=sys.stderr)
        return 2
    suffix = Path(args.out).suffix.lower()
    if suffix not in (".png", ".svg", ".csv"):
        print(f"attention-playground export: --out must end in .png, .svg or .csv (got {args.out!r})",
              file=sys.stderr)
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
    steps = attention_steps(preset.q, preset.k, preset.v, mask=mask, scale=args.scale)
    values = getattr(steps, view)
    rows = list(preset.query_tokens)
    cols = list(preset.key_tokens) if view != "output" else [f"v{j}" for j in range(values.shape[1])]
    title = export_title(view, preset.name, args.scale, preset.q.shape[1])
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    from .export import export_heatmap

    blocked = None if steps.mask is None else ~steps.mask
    export_heatmap(args.out, values, rows, cols, title,
                   blocked=blocked if view in ("masked", "weights") else None,
                   kind="weights" if view == "weights" else "signed")
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
    return 2
