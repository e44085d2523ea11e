"""Reversal training: what evaluation costs, before and after, and seconds from Start to >= 99 % accuracy.

Everything runs in this one process, so the figures compare on the same (possibly busy) machine:

1. **Headless ``train``** at the defaults (``--epochs 1``, and 5): wall seconds / training compute
   ("train s": the optimiser steps only), with today's evaluation (one teacher-forced pass, dense early and sparse
   later, ``attention_core.tiny.evaluation``) and with the old one ("legacy": every test and train-subset sequence
   decoded token by token, every ``eval_every`` steps), per seed. Target: wall <= 1.5 x compute.
2. **Start -> >= 99 %** greedy exact-sequence test accuracy, as the GUI's Start does it (the trainer, its data and
   the step-0 evaluation are built after Start; the clock stops at the first evaluation >= 99 %), for the defaults
   (new and legacy evaluation) and for the lesson's recipe (Adam 3e-4, batch 128) with the same new evaluation,
   evaluated every ``--lesson-eval-every`` steps. Target: lesson / defaults >= 10 x. The strict ratio divides the
   lesson's *training compute alone* by the defaults' whole Start -> 99 % time.

    .venv/bin/python benchmarks/bench_training.py [--seeds 0 1 2] [--epochs 1 5] [--no-legacy] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from attention_core import ReversalTrainer, TrainConfig


class LegacyTrainer(ReversalTrainer):
    """The evaluation as it was before the teacher-forced one: token-by-token greedy decoding
    (``evaluate_reference``)."""

    def evaluate(self) -> dict[str, Any]:
        return self.evaluate_reference()


def legacy(config: TrainConfig) -> TrainConfig:
    return TrainConfig.from_dict({**config.to_dict(), "evals_per_doubling": None})


def headless(config: TrainConfig, old: bool) -> dict[str, float]:
    trainer = (LegacyTrainer if old else ReversalTrainer)(legacy(config) if old else config)
    last = trainer.run()
    return {"steps": last.step, "train_s": last.seconds, "wall_s": last.wall_seconds,
            "ratio": last.wall_seconds / last.seconds, "acc": last.sequence_accuracy,
            "evals": sum(r.evaluated for r in trainer.history)}


def start_to_target(config: TrainConfig, target: float, old: bool = False) -> dict[str, float]:
    t0 = time.perf_counter()
    trainer = (LegacyTrainer if old else ReversalTrainer)(config)
    last = trainer.run(stop_at_sequence_accuracy=target)
    return {"steps": last.step, "start_s": time.perf_counter() - t0, "train_s": last.seconds,
            "acc": last.sequence_accuracy, "best_head": float(last.head_reversal_scores.max()),
            "reached": last.sequence_accuracy >= target}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, nargs="+", default=[1, 5])
    p.add_argument("--device", default="cpu")
    p.add_argument("--target", type=float, default=0.99)
    p.add_argument("--lesson-eval-every", type=int, default=10)
    p.add_argument("--no-legacy", action="store_true", help="skip the old evaluation (it is slow)")
    args = p.parse_args()
    print(f"torch {torch.__version__}, training threads {TrainConfig().cpu_threads}, device {args.device}, "
          f"target {args.target:.0%} greedy exact-sequence test accuracy (500 held-out sequences)")
    ReversalTrainer(TrainConfig(steps=2, device=args.device)).run()  # warm-up: torch's first calls are slow

    print("\n1. headless train at the defaults: wall / training compute (target <= 1.5x)")
    print(f"{'evaluation':<8} {'epochs':>6} {'seed':>4} {'steps':>5} {'evals':>5} {'train s':>8} {'wall s':>7} "
          f"{'wall/train':>10} {'seq acc':>7}")
    ratios: dict[tuple[str, int], list[float]] = {}
    for epochs in args.epochs:
        for seed in args.seeds:
            for old in ([False] if args.no_legacy else [False, True]):
                name = "legacy" if old else "new"
                r = headless(TrainConfig(epochs=epochs, seed=seed, device=args.device), old)
                ratios.setdefault((name, epochs), []).append(r["ratio"])
                print(f"{name:<8} {epochs:>6} {seed:>4} {r['steps']:>5} {r['evals']:>5} {r['train_s']:8.3f} "
                      f"{r['wall_s']:7.2f} {r['ratio']:9.2f}x {r['acc']:7.3f}", flush=True)
    for (name, epochs), xs in ratios.items():
        verdict = "" if name == "legacy" else f" (target <= 1.5x: {'met' if max(xs) <= 1.5 else 'NOT met'})"
        print(f"  {name} evaluation, --epochs {epochs}: wall/train median {statistics.median(xs):.2f}x, "
              f"worst {max(xs):.2f}x{verdict}")

    print(f"\n2. Start -> >= {args.target:.0%} (trainer built after Start; target lesson / defaults >= 10x)")
    print(f"{'recipe':<40} {'seed':>4} {'steps':>6} {'train s':>8} {'Start->':>8} {'seq acc':>7} {'best head':>9}")
    rows: dict[str, list[dict[str, float]]] = {}
    for seed in args.seeds:
        recipes = {
            "defaults": (TrainConfig(seed=seed, device=args.device, steps=400), False),
            "defaults, legacy evaluation": (legacy(TrainConfig(seed=seed, device=args.device, steps=400)), True),
            "lesson": (TrainConfig.lesson_recipe(seed=seed, device=args.device, steps=4000,
                                                 eval_every=args.lesson_eval_every, evals_per_doubling=None), False),
        }
        for name, (cfg, old) in recipes.items():
            if old and args.no_legacy:
                continue
            r = start_to_target(cfg, args.target, old)
            rows.setdefault(name, []).append(r)
            label = f"{name} (Adam {cfg.lr:g}, batch {cfg.batch_size})"
            flag = "" if r["reached"] else "  (target not reached)"
            print(f"{label:<40} {seed:>4} {r['steps']:>6} {r['train_s']:8.3f} {r['start_s']:7.2f}s "
                  f"{r['acc']:7.3f} {r['best_head']:9.3f}{flag}", flush=True)
    d = [r["start_s"] for r in rows["defaults"]]
    lesson_start = [r["start_s"] for r in rows["lesson"]]
    lesson_train = [r["train_s"] for r in rows["lesson"]]
    per_seed = [b / a for a, b in zip(d, lesson_start)]
    strict = [b / a for a, b in zip(d, lesson_train)]
    old_rows = rows.get("defaults, legacy evaluation", [])
    print(f"  median Start -> target: defaults {statistics.median(d):.2f} s, lesson "
          f"{statistics.median(lesson_start):.2f} s" + (f", defaults with the legacy evaluation "
                                                         f"{statistics.median(r['start_s'] for r in old_rows):.2f} s"
                                                         if old_rows else ""))
    print(f"  lesson / defaults: {', '.join(f'{x:.1f}x' for x in per_seed)} (target >= 10x: "
          f"{'met' if min(per_seed) >= 10 else 'NOT met'}); strict (lesson training compute alone / defaults "
          f"Start -> target): {', '.join(f'{x:.1f}x' for x in strict)}")
    print(f"  a head >= 0.9 on every seed (defaults): {all(r['best_head'] >= 0.9 for r in rows['defaults'])}")


if __name__ == "__main__":
    main()
