"""``attention-playground experiment``: train the runs of an experiment one after another, headless.

- ``experiment --list``: one line per preset: id, runs, title.
- ``experiment --preset NAME --out DIR`` or ``experiment --runs FILE.json --out DIR``: each run trained and written to
  its own folder ``DIR/NN-name`` exactly as ``train`` writes one (model.safetensors, config.json, history.csv), then
  ``DIR/summary.csv`` (one row per run). stdout: one JSON line per finished run (what ``train`` prints) and a last
  line ``{"experiment": …, "out": …, "differing": […], "runs": [summary rows]}``. Progress on stderr; bad input exits
  2 with a message.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from typing import Any

from app.common.outputs import check_run_folder
from app.common.validation import Refused

PROG = "attention-playground experiment"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("experiment", help="train 2-6 runs that differ in some options and compare them "
                                          "(presets: positions, causal-vs-bidirectional, heads-1-vs-4, dropout, tasks)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--list", action="store_true", help="name the presets")
    src.add_argument("--preset", metavar="NAME", help="a preset's id (see --list)")
    src.add_argument("--runs", metavar="FILE.json",
                     help='runs from a file: {"base": {option: value}, "runs": [{option: value, "name": …}, …]}')
    p.add_argument("--out", metavar="DIR", help="folder for one sub-folder per run and summary.csv")
    p.add_argument("--steps", type=int, default=None, help="train every run this many steps (overrides the runs)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: each run's, cpu)")
    p.add_argument("--force", action="store_true", help="replace runs already in --out (refused without it)")


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def _checked(index: int, config: Any, flagged: dict[str, str]) -> Any:
    """``config`` through the CLI's checks (ranges, combination, memory); a refusal names the run, and each option
    by the word the user wrote: the flag for what ``flagged`` holds (``--steps``, ``--device``), else the run's own
    key (``seq_len``, as in a runs file and ``TrainConfig``)."""
    from dataclasses import fields

    from app.common.validation import check_train

    names = {f.name: f.name for f in fields(config)} | flagged
    try:
        return check_train(config, names=names)
    except ValueError as exc:
        raise Refused(f"run {index}: {exc}") from None


def _check_flags(args: argparse.Namespace) -> dict[str, str]:
    """The options given on the command line, checked once in their own words (not once per run); returns
    field -> flag for those given."""
    from app.common.validation import TRAIN_LIMITS, check_device_name, check_options

    if args.list:
        given = [flag for flag, value in (("--out", args.out), ("--steps", args.steps), ("--device", args.device),
                                          ("--force", args.force or None)) if value is not None]
        if given:
            raise Refused(f"--list takes no other option (got {', '.join(given)})")
        return {}
    if not args.out:
        raise Refused("--out DIR is required with --preset or --runs")
    check_options({"steps": args.steps}, TRAIN_LIMITS)
    if args.device is not None:
        check_device_name(args.device)
    return {f: flag for f, flag, value in (("steps", "--steps", args.steps), ("device", "--device", args.device))
            if value is not None}


def _folder_name(index: int, name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9.=-]+", "-", name).strip("-").lower() or "run"
    return f"{index:02d}-{slug[:60]}"


def cmd_experiment(args: argparse.Namespace) -> int:
    from attention_core.tiny.experiments import EXPERIMENT_PRESETS, differing_options, load_runs_file, summary_row
    from attention_core.tiny.experiments import write_summary_csv as write_csv

    try:
        flagged = _check_flags(args)
    except Refused as exc:
        return _fail(str(exc))
    if args.list:
        for preset in EXPERIMENT_PRESETS.values():
            print(f"{preset.id}\t{len(preset.runs)} runs\t{preset.title}")
        return 0
    try:
        if args.preset is not None:
            if args.preset not in EXPERIMENT_PRESETS:
                return _fail(f"--preset {args.preset}: unknown preset; choose one of "
                             f"{', '.join(EXPERIMENT_PRESETS)} (--list names them)")
            runs = EXPERIMENT_PRESETS[args.preset].build()
        else:
            runs = load_runs_file(args.runs)
        changes: dict[str, Any] = {}
        if args.steps is not None:
            changes["steps"] = args.steps
        if args.device is not None:
            changes["device"] = args.device
        runs = [replace(r, config=_checked(i, replace(r.config, **changes), flagged)) for i, r in enumerate(runs, 1)]
        out = check_run_folder(args.out, "--out", force=args.force)
        for i, run in enumerate(runs, 1):  # a run's folder from an earlier experiment: replaced only with --force
            if (out / _folder_name(i, run.name)).exists():
                check_run_folder(out / _folder_name(i, run.name), "--out", force=args.force)
    except ValueError as exc:  # Refused is one
        return _fail(str(exc))
    from app.common import stopping
    from app.training.cli import train_run

    rows = []
    for i, run in enumerate(runs, 1):
        folder = out / _folder_name(i, run.name)
        trainer, summary = train_run(run.config, folder, desc=f"run {i}/{len(runs)} {run.name}")
        print(json.dumps({"run": run.name, "folder": str(folder.resolve()), **summary}), flush=True)
        rows.append({**summary_row(run, trainer.history), "folder": folder.name})
    comments = ["# Attention Playground: experiment summary, one row per run",
                f"# experiment: {args.preset or args.runs}",
                f"# differing options: {', '.join(differing_options([r.config for r in runs])) or 'none'}"]
    with stopping.deferred():
        write_csv(out / "summary.csv", rows, comments)
    print(json.dumps({"experiment": args.preset or str(args.runs), "out": str(out.resolve()),
                      "differing": differing_options([r.config for r in runs]), "runs": rows}))
    return 0
