"""Pretrained-model speed on a GPT-2-small-sized random model (124 M parameters, built here: no download, no
transformers): load time, peak memory over the weights, a 128-token trace, the head detectors and an ablation scan.

Targets (2 shared CPU cores): load < 2 s from a warm disk, peak RSS increase <= 1.3 x weight bytes, trace of 128
tokens < 1 s, each detector <= 2 s, ablation scan of 144 heads <= 60 s. The weights are random (std 0.02), so the
numbers measure cost, not behaviour. Load average is printed before and after: on a shared machine it explains
outliers.

    .venv/bin/python benchmarks/bench_pretrained.py [--dir FOLDER] [--keep] [--skip-scan] [--threads N]
    .venv/bin/python benchmarks/bench_pretrained.py --side-by-side [--shapes gpt2-small qwen2-0.5b] [--lengths 128 1024]

``--threads`` (default 1) is the model's ``threads`` for the detectors and the scan; the trace is timed with it and
with torch's default (one thread per core), since on a busy machine the two differ several-fold.

``--side-by-side``: our ``trace`` against the reference a user would otherwise run, transformers' eager attention
with ``output_attentions=True``, on the same safetensors file, float32, the same torch threads, alternating call by
call in one process (so a change in the machine's load falls on both); the ratio is our median over theirs (target
<= 1.0: we record q, k, v and head outputs besides the weights). Then the ablation scan restarting each head's run at
its layer from the recorded residual stream (``ablation_scan``) against the same scan run from the embeddings for
every head, on GPT-2-small: the time of each and the largest difference of their numbers (target >= 1.8 x).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


FAULTS: dict[str, list[tuple[int, int]]] = {"ours": [], "theirs": []}
"""Page faults (minor, major) of each timed call of the last ``_median_pair``: a major fault re-reads a page from
disk (a memory-mapped weight evicted by the page cache), a minor one maps a fresh page (a new large array)."""


def _median_pair(ours: Callable[[], Any], theirs: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Median seconds of each, called alternately (ours, theirs, ours, ...) after one warm-up call of each."""
    import resource

    ours()
    theirs()
    a, b = [], []
    FAULTS["ours"], FAULTS["theirs"] = [], []
    for _ in range(rounds):
        for fn, out, name in ((ours, a, "ours"), (theirs, b, "theirs")):
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            FAULTS[name].append((r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt))
    return float(np.median(a)), float(np.median(b))


def _faults(name: str) -> str:
    minor, major = (int(np.median([f[i] for f in FAULTS[name]])) for i in (0, 1))
    return f"{minor:,} minor / {major:,} major"


def side_by_side(shape: str, folder: Path, lengths: list[int], threads: int, rounds: int) -> list[dict[str, Any]]:
    """Our trace vs transformers eager ``output_attentions=True`` on one folder; one row per length."""
    import torch
    from transformers import AutoModelForCausalLM

    from attention_core.pretrained import load_pretrained

    torch.set_num_threads(threads)
    ours = load_pretrained(folder, threads=threads)
    ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    rows = []
    for n in lengths:
        ids = (np.arange(n) * 7 + 3) % 380

        def theirs(ids: np.ndarray = ids) -> Any:
            with torch.no_grad():
                return ref(torch.as_tensor(ids)[None], output_attentions=True, use_cache=False)

        with torch.no_grad():  # the same numbers first: the comparison is only fair on equal work
            diff = float(np.abs(ours.trace(ids).attentions - torch.stack(theirs().attentions)[:, 0].numpy()).max())
        t_ours, t_ref = _median_pair(lambda ids=ids: ours.trace(ids), theirs, rounds)
        rows.append({"shape": shape, "tokens": n, "ours_s": t_ours, "transformers_s": t_ref,
                     "ratio": t_ours / t_ref, "max_weight_diff": diff, "threads": threads,
                     "faults": dict(FAULTS), "load": os.getloadavg()})
        print(f"{shape:11} {n:5} tokens: ours {t_ours:.3f} s, transformers eager {t_ref:.3f} s, ratio "
              f"{t_ours / t_ref:.2f} (target <= 1.0), weights equal to {diff:.1e}; page faults per call: ours "
              f"{_faults('ours')}, theirs {_faults('theirs')}; load average {os.getloadavg()}", flush=True)
    return rows


