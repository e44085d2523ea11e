"""``attention-playground generate``: a real model writes after a prompt, one token at a time over its key/value
cache (``PretrainedModel.decoder``), and every step is written out.

``generate --model DIR --prompt TEXT [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]
[--cache full|window|sinks] [--window W] [--sinks S] [--dtype float32|bfloat16] [--layer L] [--head H] --out FILE``

- FILE.json: the whole generation, every step (its token, probabilities before and after sampling, every head's
  attention row over the cache, the cache's positions, bytes and evictions, the KL against a full cache);
- FILE.csv: one row a step (no attention rows): ``cache_length`` counts the positions the cache holds,
  ``cache_positions`` names them as ranges ("0-3 12-20");
- FILE.png / FILE.svg: the grown attention of ``--layer``/``--head`` (default 0 and 0): one row per step, one
  column per position, the positions the cache no longer held (or did not hold yet) blank;
- FILE.gif: the decoding as a film, one frame per step (the same map growing row by row), rendered offscreen.

The last stdout line is a JSON summary (``text``, ``new_tokens``, ``tokens_per_second``, ``cache_bytes``, and
``out``, ``model``, ``stopped``). Bad options exit 2 with the reason before torch is imported or the model read
(those the flags alone show), or before the first token (the model's layers and heads, the prompt's tokens).
Ctrl+C stops between two tokens: the tokens written so far are kept (the file holds them, the summary says
``"stopped": "interrupted"``), then the command exits 130 as every stopped command does.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

from app.common import stopping
from app.common.outputs import check_output_file
from app.common.validation import MAX_SEED, Refused, check_device, check_device_name

PROG = "attention-playground generate"
FORMATS = (".json", ".csv", ".png", ".svg", ".gif")
IMAGES = (".png", ".svg", ".gif")
CACHES = ("full", "window", "sinks")


def add_generate_parser(sub: Any) -> None:
    """The ``generate`` sub-command's arguments."""
    p = sub.add_parser("generate", help="a real model writes after a prompt, token by token over its KV cache: every "
                                        "step as JSON/CSV, the grown attention as PNG/SVG, the decoding as a GIF")
    p.add_argument("--model", required=True, metavar="DIR", help="model folder (config.json, model.safetensors, "
                                                                 "tokenizer.json) or a .safetensors this app saved")
    p.add_argument("--prompt", required=True, metavar="TEXT", help="the text to continue (this app's models: tokens "
                                                                   "like '3 5 7')")
    p.add_argument("--max-new-tokens", type=int, default=20, metavar="N", help="tokens to write at most (default 20)")
    p.add_argument("--temperature", type=float, default=0.0, metavar="T", help="0 = greedy (default); > 0 samples")
    p.add_argument("--top-k", type=int, default=None, metavar="K", help="sample among the K most likely tokens")
    p.add_argument("--top-p", type=float, default=None, metavar="P",
                   help="sample among the most likely tokens whose probabilities reach P, in (0, 1]")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sampling (default 0)")
    p.add_argument("--cache", choices=CACHES, default="full",
                   help="full (every past key), window (the last W positions), sinks (the first S and the last "
                        "W - S, StreamingLLM)")
    p.add_argument("--window", type=int, default=None, metavar="W", help="--cache window/sinks: positions kept")
    p.add_argument("--sinks", type=int, default=None, metavar="S", help="--cache sinks: first positions always kept "
                                                                        "(default 4)")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads while the model runs, 0 to 256 (default 1; "
                                                          "0 = torch's own)")
    p.add_argument("--layer", type=int, default=None, help=".png/.svg/.gif: the layer drawn (from 0; default 0)")
    p.add_argument("--head", type=int, default=None, help=".png/.svg/.gif: the head drawn (from 0; default 0)")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.json, .csv, .png, .svg or .gif")


