"""A long trace on a Qwen2-0.5B-shaped model (random weights, built here: 24 layers x 14 query heads, 2 K/V heads,
d_model 896, vocabulary 151,936): 4,096 tokens traced, peak memory and time.

Target: the peak RSS increase (load + trace, over the RSS with torch, safetensors and tokenizers imported) within
1.5 x the weight bytes + 1 GB. The full maps alone would be 24 x 14 x 4,096^2 x 4 bytes = 22.5 GB and the logits
2.5 GB; a long trace keeps each head's map pooled to 256 x 256, its q, k, v and head outputs, and each position's top
tokens (``Trace.is_long``). Also times one head's exact map computed on demand (``head_map``) and a window of 256
queries (what the Model tab's head map computes while scrolling). Load average before and after: the machine is
shared.

    .venv/bin/python benchmarks/bench_long_trace.py [--dir FOLDER] [--tokens 4096] [--threads 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pretrained import _reset_peak, _status  # noqa: E402
from pretrained_shapes import ensure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=None, help="build (or reuse) the model here (default: a temp dir)")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    import safetensors.torch  # noqa: F401  (the libraries' own memory is not the model's)
    import tokenizers  # noqa: F401
    import torch

    from attention_core.pretrained import load_pretrained

    print(f"load average before: {os.getloadavg()}; threads {args.threads}", flush=True)
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-long-"))
    try:
        folder = ensure("qwen2-0.5b", root / "qwen2-0.5b")
        weight_bytes = (folder / "model.safetensors").stat().st_size
        torch.ones(64, 64) @ torch.ones(64, 64)
        _reset_peak()
        base = _status("VmRSS")
        t0 = time.perf_counter()
        model = load_pretrained(folder, threads=args.threads)
        load_s = time.perf_counter() - t0
        ids = (np.arange(args.tokens) * 7 + 3) % 380
        t0 = time.perf_counter()
        trace = model.trace(ids)
        trace_s = time.perf_counter() - t0
        peak = _status("VmHWM") - base
        budget = 1.5 * weight_bytes + 2**30
        t0 = time.perf_counter()
        trace.head_map(12, 5)
        head_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace.head_map(12, 5, slice(2000, 2256))
        window_s = time.perf_counter() - t0
        full_maps = model.info.layers * model.info.heads * args.tokens ** 2 * 4
        figures = {"tokens": len(trace), "is_long": trace.is_long, "weights_mib": weight_bytes / 2**20,
                   "load_s": load_s, "trace_s": trace_s, "peak_increase_mib": peak / 2**20,
                   "budget_mib": budget / 2**20, "kept_mib": trace.kept_bytes / 2**20,
                   "full_maps_mib": full_maps / 2**20, "head_map_s": head_s, "window_256_s": window_s,
                   "threads": args.threads}
        print(f"model: {model}")
        print(f"load {load_s:.1f} s; trace of {len(trace):,} tokens {trace_s:.1f} s (long: {trace.is_long})")
        print(f"peak RSS increase {peak / 2**20:,.0f} MiB against a budget of 1.5 x the weights "
              f"({weight_bytes / 2**20:,.0f} MiB) + 1 GiB = {budget / 2**20:,.0f} MiB: "
              f"{'within' if peak <= budget else 'OVER'}")
        print(f"the trace keeps {trace.kept_bytes / 2**20:,.0f} MiB (the full maps would be {full_maps / 2**30:.1f} "
              f"GiB); one head's exact map {head_s:.3f} s, a 256-query window {window_s:.3f} s")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
