"""``attention-playground probe``: the causality probe from the command line (``attention_core.probe``).

- ``probe --checkpoint FILE [--position T] [--trials N]``: a trained model, on its probe sequence, with the mask it
  was trained with; the tokens after T are replaced by random tokens N times.
- ``probe --preset NAME --position T [--mask causal|none]``: plain attention on a preset's Q, K, V; rows after T
  of K and V are replaced by random rows.

stdout gets one JSON line ``{"position": T, "max_change_before": x, "max_change_after": y, "causal": bool}``; bad
input gets a message on stderr and exit code 2. torch is imported only for a checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

PROG = "attention-playground probe"


def add_probe_parser(sub: Any) -> None:
    """The ``probe`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    p = sub.add_parser("probe", help="causality probe: does any position up to T change when everything after T "
                                     "is replaced? (0.0 with the causal mask)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", metavar="FILE", help="a model saved by this app (safetensors)")
    src.add_argument("--preset", metavar="NAME", help="a preset's Q, K, V (cat-sat-mat, bank-river-loan, "
                                                      "lesson-random-4x8, random-N, ...)")
    p.add_argument("--position", type=int, default=None,
                   help="the last position kept (default for a checkpoint: the SEP position L; required for "
                        "--preset)")
    p.add_argument("--trials", type=int, default=8, help="random replacements to try (default 8)")
    p.add_argument("--mask", choices=("causal", "none"), default=None,
                   help="--preset only: the mask to probe (default causal); a checkpoint uses its own")
    p.add_argument("--seed", type=int, default=0, help="seed of the random replacements (default 0)")


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def cmd_probe(args: argparse.Namespace) -> int:
    """Run the probe and print its JSON; 2 with a message for bad input."""
    if args.trials < 1:
        return _fail(f"--trials must be >= 1 (got {args.trials})")
    if args.preset is not None:
        from attention_core.presets import get_preset
        from attention_core.probe import probe_attention_causality

        if args.position is None:
            return _fail("--preset needs --position T")
        try:
            preset = get_preset(args.preset)
            result = probe_attention_causality(preset.q, preset.k, preset.v, args.position,
                                               mask=args.mask or "causal", trials=args.trials, seed=args.seed)
        except ValueError as exc:
            return _fail(str(exc))
    else:
        if args.mask is not None:
            return _fail("--mask applies to --preset only; a checkpoint is probed with the mask it was trained "
                         "with")
        from pathlib import Path

        if not Path(args.checkpoint).is_file():  # said before torch is imported (~2 s)
            return _fail(f"{args.checkpoint}: no such file")
        from attention_core.checkpoint import CheckpointError
        from attention_core.probe import probe_checkpoint

        try:
            result = probe_checkpoint(args.checkpoint, args.position, trials=args.trials, seed=args.seed)
        except (CheckpointError, ValueError, OSError) as exc:
            return _fail(str(exc))
    print(json.dumps(result.to_json()))
    return 0