def check_args(args: argparse.Namespace) -> None:
    """Everything the flags alone can tell, in their words, before torch is imported (raises ``Refused``: the
    message goes to stderr, exit 2)."""
    suffix = Path(args.out).suffix.lower()
    if suffix not in FORMATS:
        raise Refused(f"--out {args.out}: the file must end in {', '.join(FORMATS)}")
    if not args.prompt:
        raise Refused("--prompt is empty: give some text to continue")
    if args.max_new_tokens < 1 or args.max_new_tokens > 100_000:
        raise Refused(f"--max-new-tokens {args.max_new_tokens} is out of range: expected 1 to 100000")
    if not math.isfinite(args.temperature) or args.temperature < 0:
        raise Refused(f"--temperature {args.temperature} is out of range: expected a number >= 0 (0 = greedy)")
    if args.top_k is not None and args.top_k < 1:
        raise Refused(f"--top-k {args.top_k} is out of range: expected an integer >= 1")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise Refused(f"--top-p {args.top_p} is out of range: expected a number in (0, 1]")
    if not 0 <= args.seed <= MAX_SEED:
        raise Refused(f"--seed {args.seed} is out of range: expected an integer from 0 to {MAX_SEED}")
    if not 0 <= args.threads <= 256:
        raise Refused(f"--threads {args.threads} is out of range: expected 0 to 256")
    if args.cache == "full" and args.window is not None:
        raise Refused("--window applies to --cache window and --cache sinks only")
    if args.cache != "sinks" and args.sinks is not None:
        raise Refused("--sinks applies to --cache sinks only")
    if args.cache != "full":
        if args.window is None:
            raise Refused(f"--cache {args.cache} needs --window W (how many positions the cache keeps)")
        if args.window < 1:
            raise Refused(f"--window {args.window} is out of range: expected an integer >= 1")
    sinks = 4 if args.sinks is None else args.sinks
    if args.cache == "sinks" and not 0 <= sinks < args.window:
        raise Refused(f"--sinks {sinks} is out of range: expected 0 to {args.window - 1} (below --window "
                       f"{args.window}: the cache keeps the first S positions and the last W - S)")
    if suffix not in IMAGES and (args.layer is not None or args.head is not None):
        raise Refused(f"--{'layer' if args.layer is not None else 'head'} applies to .png, .svg and .gif only "
                       "(the attention drawn); .json holds every layer and head")
    for flag, value in (("--layer", args.layer), ("--head", args.head)):
        if value is not None and value < 0:
            raise Refused(f"{flag} {value} does not exist: layers and heads count from 0")
    check_output_file(args.out, "--out")
    check_device_name(args.device)
    model = Path(args.model).expanduser()
    if not model.exists():
        raise Refused(f"--model {args.model}: no such file or folder")
    if model.is_dir() and not (model / "config.json").is_file() and not (model / "model.safetensors").is_file():
        raise Refused(f"--model {args.model}: no config.json in the folder (a Hugging Face model folder holds "
                       "config.json, model.safetensors and tokenizer.json)")


def _load(args: argparse.Namespace) -> Any:
    from attention_core.pretrained import load_pretrained

    check_device(args.device)
    try:
        return load_pretrained(args.model, device=args.device, dtype=args.dtype, threads=args.threads or None)
    except ValueError as exc:
        raise Refused(f"--model {exc}") from None


def _decoder(model: Any, args: argparse.Namespace) -> Any:
    """The model's decoder; what only the model can tell (an encoder, its layers, heads, the prompt's tokens) refused
    here."""
    from attention_core.pretrained.generate import Decoder, cannot_generate

    refusal = cannot_generate(model)
    if refusal:
        raise Refused(f"--model {refusal}")
    for flag, value, count in (("--layer", args.layer, model.info.layers), ("--head", args.head, model.info.heads)):
        if value is not None and value >= count:
            raise Refused(f"{flag} {value} does not exist: the model has {flag[2:]}s 0 to {count - 1}")
    try:
        ids = model.encode(args.prompt)
    except ValueError as exc:
        raise Refused(f"--prompt: {exc}") from None
    if not ids:
        raise Refused("--prompt has no tokens")
    if len(ids) >= model.spec.max_positions:
        raise Refused(f"--prompt is {len(ids)} tokens: the model's {model.spec.max_positions} positions leave no "
                       "room for a new one")
    try:  # no undo history: the command never takes a token back, and memory stays the cache and the rows
        return Decoder(model, ids, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                       cache=args.cache, window=args.window, sinks=4 if args.sinks is None else args.sinks,
                       undo=False)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def decode(decoder: Any, limit: int) -> bool:
    """Step up to ``limit`` tokens with a progress line on stderr; each step whole (a stop waits for it, then ends
    the loop). Returns True when a stop ended it."""
    from app.common.progress import Progress

    bar = Progress(limit, "generate", unit="token")
    try:
        for i in range(limit):
            with stopping.deferred():  # a Ctrl+C is noted and raised when the step is complete
                if decoder.step() is None:
                    break
            bar.update(i + 1)
    except stopping.Stopped:
        return True
    finally:
        bar.close()
    return False


