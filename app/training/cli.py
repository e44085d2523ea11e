"""The Training feature's commands: ``train`` (train headless, optionally filming the heads) and ``probe`` (the
causality probe).

``train``: a task's recipe (or the flags) trained with a progress bar on stderr; the run's folder (model, config,
history) and optionally a GIF/MP4 film of the head grid; one JSON summary line on stdout.

``probe``: the causality probe (``attention_core.tiny.probe``).
- ``probe --checkpoint FILE|DIR [--position T] [--trials N]``: a trained model (its ``.safetensors``, or the run's
  folder ``train --out`` wrote), on its probe sequence, with the mask it was trained with; the tokens after T are
  replaced by random tokens N times.
- ``probe --preset NAME --position T [--mask causal|none]``: plain attention on a preset's Q, K, V; rows after T
  of K and V are replaced by random rows.

stdout gets one JSON line ``{"position": T, "max_change_before": x, "max_change_after": y, "causal": bool}``; bad
input gets a message on stderr and exit code 2. torch is imported only for a checkpoint, once the file's header
(read as JSON) says it is one and the position is in range.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.common import stopping
from app.common.outputs import check_output_file, check_run_folder
from app.common.progress import Progress
from app.common.validation import (
    PROBE_LIMITS,
    Refused,
    check_causal_fits,
    check_options,
    check_preset_name,
    check_train,
)
from attention_core.positions import POSITIONAL_KINDS
from attention_core.tiny.tasks import TASK_NAMES  # torch-free

if TYPE_CHECKING:
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.report import TrainingReport
    from attention_core.tiny.training import ReversalTrainer

TRAIN = "attention-playground train"
PROBE = "attention-playground probe"
CHECKPOINT_FORMAT = "attention-playground/tiny-transformer"
"""``attention_core.tiny.checkpoint.FORMAT``, which imports torch: ``probe`` tells a foreign file without it."""


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return 2


def add_train_parser(sub: Any) -> None:
    """The ``train`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    t = sub.add_parser("train", help="train the tiny reversal transformer headless")
    length = t.add_mutually_exclusive_group()  # both given, one was silently ignored: refused, naming both
    length.add_argument("--epochs", type=int, default=None,
                        help="passes over the training set (default 1; for copy, sort and induction their recipe's "
                             "steps)")
    length.add_argument("--steps", type=int, default=None, help="train this many batches instead of --epochs")
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
                        "default recipe (docs/library.md, Tasks), which the other flags override")
    t.add_argument("--positional", choices=POSITIONAL_KINDS, default=None,
                   help="position encoding: learned (default), sinusoidal, rotary or none")
    t.add_argument("--attention-dropout", type=float, default=None, metavar="P",
                   help="dropout on the attention weights while training, 0 to 0.9 (default 0)")
    t.add_argument("--out", required=True, help="folder for model.safetensors, config.json, history.csv (its parent "
                                                "must exist)")
    t.add_argument("--force", action="store_true", help="replace a run already in --out (refused without it)")
    t.add_argument("--gif", metavar="FILE.gif", default=None,
                   help="also write the head grid's timeline as an animated GIF (one frame per recorded step)")
    t.add_argument("--mp4", metavar="FILE.mp4", default=None,
                   help="also write the head grid's timeline as an MP4 video (one frame per recorded step)")


def _animation_targets(args: argparse.Namespace) -> list[Path]:
    """The --gif / --mp4 files, checked before training starts (a typo or an unwritable folder must not cost a
    run); ``Refused`` with the reason if wrong."""
    targets = []
    for flag in ("gif", "mp4"):
        value = getattr(args, flag, None)
        if value is not None:
            targets.append(check_output_file(value, f"--{flag}", (f".{flag}",)))
            if flag == "mp4":
                from app.training.film import mp4_problem  # loads Qt: only when a film is asked for

                if problem := mp4_problem():  # no ffmpeg here (the bundle ships none): say so before training
                    raise Refused(f"--mp4: {problem} (--gif writes the same film)")
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
    from attention_core.tiny.training import ReversalTrainer

    trainer = ReversalTrainer(config)
    bar = Progress(config.total_steps, desc)

    def on_report(r: TrainingReport) -> None:
        stopping.check()  # a stop that a library swallowed is raised here, at the next step
        bar.update(r.step, f"loss {r.loss:.3f} · seq-acc {r.sequence_accuracy:.1%}")

    try:
        trainer.run(on_report)
    finally:
        bar.close()
    with stopping.deferred():  # the three files together or none: a stop waits for them (milliseconds)
        write_run_folder(out, trainer)
    return trainer, trainer.summary()


def write_run_folder(out: Path, trainer: ReversalTrainer) -> None:
    """One trained run as ``train`` writes it: ``model.safetensors`` (weights + configs in its metadata),
    ``config.json`` and ``history.csv``."""
    from attention_core.fileio import atomic_write
    from attention_core.tiny.checkpoint import save_checkpoint
    from attention_core.tiny.report import write_history_csv

    config = trainer.config
    save_checkpoint(out / "model.safetensors", trainer.model, extra={"train_config": config.to_dict()})
    config_json = json.dumps({"model_config": config.model_config().to_dict(), "train_config": config.to_dict()},
                             indent=2)
    atomic_write(out / "config.json", lambda fh: fh.write(config_json), text=True)
    write_history_csv(out / "history.csv", trainer.history, history_comments(trainer.history, config))


def history_comments(reports: Any, config: TrainConfig) -> list[str]:
    """``history.csv``'s ``#`` lines: the run's task, last step and test accuracy (with the step it was measured
    at), from the same ``ExportContext`` the Training tab's figures name."""
    from app.common.heatmap_files import context_comments
    from app.common.titles import ExportContext

    last = reports[-1] if len(reports) else None
    measured = next((r.step for r in reversed(reports) if r.evaluated), None)
    context = ExportContext(task=config.task, step=None if last is None else last.step,
                            total_steps=None if last is None else last.total_steps,
                            accuracy=None if last is None else float(last.sequence_accuracy), accuracy_step=measured,
                            causal=config.causal, positional=config.positional,
                            attention_dropout=config.attention_dropout)
    return context_comments("Training metrics history, one row per recorded step", context)


def cmd_train(args: argparse.Namespace) -> int:
    """Check every option and output (exit 2 with the reason, before any work), train, write the run's folder,
    then the films; print the JSON summary."""
    from attention_core.tiny.experiments import task_recipe

    try:
        config = check_train(task_recipe(args.task, **train_overrides(args)))
        out = check_run_folder(args.out, "--out", force=args.force)
        targets = _animation_targets(args)
    except ValueError as exc:  # Refused is one
        return _fail(TRAIN, str(exc))
    trainer, summary = train_run(config, out)
    for target in targets:
        summary[target.suffix.lower().lstrip(".")] = _write_animation(target, trainer)
    print(json.dumps(summary))
    return 0


def _write_animation(target: Path, trainer: Any) -> str:
    """Film the run's head grid into ``target`` (GIF or MP4), one frame per recorded step; returns the path. Qt
    renders the frames, so a stop is noted and acted on between two frames (``stopping``): the temporary file is
    removed and no film is left."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    with stopping.deferred():
        from app.training.film import history_from_reports, write_timeline

        cfg = trainer.config
        history = history_from_reports(trainer.history, trainer.probe.tolist(), cfg.seq_len, cfg.causal,
                                       task=cfg.task, positional=cfg.positional,
                                       attention_dropout=cfg.attention_dropout)
        bar = Progress(len(history), f"write {target.name}", unit="frame")
        try:
            write_timeline(target, history, total_steps=cfg.total_steps, progress=lambda done, _n: bar.update(done),
                           cancelled=stopping.pending)
        except OSError:
            stopping.check()  # ffmpeg ended by the same Ctrl+C: a stop, not an error
            raise
        finally:
            bar.close()
    return str(target.resolve())


def add_probe_parser(sub: Any) -> None:
    """The ``probe`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    p = sub.add_parser("probe", help="causality probe: does any position up to T change when everything after T "
                                     "is replaced? (0.0 with the causal mask)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", metavar="FILE", help="a model saved by this app: a run's folder (train "
                                                           "--out) or its model.safetensors")
    src.add_argument("--preset", metavar="NAME", help="a preset's Q, K, V (cat-sat-mat, bank-river-loan, "
                                                      "lesson-random-4x8, random-N, ...)")
    p.add_argument("--position", type=int, default=None,
                   help="the last position kept (default for a checkpoint: the SEP position L; required for "
                        "--preset)")
    p.add_argument("--trials", type=int, default=8, help="random replacements to try (default 8; 1 to 10000)")
    p.add_argument("--mask", choices=("causal", "none"), default=None,
                   help="--preset only: the mask to probe (default causal); a checkpoint uses its own")
    p.add_argument("--seed", type=int, default=0, help="seed of the random replacements (default 0; 0 to 2^31-1)")


