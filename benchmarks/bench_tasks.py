"""Time to >= 99 % greedy exact-sequence accuracy for each task's default recipe (``attention_core.tiny.experiments.
TASK_RECIPES``), over seeds, as a table; plus each trained model's best head task score (the head its ideal pattern
describes) and, for induction, layer 2's.

The clock runs as the GUI's Start does: the trainer (model, data, the step-0 evaluation) is built inside it, and it
stops at the first evaluation >= 99 %. "train s" is training compute alone (optimiser steps). The run then goes on
to the recipe's end for the final accuracy and head scores.

    .venv/bin/python benchmarks/bench_tasks.py [--seeds 0 1 2] [--tasks reversal copy sort induction]
"""

from __future__ import annotations

import argparse
import statistics
import time

from attention_core.tiny.experiments import TASK_RECIPES, task_recipe
from attention_core.tiny.tasks import TASK_NAMES
from attention_core.tiny.training import ReversalTrainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", choices=TASK_NAMES, default=list(TASK_NAMES))
    args = ap.parse_args()
    print(f"{'task':10} {'recipe':48} {'seed':>4} {'step@99%':>8} {'s to 99%':>8} {'train s':>7} "
          f"{'final acc':>9} {'best head':>9}")
    table = {}
    for task in args.tasks:
        times, steps = [], []
        for seed in args.seeds:
            t0 = time.perf_counter()
            trainer = ReversalTrainer(task_recipe(task, seed=seed))
            reached, wall, compute = None, float("nan"), float("nan")
            for r in trainer.reports():
                if reached is None and r.evaluated and r.sequence_accuracy >= 0.99:
                    reached, wall, compute = r.step, time.perf_counter() - t0, r.seconds
            last = trainer.history[-1]
            scores = last.head_task_scores
            best = float(scores.max()) if scores is not None else float("nan")
            if task == "induction" and scores is not None:
                best = float(scores[1].max())
            recipe = ", ".join(f"{k}={v}" for k, v in TASK_RECIPES[task].items()) or "defaults"
            print(f"{task:10} {recipe:48} {seed:>4} {reached if reached is not None else '-':>8} {wall:8.2f} "
                  f"{compute:7.2f} {last.sequence_accuracy:9.3f} {best:9.2f}", flush=True)
            if reached is not None:
                times.append(wall)
                steps.append(reached)
        table[task] = (times, steps)
    print("\nmedian over seeds (runs that reached 99 %):")
    for task, (times, steps) in table.items():
        if times:
            print(f"  {task:10} {statistics.median(steps):6.0f} steps  {statistics.median(times):6.2f} s  "
                  f"({len(times)}/{len(args.seeds)} seeds reached 99 %)")
        else:
            print(f"  {task:10} never reached 99 %")


if __name__ == "__main__":
    main()
