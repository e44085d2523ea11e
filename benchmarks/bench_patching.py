"""Activation patching against TransformerLens, the tool a patching user would otherwise run: the ``heads`` and
``resid`` sweeps on a GPT-2-small-shaped random model (built here by ``pretrained_shapes``: no download) at ~16
tokens, ours (``PretrainedModel.patch``) against ``transformer_lens.patching.get_act_patch_attn_head_out_all_pos`` /
``get_act_patch_resid_pre`` on ``TransformerBridge.boot_transformers`` of the same safetensors file, the same torch
threads, alternating call by call in one process (a change in the machine's load falls on both).

Target: ours >= 2x faster (TransformerLens's time over ours). Printed per sweep: both times, the ratio, the largest
difference of the two results against their largest value, and the load average before and after each pair.
TransformerLens is a test/benchmark extra only (pyproject's ``test``); without it this prints why and exits 2.

    .venv/bin/python benchmarks/bench_patching.py [--dir FOLDER] [--tokens 16] [--rounds 2] [--threads 1] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, help="the model folder (built there when missing; default: a temporary one)")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformer_lens.patching as tl_patching
        from transformer_lens.model_bridge import TransformerBridge
    except ImportError as exc:
        print(f"bench_patching: transformer_lens is not installed ({exc}); pip install -e '.[test]'", file=sys.stderr)
        raise SystemExit(2) from None
    import torch
    from pretrained_shapes import ensure
    from transformers import PreTrainedTokenizerFast

    from attention_core.pretrained import load_pretrained

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = ensure("gpt2-small", args.dir or Path(tmp) / "gpt2-small")
        tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
        bridge = TransformerBridge.boot_transformers(str(folder), tokenizer=tok, device="cpu")
        bridge.enable_compatibility_mode()
        ours = load_pretrained(folder, threads=args.threads)
        rng = np.random.default_rng(0)
        clean = rng.integers(10, ours.spec.vocab_size - 10, args.tokens).tolist()
        corrupted = list(clean)
        corrupted[args.tokens // 3], corrupted[2 * args.tokens // 3] = 7, 8
        target, foil = 5, 6
        _, cache = bridge.run_with_cache(torch.tensor([clean]))

        def metric(logits: Any) -> Any:
            return logits[0, -1, target] - logits[0, -1, foil]

        sweeps = {"heads": tl_patching.get_act_patch_attn_head_out_all_pos,
                  "resid": tl_patching.get_act_patch_resid_pre}
        rows = []
        print(f"GPT-2-small shape, {args.tokens} tokens, {args.threads} thread(s), torch {torch.__version__}")
        for sweep, theirs in sweeps.items():
            t_ours, t_theirs, diff, scale = [], [], 0.0, 0.0
            for _ in range(args.rounds):
                before = _load()
                t0 = time.perf_counter()
                ref = theirs(bridge, torch.tensor([corrupted]), cache, metric).detach().numpy()
                t1 = time.perf_counter()
                got = ours.patch(clean, corrupted, target=target, foil=foil, sweep=sweep).values
                t2 = time.perf_counter()
                t_theirs.append(t1 - t0)
                t_ours.append(t2 - t1)
                diff, scale = max(diff, float(np.abs(ref - got).max())), float(np.abs(ref).max())
                print(f"  {sweep}: TransformerLens {t1 - t0:6.2f} s, ours {t2 - t1:6.2f} s, "
                      f"{(t1 - t0) / (t2 - t1):.1f} x (load {before} -> {_load()})", flush=True)
            ratio = float(np.median(t_theirs) / np.median(t_ours))
            rows.append({"sweep": sweep, "ours_s": float(np.median(t_ours)),
                         "transformer_lens_s": float(np.median(t_theirs)), "ratio": ratio,
                         "max_difference": diff, "largest_value": scale, "target": ">= 2.0",
                         "load": _load()})
            print(f"{sweep}: median ours {np.median(t_ours):.2f} s vs TransformerLens {np.median(t_theirs):.2f} s = "
                  f"{ratio:.1f} x faster (target >= 2 x); largest difference {diff:.2g} of {scale:.2g}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