def full_forward_scan(model: Any, text: str, seq_len: int | None = None, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The scan without reuse: every head's run starts from the embeddings (logits at the same positions)."""
    import torch

    from attention_core.phenomena.ablation import _setup

    text_probe, repeat_probe, _ = _setup(model, text, "zero", seq_len, seed, 1, [])
    out = []
    for probe in (text_probe, repeat_probe):
        change = np.full((model.spec.n_layers, model.spec.n_heads), np.nan)
        for li in range(model.spec.n_layers):
            for h in range(model.spec.n_heads):
                logits = model.forward(probe.ids, ablate={(li, h): "zero"}, logit_positions=probe.positions).logits
                assert isinstance(logits, torch.Tensor)
                change[li, h] = probe.loss_of(logits) - probe.loss
        out.append(change)
    return tuple(out)


def scan_comparison(folder: Path, threads: int, rounds: int = 1) -> dict[str, Any]:
    """ablation_scan (restarting at the ablated layer) against full_forward_scan, alternately, same numbers."""
    from attention_core.phenomena import ablation_scan
    from attention_core.pretrained import load_pretrained

    model = load_pretrained(folder, threads=threads)
    text = "The quick brown fox jumps over the lazy dog. " * 2
    scan = ablation_scan(model, text)
    full = full_forward_scan(model, text)
    diff = max(float(np.abs(scan.text_change - full[0]).max()), float(np.abs(scan.repeat_change - full[1]).max()))
    t_reuse, t_full = _median_pair(lambda: ablation_scan(model, text), lambda: full_forward_scan(model, text),
                                   rounds)
    print(f"ablation scan of {scan.text_change.size} heads: reusing the layers before {t_reuse:.1f} s, from the "
          f"embeddings {t_full:.1f} s: {t_full / t_reuse:.2f} x faster (target >= 1.8 x); numbers equal to "
          f"{diff:.1e}; load average {os.getloadavg()}", flush=True)
    return {"reuse_s": t_reuse, "full_s": t_full, "speedup": t_full / t_reuse, "max_diff": diff}


def run_side_by_side(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pretrained_shapes import ensure

    print(f"load average before: {os.getloadavg()}; threads {args.threads}", flush=True)
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-side-"))
    try:
        rows = []
        for shape in args.shapes:
            rows += side_by_side(shape, ensure(shape, root / shape), args.lengths, args.threads, args.rounds)
        scan = None if args.skip_scan else scan_comparison(ensure("gpt2-small", root / "gpt2-small"), args.threads,
                                                           args.scan_rounds)
        if args.json:
            args.json.write_text(json.dumps({"rows": rows, "scan": scan, "load": os.getloadavg()}, indent=2))
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


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
    ap.add_argument("--side-by-side", action="store_true", help="our trace vs transformers eager, and the scans")
    ap.add_argument("--shapes", nargs="*", default=["gpt2-small", "qwen2-0.5b"],
                    help="with --side-by-side (none: the scans only)")
    ap.add_argument("--lengths", nargs="+", type=int, default=[128, 1024], help="with --side-by-side")
    ap.add_argument("--rounds", type=int, default=3, help="alternating calls of each (median)")
    ap.add_argument("--scan-rounds", type=int, default=1, help="with --side-by-side: alternating scans of each")
    ap.add_argument("--json", type=Path, default=None, help="write the side-by-side figures here")
    args = ap.parse_args()
    if args.side_by_side:
        run_side_by_side(args)
        return
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
