"""Reversal training: seconds to >= 99 % exact-sequence (greedy) test accuracy, defaults vs the lesson's recipe.

Both run in the same process, over several seeds, evaluating every ``--eval-every`` steps. "train s" counts
training compute only (what the optimiser costs); "wall s" includes the evaluations. Ratio = lesson / defaults.

    .venv/bin/python benchmarks/bench_training.py [--seeds 0 1 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics

import torch

from attention_core import ReversalTrainer, TrainConfig


def time_to_target(config: TrainConfig, target: float) -> dict[str, float]:
    trainer = ReversalTrainer(config)
    last = trainer.run(stop_at_sequence_accuracy=target)
    heads = last.head_reversal_scores
    return {"steps": last.step, "train_s": last.seconds, "wall_s": last.wall_seconds,
            "acc": last.sequence_accuracy, "best_head": float(heads.max()), "reached": last.sequence_accuracy >= target}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--device", default="cpu")
    p.add_argument("--target", type=float, default=0.99)
    p.add_argument("--lesson-eval-every", type=int, default=10)
    args = p.parse_args()
    print(f"torch {torch.__version__}, training threads {TrainConfig().cpu_threads}, device {args.device}, "
          f"target {args.target:.0%} greedy exact-sequence test accuracy (500 held-out sequences)")
    print(f"{'recipe':<34} {'seed':>4} {'steps':>6} {'train s':>8} {'wall s':>7} {'seq acc':>8} {'best head':>9}")
    rows: dict[str, list[dict[str, float]]] = {"defaults": [], "lesson": []}
    for seed in args.seeds:
        recipes = {
            "defaults": TrainConfig(seed=seed, device=args.device, steps=400),
            "lesson": TrainConfig.lesson_recipe(seed=seed, device=args.device, steps=4000,
                                                eval_every=args.lesson_eval_every),
        }
        for name, cfg in recipes.items():
            r = time_to_target(cfg, args.target)
            rows[name].append(r)
            label = (f"defaults (Adam {cfg.lr:g}, batch {cfg.batch_size})" if name == "defaults"
                     else f"lesson (Adam {cfg.lr:g}, batch {cfg.batch_size})")
            flag = "" if r["reached"] else "  (target not reached)"
            print(f"{label:<34} {seed:>4} {r['steps']:>6} {r['train_s']:8.3f} {r['wall_s']:7.2f} "
                  f"{r['acc']:8.3f} {r['best_head']:9.3f}{flag}")
    d = statistics.median(r["train_s"] for r in rows["defaults"])
    lesson = statistics.median(r["train_s"] for r in rows["lesson"])
    ratios = [b["train_s"] / a["train_s"] for a, b in zip(rows["defaults"], rows["lesson"])]
    print(f"\nmedian training seconds to target: defaults {d:.3f} s, lesson {lesson:.3f} s, "
          f"ratio lesson/defaults {lesson / d:.1f}x (per seed: {', '.join(f'{x:.1f}x' for x in ratios)})")
    print(f"defaults under 1 s on every seed: {all(r['train_s'] < 1 and r['reached'] for r in rows['defaults'])}; "
          f"a head >= 0.9 on every seed: {all(r['best_head'] >= 0.9 for r in rows['defaults'])}")


if __name__ == "__main__":
    main()