def cmd_probe(args: argparse.Namespace) -> int:
    """Run the probe and print its JSON; 2 with a message for bad input (every one that needs no tensor before
    torch is imported)."""
    try:
        check_options({"trials": args.trials, "seed": args.seed}, PROBE_LIMITS)
        if args.preset is not None:
            result = _probe_preset(args)
        else:
            result = _probe_checkpoint(args)
    except ValueError as exc:  # Refused, CheckpointError are
        return _fail(PROBE, str(exc))
    print(json.dumps(result.to_json()))
    return 0


def _check_position(position: int, length: int, what: str) -> None:
    """``--position`` within 0 … ``length`` − 2 (something must come after it), in the flag's words."""
    if not 0 <= position <= length - 2:
        raise Refused(f"--position {position} is out of range: expected an integer from 0 to {length - 2} ({what}; "
                      "something must come after the position)")


def _probe_preset(args: argparse.Namespace) -> Any:
    from attention_core.presets import get_preset
    from attention_core.tiny.probe import probe_attention_causality

    if args.position is None:
        raise Refused("--preset needs --position T")
    preset = get_preset(check_preset_name(args.preset))
    lq, lk = preset.q.shape[0], preset.k.shape[0]
    mask = args.mask or "causal"
    if mask == "causal":
        check_causal_fits(lq, lk, args.preset)
    _check_position(args.position, lk, f"--preset {args.preset} has {lk} keys")
    return probe_attention_causality(preset.q, preset.k, preset.v, args.position, mask=mask, trials=args.trials,
                                     seed=args.seed)


