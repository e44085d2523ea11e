"""``attention-playground bench``: the scaling lab from the command line.

Measures attention's time and peak memory against n per (device, implementation) (``attention_core.scaling``),
writes one CSV row per (device, implementation, n), shows progress on stderr (``app.common.progress.Progress``) and
prints one JSON line on stdout at the end: per series the fitted slopes and the largest n, the matmul limits, the
fused-over-naive speed-up.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    from attention_core.scaling import IMPLEMENTATIONS

    b = sub.add_parser("bench", help="measure attention's time and memory against n (the scaling lab) into a CSV")
    b.add_argument("--devices", nargs="+", default=["cpu"], help="cpu, cuda:0 … or 'all' (default cpu)")
    b.add_argument("--impl", nargs="+", default=list(IMPLEMENTATIONS),
                   help=f"implementations, any of {', '.join(IMPLEMENTATIONS)} (default all)")
    b.add_argument("--dtype", default="float32", help="float32, float16 or bfloat16 (half precision: CUDA only)")
    b.add_argument("--max-n", type=int, default=2048, help="largest sequence length (default 2048)")
    b.add_argument("--min-n", type=int, default=16, help="smallest sequence length; n doubles from it (default 16)")
    b.add_argument("--repeat", type=int, default=5, help="timed calls per point, median reported (default 5)")
    b.add_argument("--heads", type=int, default=4)
    b.add_argument("--d", type=int, default=64, help="head dimension (default 64)")
    b.add_argument("--batch", type=int, default=1)
    b.add_argument("--threads", type=int, default=1,
                   help="CPU threads of torch and numpy's BLAS during the run, 0 to 256 (default 1: steady figures "
                        "even on a busy machine; 0 = leave the libraries' own settings)")
    b.add_argument("--memory-limit-mib", type=float, default=None,
                   help="skip points estimated above this (default: half the free memory of each device)")
    b.add_argument("--out", required=True, help="FILE.csv (its folder must exist)")


def cmd_bench(args: argparse.Namespace) -> int:
    """Check the options (their ranges, a device that is there, a dtype something chosen can run) and the CSV's
    folder, then measure; 2 with the reason for bad input, before anything is measured."""
    from app.common import stopping
    from app.common.outputs import check_output_file
    from app.common.progress import Progress
    from app.common.validation import check_bench
    from attention_core import available_devices
    from attention_core.scaling import ScalingConfig, ScalingRun, iter_scaling

    try:
        check_output_file(args.out, "--out", (".csv",))
    except ValueError as exc:
        return _fail(str(exc))
    have = available_devices()
    devices = have if args.devices == ["all"] else [("cuda:0" if d == "cuda" else d) for d in args.devices]
    missing = [d for d in devices if d not in have]
    if missing:
        return _fail(f"device {', '.join(missing)} is not available here (available: {', '.join(have)})")
    try:
        cfg = check_bench(ScalingConfig(devices=tuple(devices), impls=tuple(args.impl), dtype=args.dtype,
                                        batch=args.batch, heads=args.heads, d=args.d, min_n=args.min_n,
                                        max_n=args.max_n, repeat=args.repeat, threads=args.threads or None,
                                        memory_limit_mib=args.memory_limit_mib))
    except ValueError as exc:  # Refused is one
        return _fail(str(exc))
    run = ScalingRun(cfg)
    bar = Progress(cfg.total_items, "bench", unit="point")
    try:
        for item in iter_scaling(cfg, cancel=stopping.pending):  # a stop ends the measuring between two calls
            run.add(item)
            what = getattr(item, "impl", "matmul limit")
            text = f"{what} on {item.device}" + (f" n={item.n}" if hasattr(item, "n") else "")
            bar.update(item.index, text + (" skipped" if item.skipped_reason else ""))
    finally:
        bar.close()
    stopping.check()  # stopped: no CSV of a run cut short
    with stopping.deferred():
        run.write_csv(args.out)
    summary = run.summary()
    summary["csv"] = str(Path(args.out).resolve())
    print(json.dumps(summary))
    return 0


def _fail(message: str) -> int:
    print(f"attention-playground bench: {message}", file=sys.stderr)
    return 2
