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

from app.common.validation import Refused


def add_parser(sub: argparse._SubParsersAction) -> None:
    from attention_core.scaling.results import IMPLEMENTATIONS

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
    folder, then measure; 2 with the reason for bad input, before anything is measured. Only a GPU named (or
    ``all``) imports torch to be checked: every other refusal comes before it."""
    from app.common import stopping
    from app.common.outputs import check_output_file
    from app.common.progress import Progress
    from app.common.validation import check_bench
    from attention_core.scaling.measure import iter_scaling
    from attention_core.scaling.results import ScalingConfig, ScalingRun

    try:
        check_output_file(args.out, "--out", (".csv",))
        names = _device_names(args.devices)
        _no_repeats("--impl", args.impl)
        # the ranges and names first, torch-free: cpu stands in for the GPUs and "all" until they are looked up
        options = {"impls": tuple(args.impl), "dtype": args.dtype, "batch": args.batch, "heads": args.heads,
                   "d": args.d, "min_n": args.min_n, "max_n": args.max_n, "repeat": args.repeat,
                   "threads": args.threads or None, "memory_limit_mib": args.memory_limit_mib}
        if any(n != "cpu" for n in names):
            check_bench(ScalingConfig(devices=("cpu",), **options), dtypes=False)
            from attention_core import available_devices

            have = available_devices()
        else:
            have = ["cpu"]
        devices = have if names == ["all"] else names
        missing = [typed for typed, d in zip(args.devices, devices) if d not in have]
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            raise Refused(f"--devices {' '.join(missing)} {verb} not available here (available: {', '.join(have)})")
        cfg = check_bench(ScalingConfig(devices=tuple(devices), **options))
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


def _no_repeats(flag: str, values: list[str]) -> None:
    """A name given twice would be measured twice (two series of the same thing): refused, naming it."""
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise Refused(f"{flag} {' '.join(twice)}: named twice")


def _device_names(given: list[str]) -> list[str]:
    """``--devices`` spelt right (``cuda`` = ``cuda:0``), each once, ``all`` alone; no torch imported."""
    from app.common.validation import check_device_name

    if "all" in given and len(given) > 1:
        raise Refused(f"--devices {' '.join(given)}: 'all' already means every device here; give it alone")
    if given == ["all"]:
        return given
    names = []
    for d in given:
        try:
            names.append(check_device_name(d, "--devices"))
        except Refused:
            raise Refused(f"--devices {d}: unknown device; expected cpu, cuda, cuda:N or all") from None
    names = ["cuda:0" if n == "cuda" else n for n in names]
    _no_repeats("--devices", names)
    return names


def _fail(message: str) -> int:
    print(f"attention-playground bench: {message}", file=sys.stderr)
    return 2