def checkpoint_header(path: Path) -> dict[str, Any]:
    """A safetensors file's metadata, read as the format lays it out (8 bytes of header length, then JSON) without
    torch; ``Refused`` naming ``--checkpoint`` when the file is not one."""
    try:
        with path.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 2 <= size <= 100_000_000:
                raise ValueError("it does not start with a header's length")
            header = json.loads(fh.read(size))
    except (OSError, ValueError) as exc:
        why = "its header is not JSON" if isinstance(exc, json.JSONDecodeError) else exc
        raise Refused(f"--checkpoint {path}: not a safetensors file ({why})") from None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else {}


def _probe_checkpoint(args: argparse.Namespace) -> Any:
    """``--checkpoint`` a run's folder or its file; the position checked against the run's L from the header."""
    if args.mask is not None:
        raise Refused("--mask applies to --preset only; a checkpoint is probed with the mask it was trained with")
    path = Path(args.checkpoint)
    if path.is_dir():  # the folder `train --out` wrote, as `inspect --model` takes it
        if not (path / "model.safetensors").is_file():
            raise Refused(f"--checkpoint {path}: no model.safetensors in the folder (give the folder `train --out` "
                          "wrote, or a .safetensors file this app saved)")
        path = path / "model.safetensors"
    elif not path.is_file():
        raise Refused(f"--checkpoint {path}: no such file or folder")
    meta = checkpoint_header(path)
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise Refused(f"--checkpoint {path}: not a model this app saved (format {meta.get('format')!r})")
    if args.position is not None:
        try:
            seq_len = int(json.loads(meta.get("extra", "{}")).get("train_config", {})["seq_len"])
        except (KeyError, TypeError, ValueError, AttributeError):
            seq_len = 0  # an older file: the library reads it from the model and checks
        if seq_len:
            _check_position(args.position, 2 * seq_len, f"the model reads {2 * seq_len} positions, 0 to "
                                                        f"{2 * seq_len - 1}")
    from attention_core.tiny.checkpoint import CheckpointError
    from attention_core.tiny.probe import probe_checkpoint

    try:
        return probe_checkpoint(path, args.position, trials=args.trials, seed=args.seed)
    except (CheckpointError, OSError) as exc:
        raise Refused(f"--checkpoint {exc}") from None