def position_ranges(positions: Any) -> str:
    """Positions as space-separated ranges, "0-3 12-20" (a lone one as "7"): a window or sinks cache is one or two
    ranges, where the list itself would make a long generation's CSV grow with the square of its tokens."""
    spans: list[list[int]] = []
    for p in positions:
        if spans and spans[-1][1] == p - 1:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    return " ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _csv(path: Path, gen: Any, model: Any) -> None:
    from attention_core.fileio import atomic_write

    def write(fh: Any) -> None:
        fh.write(f"# Attention Playground: generate with {model.name}, one row a step (positions from 0)\n")
        fh.write(f"# prompt: {json.dumps(gen.prompt_tokens, ensure_ascii=False)}; cache: {gen.cache}"
                 f"{'' if gen.window is None else f', window {gen.window}'}"
                 f"{f', sinks {gen.sinks}' if gen.cache == 'sinks' else ''}\n")
        w = csv.writer(fh)
        w.writerow(["step", "query_position", "id", "token", "probability", "drawn_probability", "top_token",
                    "top_probability", "cache_length", "cache_positions", "cache_bytes", "full_cache_bytes", "evicted",
                    "kl_from_full", "top_changed", "seconds"])
        for s in gen.steps:
            top = s.top_raw[0] if s.top_raw else (s.id, s.token, s.probability)
            w.writerow([s.index, s.query_position, s.id, s.token, f"{s.probability:.7g}",
                        f"{s.drawn_probability:.7g}", top[1], f"{top[2]:.7g}", len(s.cache_positions),
                        position_ranges(s.cache_positions), s.cache_bytes,
                        s.full_cache_bytes, " ".join(map(str, s.evicted)),
                        "" if s.kl_from_full is None else f"{s.kl_from_full:.7g}",
                        "" if s.top_changed is None else int(s.top_changed), f"{s.seconds:.6f}"])

    atomic_write(path, write, text=True)


def _json(path: Path, gen: Any, model: Any) -> None:
    from attention_core.fileio import atomic_write

    data = {"model": model.name, "family": model.info.family, "layers": model.info.layers,
            "heads": model.info.heads, "kv_heads": model.info.kv_heads, **gen.to_dict()}
    atomic_write(path, lambda fh: json.dump(data, fh, ensure_ascii=False), text=True)


def write_output(path: Path, gen: Any, model: Any, layer: int, head: int, *, guard: bool = True) -> None:
    """The file ``--out`` names, by its suffix (written whole or not at all). ``guard``: a stop waits for the file
    and ends the command after it; off once a stop has been taken (the file is what is kept of it)."""
    suffix = path.suffix.lower()
    with stopping.deferred() if guard else contextlib.nullcontext():
        if suffix == ".json":
            _json(path, gen, model)
        elif suffix == ".csv":
            _csv(path, gen, model)
        else:
            try:
                from app.model_tab.qt.generate_figure import write_generation_film, write_grown_attention
            except ImportError as exc:
                raise Refused(f"image output is unavailable ({exc}); write .json or .csv instead") from None
            if suffix == ".gif":
                write_generation_film(path, gen, model.name, layer, head)
            else:
                write_grown_attention(path, gen, model.name, layer, head)


def cmd_generate(args: argparse.Namespace) -> int:
    """Decode, write ``--out``, print the summary; 2 with the reason for bad input; a stop keeps what was written."""
    try:
        check_args(args)
        model = _load(args)
        decoder = _decoder(model, args)
        stopped = decode(decoder, args.max_new_tokens)
        gen = decoder.generation
        if stopped:
            gen = dataclasses.replace(gen, stopped="interrupted")
        elif not gen.stopped:  # the loop ran out of tokens to write: say so in the file as in the summary
            gen = dataclasses.replace(gen, stopped="max_new_tokens")
        if not gen.steps:
            if stopped:
                stopping.check()
            raise Refused("no token was written")
        layer, head = args.layer or 0, args.head or 0
        out = Path(args.out)
        write_output(out, gen, model, layer, head, guard=not stopped)
    except (ValueError, OSError) as exc:  # Refused is a ValueError
        if stopping.pending():
            raise stopping.Stopped(signum=stopping.pending_code() - 128) from None
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    summary = {**gen.summary(), "out": str(out), "model": model.name, "stopped": gen.stopped}
    summary["tokens_per_second"] = round(summary["tokens_per_second"], 3)
    print(json.dumps(summary, ensure_ascii=False))
    if stopped:
        sys.stdout.flush()
        stopping.check()  # the tokens so far are written: now the stop ends the command (130 / 143)
    return 0
