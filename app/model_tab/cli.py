"""``attention-playground inspect``: a real model's attention from the command line (``attention_core.pretrained``).

- ``inspect --model DIR --text TEXT [--layer L] [--head H] [--dtype float32|bfloat16] [--truncate] --out FILE``:
  FILE.json (ids, tokens, info, ``prediction``, ``top_next`` (an encoder's: ``top_at_position``, the tokens at each
  position), ``attentions`` [layers][heads][T][T], [heads][T][T] with ``--layer``, or [T][T] with both; a text
  over 1,024 tokens: ``overview`` instead), FILE.csv (one row per attended pair: ``layer,head,query_pos,key_pos,
  query_token,key_token,weight``; pairs the mask blocks are left out: a causal model's key_pos <= query_pos), FILE.png,
  FILE.svg or FILE.pdf (``app.model_tab.qt.figure.write_inspect_figure``, drawn offscreen with Qt; where it cannot be
  imported, exit 2 saying image output is unavailable).
- ``inspect --model DIR --detect KIND [--seq-len N] [--seed S] --out FILE.json``: the head detector (previous-token,
  duplicate-token, induction, first-token) on random tokens repeated twice: scores, ids, threshold, heads above it.
- ``inspect --model DIR --ablate L.H[,L.H...] --text TEXT [--how zero|mean]``: losses with those heads off and on
  (on the text and on the repeated random tokens' second copy), as JSON on stdout.

Numbering: layers, heads and token positions count from 0 everywhere, on the command line and in the output, as the
Model tab, ``attention_core.pretrained`` and the interpretability literature do (GPT-2's induction head "5.1" is
``--ablate 5.1``; ``attentions[5][1]`` is its map). (The Training tab's own runs say "layer 1 head 1" for the first
head: that tab counts from 1.) DIR is a Hugging Face folder (config.json,
model.safetensors, tokenizer.json) or a model this app trained (then TEXT is tokens like "3 5 7 SEP").

The last line on stdout is a JSON summary; bad input exits 2 with ``attention-playground inspect: reason`` on stderr
and no traceback, naming the flag typed (``--ablate 9.9: the model has no layer 9``, ``--text is 80 tokens``,
``--seq-len 40 does not fit``). An option of another mode is refused, not ignored (``--how`` without ``--ablate``,
``--text`` with ``--detect``). json, csv, --detect and --ablate import no Qt; torch is imported only once the
options, the output and the model's folder have been checked (what can be told from the files' names).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.common import stopping
from app.common.outputs import check_output_file
from app.common.validation import INSPECT_LIMITS, Refused, check_device, check_device_name, check_options

PROG = "attention-playground inspect"
KINDS = ("previous-token", "duplicate-token", "induction", "first-token")
FORMATS = (".json", ".csv", ".png", ".svg", ".pdf")


def add_inspect_parser(sub: Any) -> None:
    """The ``inspect`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    p = sub.add_parser("inspect", help="a real model's attention (GPT-2, Llama, Pythia, GPT-Neo, or a model this app "
                                       "trained): a text's heads as JSON/CSV/PNG/SVG, head detectors, ablation")
    p.add_argument("--model", required=True, metavar="DIR", help="model folder (config.json, model.safetensors, "
                                                                 "tokenizer.json) or a .safetensors this app saved")
    p.add_argument("--text", default=None, help="the text to run (this app's models: tokens like '3 5 7 SEP')")
    p.add_argument("--layer", type=int, default=None, help="only this layer (numbered from 0)")
    p.add_argument("--head", type=int, default=None, help="only this head of --layer (numbered from 0)")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads while the model runs, 0 to 256 (default 1: fastest on a busy machine; 0 = "
                        "torch's own)")
    p.add_argument("--truncate", action="store_true", help="cut a --text longer than the model's positions")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--detect", choices=KINDS, default=None, help="score every head for this pattern")
    mode.add_argument("--ablate", metavar="L.H[,L.H...]", default=None,
                      help="switch these heads off (numbered from 0, e.g. 5.1,5.5) and report the losses")
    p.add_argument("--how", choices=("zero", "mean"), default=None,
                   help="--ablate: zeros or the head's mean output (default zero)")
    p.add_argument("--seq-len", type=int, default=None,
                   help="--detect/--ablate: random tokens per copy (default 50, less where the model is smaller)")
    p.add_argument("--seed", type=int, default=None, help="--detect/--ablate: seed of the random tokens (default 0)")
    p.add_argument("--batch", type=int, default=None, help="--detect/--ablate: random sequences (default 4)")
    p.add_argument("--out", default=None, metavar="FILE", help="FILE.json, FILE.csv, FILE.png, FILE.svg or "
                                                               "FILE.pdf (--detect: FILE.json)")


class _Refusal(Exception):
    """Bad input: the message goes to stderr, exit 2."""


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def parse_heads(spec: str) -> list[tuple[int, int]]:
    """'5.1,5.5' -> [(5, 1), (5, 5)] (numbered from 0)."""
    out = []
    for part in spec.split(","):
        layer, dot, head = part.strip().partition(".")
        try:
            pair = (int(layer), int(head))
        except ValueError:
            raise _Refusal(f"bad --ablate {part.strip()!r}: use LAYER.HEAD numbered from 0, e.g. 5.1") from None
        if not dot or pair[0] < 0 or pair[1] < 0:
            raise _Refusal(f"bad --ablate {part.strip()!r}: use LAYER.HEAD numbered from 0, e.g. 5.1")
        out.append(pair)
    return out


MODES_OF = {
    "--text": ("text", ("--out", "--ablate")), "--truncate": ("truncate", ("--out", "--ablate")),
    "--layer": ("layer", ("--out",)), "--head": ("head", ("--out",)), "--how": ("how", ("--ablate",)),
    "--seq-len": ("seq_len", ("--detect", "--ablate")), "--seed": ("seed", ("--detect", "--ablate")),
    "--batch": ("batch", ("--detect", "--ablate")),
}
"""flag -> (its argument, the modes that read it): ``--out`` a text's maps, ``--detect``, ``--ablate``."""
WHY = {"--detect": "it scores every head on random tokens, no text",
       "--ablate": "it switches off the heads --ablate names and prints the losses"}


def _check_modes(args: argparse.Namespace) -> None:
    """An option the chosen mode does not read is refused, naming both, instead of being ignored."""
    mode = "--detect" if args.detect is not None else "--ablate" if args.ablate is not None else "--out"
    for flag, (key, modes) in MODES_OF.items():
        value = getattr(args, key)
        if value is None or value is False or mode in modes:  # (0 is a layer given)
            continue
        if mode == "--out":
            raise _Refusal(f"{flag} applies to {' and '.join(modes)} only")
        raise _Refusal(f"{flag} does not apply to {mode} ({WHY[mode]})")
    if mode == "--ablate" and args.out is not None:
        raise _Refusal(f"--out does not apply to --ablate ({WHY['--ablate']} on stdout)")


def _check_model_path(value: str) -> None:
    """What the folder's names tell without torch: it is there, and it holds a model's files."""
    p = Path(value).expanduser()
    if not p.exists():
        raise _Refusal(f"--model {value}: no such file or folder")
    if p.is_dir() and not (p / "config.json").is_file() and not (p / "model.safetensors").is_file():
        raise _Refusal(f"--model {value}: no config.json in the folder (a Hugging Face model folder holds "
                       "config.json, model.safetensors and tokenizer.json; a run `train --out` wrote, config.json "
                       "and model.safetensors)")
    if p.is_dir() and (p / "config.json").is_file():
        check_model_config(p / "config.json", "--model")


def check_model_config(path: Path, flag: str) -> None:
    """A Hugging Face config.json read as the loader reads it (JSON, a family this library opens, its sizes) without
    torch: refused before torch's import (1-2 s). One ``train --out`` wrote (``model_config``) the loader checks."""
    from attention_core.pretrained.config import parse_config  # torch-free (the package imports lazily)
    from attention_core.pretrained.errors import PretrainedError

    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _Refusal(f"{flag} {path}: {'not valid JSON' if isinstance(exc, ValueError) else 'cannot be read'} "
                       f"({exc})") from None
    if not isinstance(cfg, dict):
        raise _Refusal(f"{flag} {path}: expected a JSON object")
    try:
        if "model_type" in cfg or "model_config" not in cfg:  # not a run `train --out` wrote
            parse_config(cfg, path)
    except PretrainedError as exc:
        raise _Refusal(f"{flag} {exc}") from None


def _check_args(args: argparse.Namespace) -> None:
    _check_modes(args)
    if args.head is not None and args.layer is None:
        raise _Refusal("--head needs --layer")
    if args.detect is None and args.text is None:
        raise _Refusal("--text is required (except with --detect)")
    if args.detect is None and args.ablate is None:
        if args.out is None:
            raise _Refusal("--out FILE is required (.json, .csv, .png, .svg or .pdf)")
        if Path(args.out).suffix.lower() not in FORMATS:
            raise _Refusal(f"--out {args.out}: the file must end in {', '.join(FORMATS)}")
    if args.detect is not None and (args.out is None or Path(args.out).suffix.lower() != ".json"):
        raise _Refusal("--detect writes FILE.json: give --out FILE.json")
    try:  # the ranges and the output's folder (app/common), before torch is imported (~1-2 s)
        check_options({"threads": args.threads, "batch": args.batch, "seq_len": args.seq_len, "seed": args.seed},
                      INSPECT_LIMITS)
        if args.out is not None and (args.detect is not None or args.ablate is None):
            check_output_file(args.out, "--out")
        check_device_name(args.device)
    except Refused as exc:
        raise _Refusal(str(exc)) from None
    _check_model_path(args.model)


def _load(args: argparse.Namespace) -> Any:
    """The model (torch imported here), the device checked first; the loader's reasons name ``--model``."""
    from attention_core.pretrained import load_pretrained

    try:
        check_device(args.device)
    except Refused as exc:
        raise _Refusal(str(exc)) from None
    try:
        return load_pretrained(args.model, device=args.device, dtype=args.dtype, threads=args.threads or None)
    except ValueError as exc:  # PretrainedError is one; its reasons start with the file they are about
        raise _Refusal(f"--model {exc}") from None


def _text(model: Any, args: argparse.Namespace) -> Any:
    """``--text`` as the model reads it (its ids), checked in the flags' words: its tokens, and its length against
    the model's positions (cut to them with ``--truncate``, else refused)."""
    try:
        ids = model.encode(args.text)
    except ValueError as exc:
        raise _Refusal(f"--text: {exc}") from None
    limit = model.spec.max_positions
    if not ids:
        raise _Refusal("--text has no tokens")
    if len(ids) > limit and not args.truncate:
        raise _Refusal(f"--text is {len(ids)} tokens, longer than the model's {limit} positions; shorten it or add "
                       f"--truncate to keep the first {limit}")
    return ids[:limit]


def _check_seq_len(model: Any, args: argparse.Namespace) -> None:
    """``--seq-len`` against what this model can hold (the library's ``seq_len_room``), in the flag's words."""
    from attention_core.phenomena.detect import seq_len_room

    room = seq_len_room(model)
    if args.seq_len is not None and room >= 2 and not 2 <= args.seq_len <= room:
        raise _Refusal(f"--seq-len {args.seq_len} does not fit {model.name}: expected 2 to {room} (a start token "
                       f"and --seq-len random tokens twice within its {model.spec.max_positions} positions, all "
                       "distinct)")


def _index(value: int | None, count: int, what: str, flag: str = "") -> int | None:
    """``value`` (a layer or a head) if the model has it, else refused naming ``flag`` (default ``--layer`` or
    ``--head``: ``--ablate 9.1`` names itself)."""
    if value is None:
        return None
    if not 0 <= value < count:
        if flag:
            raise _Refusal(f"{flag}: the model has no {what} {value} ({what}s 0 to {count - 1})")
        raise _Refusal(f"--{what} {value} does not exist: the model has {what}s 0 to {count - 1}")
    return value


def _deliver(write: Callable[[], None], summary: dict[str, Any]) -> None:
    """``write()`` the output, then print ``summary`` as the last stdout line. The writing is a ``deferred`` region
    (Qt draws; a file is whole or absent), so a stop that came during it is acted on once the file is whole: the
    line saying what the file holds is printed first, then the stop ends the command (130 / 143). A writer may call
    ``stopping.check()`` between rows: the atomic writer then removes its temporary file and no line is printed."""
    written = False
    try:
        with stopping.deferred():
            write()
            written = True
    finally:
        if written:
            print(json.dumps(summary))
            sys.stdout.flush()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from attention_core.fileio import atomic_write

    atomic_write(path, lambda fh: json.dump(data, fh), text=True)


def _trace_json(trace: Any, layer: int | None, head: int | None) -> dict[str, Any]:
    """The JSON of ``inspect --out FILE.json``: every map asked for. A long trace (more than ``LONG_TRACE_TOKENS``
    tokens) keeps no full maps (24 layers × 14 heads at 4,096 tokens: 22 GB): without ``--layer`` and ``--head``
    its ``overview`` is written instead (each head's map block-pooled, max and mean), ``attentions`` is null."""
    import numpy as np

    top = [[[tok, int(i), round(p, 6)] for tok, i, p in row] for row in trace.top_next(5)]
    name = "top_next" if trace.prediction == "next" else "top_at_position"  # an encoder's: the token at t (MLM)
    data = {**trace.summary(), "layer": layer, "head": head, name: top}
    if layer is not None and head is not None:
        att = trace.head_map(layer, head)  # exact on a long trace too (computed for that head)
    elif trace.is_long:
        ov, chosen = trace.overview, slice(None) if layer is None else layer
        data["overview"] = {"block": ov.block, "note": f"each head's map in blocks of {ov.block} x {ov.block} "
                                                       "positions (the last block of a side may be shorter): the "
                                                       "block's largest weight (max) and its mean; --layer L "
                                                       "--head H writes one head's exact map",
                            "max": np.round(ov.max[chosen].astype(np.float64), 7).tolist(),
                            "mean": np.round(ov.mean[chosen].astype(np.float64), 7).tolist()}
        return {**data, "attentions": None}
    else:
        att = trace.attentions if layer is None else trace.attentions[layer]
    return {**data, "attentions": np.round(att.astype(np.float64), 7).tolist()}


def _write_csv(path: Path, trace: Any, layer: int | None, head: int | None) -> int:
    from attention_core.fileio import atomic_write

    layers = range(trace.info.layers) if layer is None else [layer]
    heads = range(trace.info.heads) if head is None else [head]
    rows = 0

    def write(fh: Any) -> None:  # a stop is acted on between two query rows (the temporary file removed)
        nonlocal rows
        fh.write(f"# Attention Playground: attention weights of {trace.name}, one row per attended pair\n")
        fh.write(f"# layers: {', '.join(map(str, layers))}; heads: {', '.join(map(str, heads))} (numbered from 0)\n")
        fh.write(f"# tokens: {json.dumps([str(t) for t in trace.tokens], ensure_ascii=False)}\n")
        w = csv.writer(fh)
        w.writerow(["layer", "head", "query_pos", "key_pos", "query_token", "key_token", "weight"])
        for li in layers:
            mask = trace.mask(li)
            for h in heads:
                att = trace.head_map(li, h)
                for q in range(len(trace)):
                    stopping.check()
                    for k in range(len(trace)):
                        if mask is None or mask[q, k]:
                            w.writerow([li, h, q, k, trace.tokens[q], trace.tokens[k], f"{att[q, k]:.7g}"])
                            rows += 1

    atomic_write(path, write, text=True)
    return rows


def _figure(trace: Any, path: Path, layer: int | None, head: int | None) -> None:
    """Called inside ``_deliver``'s deferred region: importing Qt runs Python inside Qt's start-up, and Qt draws
    the file, so a stop waits for it (``app.common.stopping``)."""
    try:
        from app.model_tab.qt.figure import write_inspect_figure
    except ImportError as exc:
        raise _Refusal(f"image output is unavailable ({exc}); write .json or .csv instead") from None
    where = "" if layer is None else f" · layer {layer}" + ("" if head is None else f" · head {head}")
    write_inspect_figure(trace, path, layer=layer, head=head, title=f"{trace.name}{where}")


def _run_trace(model: Any, args: argparse.Namespace) -> None:
    _text(model, args)
    trace = model.trace(args.text, truncate=args.truncate)
    layer = _index(args.layer, trace.info.layers, "layer")
    head = _index(args.head, trace.info.heads, "head")
    out = Path(args.out)
    suffix = out.suffix.lower()
    summary: dict[str, Any] = {"out": str(out), "model": trace.name, "family": trace.info.family,
                               "tokens": len(trace), "layers": trace.info.layers, "heads": trace.info.heads,
                               "layer": args.layer, "head": args.head, "note": trace.note}
    if trace.is_long:
        summary["long"] = trace.summary()["long"]

    def write() -> None:
        if suffix == ".json":
            _write_json(out, _trace_json(trace, layer, head))
        elif suffix == ".csv":
            summary["rows"] = _write_csv(out, trace, layer, head)
        else:
            _figure(trace, out, layer, head)

    _deliver(write, summary)


def _run_detect(model: Any, args: argparse.Namespace) -> None:
    from attention_core.phenomena import head_scores

    _check_seq_len(model, args)
    scores = head_scores(model, args.detect, seq_len=args.seq_len, seed=args.seed, batch=args.batch)
    above = [{"layer": li, "head": h, "score": round(float(scores.scores[li, h]), 6)}
             for li, h in scores.heads_above()]
    best = scores.best()
    data = {"model": model.name, "kind": scores.kind, "seq_len": scores.seq_len, "seed": args.seed,
            "batch": args.batch, "threshold": scores.threshold, "scores": scores.scores.round(6).tolist(),
            "ids": scores.ids.tolist(), "heads_above": above,
            "best": {"layer": best[0], "head": best[1], "score": round(float(scores.scores[best]), 6)}}
    _deliver(lambda: _write_json(Path(args.out), data),
             {"out": args.out, "model": model.name, "kind": scores.kind, "seq_len": scores.seq_len,
              "best": data["best"], "heads_above": [[a["layer"], a["head"]] for a in above]})


def _run_ablate(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    from attention_core.phenomena import ablate

    heads = []
    for li, h in parse_heads(args.ablate):
        layer = _index(li, model.info.layers, "layer", f"--ablate {li}.{h}")
        head = _index(h, model.info.heads, "head", f"--ablate {li}.{h}")
        assert layer is not None and head is not None
        heads.append((layer, head))
    ids = _text(model, args)
    if len(ids) < 2:
        raise _Refusal("--text needs at least 2 tokens for --ablate (its loss is on the next token)")
    _check_seq_len(model, args)
    result = ablate(model, ids, heads, args.how, seq_len=args.seq_len, seed=args.seed, batch=args.batch)
    data = result.to_json()
    data["heads"] = [[li, h] for li, h in result.heads]
    return {"model": model.name, **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in data.items()}}


def cmd_inspect(args: argparse.Namespace) -> int:
    """Run the chosen mode; print its JSON summary as the last stdout line; 2 with a message for bad input."""
    try:
        if args.ablate is not None:
            parse_heads(args.ablate)  # syntax first, before a model is loaded
        _check_args(args)
        args.how = args.how or "zero"  # the defaults, once no longer needed to tell an option given from one not
        args.seed = 0 if args.seed is None else args.seed
        args.batch = 4 if args.batch is None else args.batch
        model = _load(args)
        if args.detect is not None:
            _run_detect(model, args)  # each prints its summary once its file is written (``_deliver``)
        elif args.ablate is not None:
            print(json.dumps(_run_ablate(model, args)))
        else:
            _run_trace(model, args)
    except (_Refusal, ValueError, OSError) as exc:  # PretrainedError is a ValueError
        return _fail(str(exc))
    return 0
