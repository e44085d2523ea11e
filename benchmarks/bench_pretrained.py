"""Pretrained-model speed on a GPT-2-small-sized random model (124 M parameters, built here: no download, no
transformers): load time, peak memory over the weights, a 128-token trace, the head detectors and an ablation scan.

Targets (2 shared CPU cores): load < 2 s from a warm disk, peak RSS increase <= 1.3 x weight bytes, trace of 128
tokens < 1 s, each detector <= 2 s, ablation scan of 144 heads <= 60 s. The weights are random (std 0.02), so the
numbers measure cost, not behaviour. Load average is printed before and after: on a shared machine it explains
outliers.

    .venv/bin/python benchmarks/bench_pretrained.py [--dir FOLDER] [--keep] [--skip-scan] [--threads N]

``--threads`` (default 1) is the model's ``threads`` for the detectors and the scan; the trace is timed with it and
with torch's default (one thread per core), since on a busy machine the two differ several-fold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LINES = ["The quick brown fox jumps over the lazy dog.", "Attention is all you need.",
         "A transformer reads every token and decides where to look.", "Induction heads copy what came next."]


def build_gpt2_small(folder: Path, seed: int = 0) -> int:
    """Write config.json, model.safetensors (float32, random) and tokenizer.json; returns the weight bytes."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    d, layers, vocab, positions = 768, 12, 50257, 1024
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "gpt2", "n_embd": d, "n_layer": layers, "n_head": 12, "n_positions": positions,
              "vocab_size": vocab, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
              "bos_token_id": 50256, "eos_token_id": 50256, "tie_word_embeddings": True}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen) * 0.02

    tensors = {"wte.weight": rand(vocab, d), "wpe.weight": rand(positions, d), "ln_f.weight": torch.ones(d),
               "ln_f.bias": torch.zeros(d)}
    for i in range(layers):
        p = f"h.{i}."
        tensors.update({p + "ln_1.weight": torch.ones(d), p + "ln_1.bias": torch.zeros(d),
                        p + "ln_2.weight": torch.ones(d), p + "ln_2.bias": torch.zeros(d),
                        p + "attn.c_attn.weight": rand(d, 3 * d), p + "attn.c_attn.bias": torch.zeros(3 * d),
                        p + "attn.c_proj.weight": rand(d, d), p + "attn.c_proj.bias": torch.zeros(d),
                        p + "mlp.c_fc.weight": rand(d, 4 * d), p + "mlp.c_fc.bias": torch.zeros(4 * d),
                        p + "mlp.c_proj.weight": rand(4 * d, d), p + "mlp.c_proj.bias": torch.zeros(d)})
    save_file(tensors, str(folder / "model.safetensors"))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(LINES * 10, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok.save(str(folder / "tokenizer.json"))
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=None, help="build (or reuse) the model here (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--skip-scan", action="store_true", help="skip the 144-head ablation scan")
    ap.add_argument("--threads", type=int, default=1, help="the model's CPU threads (default 1)")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_only:
        build_gpt2_small(args.dir)
        return
    import torch

    from attention_core.phenomena import KINDS, ablation_scan, head_scores
    from attention_core.pretrained import load_pretrained

    print(f"load average before: {os.getloadavg()}; torch threads {torch.get_num_threads()}")
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-pretrained-"))
    try:
        if not (folder / "model.safetensors").is_file():  # in a child process: its memory must not be reused here
            t0 = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--build-only", "--dir", str(folder)], check=True)
            print(f"built the model in {time.perf_counter() - t0:.1f} s")
        weight_bytes = (folder / "model.safetensors").stat().st_size
        Path(folder / "model.safetensors").read_bytes()  # warm the page cache: "load from a warm disk"
        import safetensors.torch  # noqa: F401  (the libraries' own memory is not the model's)
        import tokenizers  # noqa: F401

        torch.ones(64, 64) @ torch.ones(64, 64)
        _reset_peak()
        base = _status("VmRSS")
        t0 = time.perf_counter()
        model = load_pretrained(folder)
        load_s = time.perf_counter() - t0
        ids = np.arange(3, 3 + 128) % 380
        model.threads = args.threads
        model.trace(ids[:8])  # first call: lazy imports, allocator warm-up
        times = []
        for _ in range(3):
            trace = None  # one trace alive at a time, as in the app
            t0 = time.perf_counter()
            trace = model.trace(ids)
            times.append(time.perf_counter() - t0)
        peak = _status("VmHWM") - base
        model.threads = None
        default_times = []
        for _ in range(3):
            t0 = time.perf_counter()
            model.trace(ids)
            default_times.append(time.perf_counter() - t0)
        model.threads = args.threads
        print(f"model: {model}")
        print(f"load: {load_s:.3f} s (target < 2 s)")
        print(f"trace of {len(trace.ids)} tokens: median {np.median(times):.3f} s with {args.threads} thread(s), "
              f"{np.median(default_times):.3f} s with torch's default {torch.get_num_threads()} (target < 1 s)")
        print(f"peak RSS increase (load + traces, over the RSS with torch, safetensors and tokenizers imported): "
              f"{peak / 2**20:.0f} MiB = {peak / weight_bytes:.2f} x the weights "
              f"({weight_bytes / 2**20:.0f} MiB; target <= 1.3 x)")
        for kind in KINDS:
            t0 = time.perf_counter()
            scores = head_scores(model, kind)
            print(f"detector {kind:15}: {time.perf_counter() - t0:.3f} s (target <= 2 s), best "
                  f"{scores.scores.max():.3f}")
        if not args.skip_scan:
            t0 = time.perf_counter()
            scan = ablation_scan(model, "The quick brown fox jumps over the lazy dog. " * 2)
            print(f"ablation scan of {scan.text_change.size} heads: {time.perf_counter() - t0:.1f} s "
                  f"(target <= 60 s)")
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
