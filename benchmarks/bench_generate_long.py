"""Long decodings in linear memory: our ``PretrainedModel.generate`` (greedy, every head's attention row recorded
each step) on a GPT-2-small-sized random model (transformers' GPT2Config defaults: 12 layers, 12 heads, 768 wide,
1,024 positions, 50,257 tokens; built by ``bench_pretrained.build_gpt2_small`` with a byte-level tokenizer trained
here), prompt of 16 tokens, at 64 and at 1,000 new tokens by default:

- speed: tokens per second against transformers' ``generate(use_cache=True)`` (eager attention, float32) on the same
  safetensors file, the same torch threads, in the same process, ours and theirs alternating run by run (a change of
  the machine's load falls on both); wall-clock of each whole call, prompt included; the tokens must be the same.
- memory: in a child process per length (its high-water mark is its own), the peak RSS (``VmHWM``, reset through
  ``/proc/self/clear_refs`` after torch, safetensors and tokenizers are imported) over the RSS then, against
  weights + cache + rows + 10 %: the weights' bytes (the safetensors file), the cache's after the last step
  (2 × layers × heads × positions × d_head × 4), the rows the generation hands back (each step's attention rows and
  logits).

Targets: ours >= 1.0 x transformers at every length; peak increase <= the bound. The load average is printed
before and after, and with every round. Before the undo history kept only what taking a token back needs, the
decoder kept a copy of the cache per step: 0.67 x transformers and 15.2 GB at 600 new tokens.

    .venv/bin/python benchmarks/bench_generate_long.py [--max-new 64 1000] [--prompt-tokens 16] [--rounds 1]
        [--threads 1] [--skip-memory] [--skip-speed] [--dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_VS_REFERENCE = 1.0
MEMORY_MARGIN = 1.10


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _prompt(model: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids += model.encode("The quick brown fox jumps over the lazy dog. Attention is all you need. ")
    return ids[:n]


def memory_child(folder: Path, new: int, prompt_tokens: int, threads: int) -> dict[str, Any]:
    """In this (child) process: the peak RSS increase of loading the model and one greedy decoding of ``new``
    tokens, and the bound it is held to."""
    import safetensors.torch  # noqa: F401  (the libraries' own memory is not the model's)
    import tokenizers  # noqa: F401
    import torch

    from attention_core import load_pretrained

    torch.set_num_threads(threads)
    torch.ones(64, 64) @ torch.ones(64, 64)
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the RSS now
    except OSError:
        pass
    base = _status("VmRSS")
    model = load_pretrained(folder, threads=threads)
    prompt = _prompt(model, prompt_tokens)
    start = time.perf_counter()
    gen = model.generate(prompt, max_new_tokens=new, stop_at_eos=False)
    seconds = time.perf_counter() - start
    peak = _status("VmHWM") - base
    weights = (folder / "model.safetensors").stat().st_size
    rows = sum(s.attentions.nbytes + s.logits.nbytes for s in gen.steps)
    cache = gen.cache_bytes
    bound = MEMORY_MARGIN * (weights + cache + rows)
    return {"new_tokens": len(gen.new_ids), "peak_increase": peak, "weights": weights, "cache": cache, "rows": rows,
            "bound": bound, "within": peak <= bound, "seconds": seconds, "load": os.getloadavg()}


def reference(folder: Path, threads: int) -> Any:
    """transformers' greedy ``generate`` on the same file (eager attention, float32), or None without it."""
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
                               min_new_tokens=new, use_cache=True)
        return time.perf_counter() - start, out[0, len(prompt):].tolist()

    return run


