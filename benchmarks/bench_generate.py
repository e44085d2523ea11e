"""Decoding speed on a GPT-2-small-sized random model (124 M parameters, built here by ``bench_pretrained``): our
``PretrainedModel.generate`` over its key/value cache, recording every head's attention row at each step, against
(1) the same decoding without a cache (each token runs the whole sequence again, recording nothing: the cheapest
no-cache path) and (2) transformers' ``generate(use_cache=True)`` with eager attention on the same safetensors file,
float32, the same torch threads, the same prompt, greedy, no end-of-text stop, recording nothing. Ours and
transformers' alternate run by run in one process (a change in the machine's load falls on both); the figures are
medians. The load average is printed before and after.

Targets: ours >= 1.0 x transformers' tokens per second; ours >= 5 x the no-cache path at 256 tokens (prompt and new
tokens together): the per-token rate of the last ``--tail`` tokens before 256, ours (each step's own seconds, every
round) against a whole run of the same tokens each, timed right after in the same round; the ratio is the median
of the rounds' (``--full-no-cache`` also times that path over the whole
generation, minutes on a busy machine). transformers is a test-only dependency: where it is absent the reference
row says so.

    .venv/bin/python benchmarks/bench_generate.py [--tokens 256] [--prompt-tokens 16] [--rounds 3] [--threads 1]
        [--tail 8] [--full-no-cache] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_VS_REFERENCE = 1.0
TARGET_VS_NO_CACHE = 5.0


def _prompt(model: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids += model.encode("The quick brown fox jumps over the lazy dog. Attention is all you need. ")
    return ids[:n]


def no_cache(model: Any, ids: list[int], lengths: range) -> tuple[list[float], bool]:
    """Greedy decoding without a cache: the token after ``ids[:n]`` from a whole run of those n tokens (logits of
    the last position only), for each n in ``lengths``. Returns each token's seconds and whether every token
    equals ``ids[n]`` (the cached decoding's)."""
    import torch

    seconds, same = [], True
    for n in lengths:
        start = time.perf_counter()
        out = model.forward(ids[:n], logit_positions=slice(-1, None))
        token = int(torch.argmax(out.logits[0, -1]))
        seconds.append(time.perf_counter() - start)
        same = same and token == ids[n]
    return seconds, same


def ours(model: Any, prompt: list[int], new: int) -> tuple[float, list[int], list[float]]:
    """(seconds, new ids, each step's seconds) of our cached greedy decoding."""
    gen = model.generate(prompt, max_new_tokens=new, stop_at_eos=False)
    assert len(gen.steps) == new and gen.steps[0].attentions.shape[:2] == (model.info.layers, model.info.heads)
    return gen.seconds, gen.new_ids, [s.seconds for s in gen.steps]


def reference(folder: Path, threads: int) -> Any:
    """transformers' model (eager attention, float32) and its generate, or None where it is not installed."""
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError:
        return None
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    ref.generation_config.eos_token_id = None  # write every token asked for, as ours does with stop_at_eos=False
    ref.generation_config.pad_token_id = 0

    def run(prompt: list[int], new: int) -> tuple[float, list[int]]:
        torch.set_num_threads(threads)
        ids = torch.tensor([prompt])
        start = time.perf_counter()
        with torch.no_grad():
            out = ref.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new,
                               use_cache=True)
        return time.perf_counter() - start, out[0, len(prompt):].tolist()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=256, help="prompt + new tokens (default 256)")
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs of ours and transformers'")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=None, help="where the model is built (default: a temp folder)")
    ap.add_argument("--tail", type=int, default=8, help="tokens timed at the end of the sequence (default 8)")
    ap.add_argument("--full-no-cache", action="store_true",
                    help="also time the no-cache path over the whole generation (slow: minutes at 256 tokens)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    import torch
    from bench_pretrained import build_gpt2_small

    from attention_core import load_pretrained

    torch.set_num_threads(args.threads)
    new = args.tokens - args.prompt_tokens
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp) / "gpt2-small"
        if not (folder / "model.safetensors").is_file():
            build_gpt2_small(folder)
        print(f"load average before: {os.getloadavg()}; threads {args.threads}; {args.prompt_tokens} prompt + "
              f"{new} new tokens", flush=True)
        model = load_pretrained(folder, threads=args.threads)
        prompt = _prompt(model, args.prompt_tokens)
        ref = reference(folder, args.threads)
        ours(model, prompt, 4)  # warm-up of both (first calls allocate)
        if ref is not None:
            ref(prompt, 4)
        t_ours: list[float] = []
        t_ref: list[float] = []
        tail: list[float] = []  # our per-token seconds of the last --tail tokens, every round
        none_tail: list[float] = []  # the no-cache path's for the same tokens, right after, every round
        tail_ratios: list[float] = []
        same = same_none = True
        for r in range(args.rounds):
            s, ids, steps = ours(model, prompt, new)
            t_ours.append(s)
            tail += steps[-args.tail:]
            everything = prompt + ids
            n = len(everything) - 1  # the last token was written by the query at position n - 1
            seconds, same_tail = no_cache(model, everything, range(n - args.tail, n))
            none_tail += seconds
            same_none = same_none and same_tail
            tail_ratios.append(statistics.median(seconds) / statistics.median(steps[-args.tail:]))
            if ref is not None:
                s_ref, ref_ids = ref(prompt, new)
                t_ref.append(s_ref)
                same = same and ids == ref_ids
            print(f"round {r + 1}: ours {new / t_ours[-1]:.1f} tok/s"
                  + (f", transformers {new / t_ref[-1]:.1f} tok/s" if t_ref else "")
                  + f"; at {args.tokens} tokens ours {tail_ratios[-1]:.1f} x the no-cache path", flush=True)
        rate_none_all = None
        if args.full_no_cache:
            none_all, same_all = no_cache(model, everything, range(len(prompt), n))
            rate_none_all, same_none = new / sum(none_all), same_none and same_all
    rate = new / statistics.median(t_ours)
    rate_ref = new / statistics.median(t_ref) if t_ref else None
    rate_tail = 1.0 / statistics.median(tail)
    rate_none = 1.0 / statistics.median(none_tail)
    result: dict[str, Any] = {
        "tokens": args.tokens, "prompt_tokens": args.prompt_tokens, "new_tokens": new, "threads": args.threads,
        "ours_tokens_per_second": round(rate, 2), "ours_at_end_tokens_per_second": round(rate_tail, 2),
        "no_cache_at_end_tokens_per_second": round(rate_none, 2),
        "vs_no_cache_at_end": round(statistics.median(tail_ratios), 2),
        "vs_no_cache_at_end_rounds": [round(x, 2) for x in tail_ratios],
        "no_cache_whole_run_tokens_per_second": None if rate_none_all is None else round(rate_none_all, 2),
        "no_cache_same_tokens": same_none,
        "transformers_tokens_per_second": None if rate_ref is None else round(rate_ref, 2),
        "vs_transformers": None if rate_ref is None else round(rate / rate_ref, 3),
        "vs_transformers_rounds": [round(b / a, 3) for a, b in zip(t_ours, t_ref)],
        "transformers_same_tokens": same if rate_ref is not None else None,
        "reference": "transformers generate(use_cache=True), eager" if ref is not None else
        "transformers is not installed: no reference row", "load_after": os.getloadavg()}
    print(f"ours (cache, every head's row recorded): {rate:.1f} tok/s")
    print(f"at {args.tokens} tokens (the last {args.tail}): ours {rate_tail:.1f} tok/s, no cache (whole sequence per "
          f"token) {rate_none:.2f} tok/s -> ours {statistics.median(tail_ratios):.1f} x, the median of the rounds' "
          f"ratios (target >= {TARGET_VS_NO_CACHE} x)"
          f"{'' if same_none else '  TOKENS DIFFER'}")
    if rate_none_all is not None:
        print(f"no cache over the whole run: {rate_none_all:.2f} tok/s -> ours {rate / rate_none_all:.1f} x")
    if rate_ref is None:
        print("transformers: not installed, no reference (it is a test-only dependency)")
    else:
        print(f"transformers generate(use_cache=True):   {rate_ref:.1f} tok/s -> ours {rate / rate_ref:.2f} x "
              f"(target >= {TARGET_VS_REFERENCE} x){'' if same else '  TOKENS DIFFER'}")
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