def speed(folder: Path, lengths: list[int], prompt_tokens: int, rounds: int, threads: int) -> list[dict[str, Any]]:
    import torch

    from attention_core import load_pretrained

    torch.set_num_threads(threads)
    model = load_pretrained(folder, threads=threads)
    prompt = _prompt(model, prompt_tokens)
    ref = reference(folder, threads)
    model.generate(prompt, max_new_tokens=4, stop_at_eos=False)  # warm-up of both (first calls allocate)
    if ref is not None:
        ref(prompt, 4)
    out = []
    for new in lengths:
        ours_s: list[float] = []
        theirs_s: list[float] = []
        same = True
        for r in range(rounds):
            start = time.perf_counter()
            gen = model.generate(prompt, max_new_tokens=new, stop_at_eos=False)
            ours_s.append(time.perf_counter() - start)
            del gen.steps[:]  # the rows are not what this part measures: free them before the next run
            ids = gen.new_ids
            if ref is not None:
                s, ref_ids = ref(prompt, new)
                theirs_s.append(s)
                same = same and ids == ref_ids
            print(f"{new} new tokens, round {r + 1}: ours {new / ours_s[-1]:.1f} tok/s"
                  + (f", transformers {new / theirs_s[-1]:.1f} tok/s -> {theirs_s[-1] / ours_s[-1]:.2f} x"
                     if theirs_s else "") + f"; load average {os.getloadavg()}", flush=True)
        rate = new / statistics.median(ours_s)
        rate_ref = new / statistics.median(theirs_s) if theirs_s else None
        out.append({"new_tokens": new, "ours_tokens_per_second": round(rate, 2),
                    "transformers_tokens_per_second": None if rate_ref is None else round(rate_ref, 2),
                    "vs_transformers": None if rate_ref is None else round(rate / rate_ref, 3),
                    "vs_transformers_rounds": [round(b / a, 3) for a, b in zip(ours_s, theirs_s)],
                    "same_tokens": same if ref is not None else None, "load": os.getloadavg()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-new", type=int, nargs="+", default=[64, 1000], help="new tokens (default 64 1000)")
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1, help="alternating runs of ours and transformers' per length")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--dir", type=Path, default=None, help="build (or reuse) the model here (default: a temp dir)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child is not None:
        print(json.dumps(memory_child(args.dir, args.memory_child, args.prompt_tokens, args.threads)))
        return
    print(f"load average before: {os.getloadavg()}; threads {args.threads}; prompt {args.prompt_tokens}; new "
          f"tokens {args.max_new}", flush=True)
    result: dict[str, Any] = {"threads": args.threads, "prompt_tokens": args.prompt_tokens}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp) / "gpt2-small"
        if not (folder / "model.safetensors").is_file():
            from bench_pretrained import build_gpt2_small

            build_gpt2_small(folder)
        if not args.skip_memory:
            result["memory"] = []
            for new in args.max_new:
                done = subprocess.run([sys.executable, __file__, "--memory-child", str(new), "--dir", str(folder),
                                       "--prompt-tokens", str(args.prompt_tokens), "--threads", str(args.threads)],
                                      check=True, capture_output=True, text=True)
                row = json.loads(done.stdout.strip().splitlines()[-1])
                result["memory"].append(row)
                mib = 2 ** 20
                print(f"memory, {new} new tokens: peak RSS increase {row['peak_increase'] / mib:.0f} MiB; bound "
                      f"{row['bound'] / mib:.0f} MiB = 1.1 x (weights {row['weights'] / mib:.0f} + cache "
                      f"{row['cache'] / mib:.1f} + rows {row['rows'] / mib:.1f}) -> "
                      f"{'within' if row['within'] else 'OVER'}; {new / row['seconds']:.1f} tok/s alone; load "
                      f"average {row['load']}", flush=True)
        if not args.skip_speed:
            result["speed"] = speed(folder, args.max_new, args.prompt_tokens, args.rounds, args.threads)
            for row in result["speed"]:
                ratio = row["vs_transformers"]
                print(f"speed, {row['new_tokens']} new tokens: ours {row['ours_tokens_per_second']} tok/s, "
                      f"transformers {row['transformers_tokens_per_second']} tok/s -> "
                      f"{'n/a' if ratio is None else f'{ratio:.2f} x'} (target >= {TARGET_VS_REFERENCE} x)"
                      f"{'' if row['same_tokens'] in (True, None) else '  TOKENS DIFFER'}")
    result["load_after"] = os.getloadavg()
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
