"""``attention-playground lens``, ``attribute`` and ``patch``: the Cause view's instruments from the command line —
the logit lens, direct logit attribution and activation patching of a real model (``PretrainedModel.logit_lens``,
``.attribute`` and ``.patch``). One module: they share their flags, their checks and their writers.

- ``lens --model DIR --text TEXT [--position P] [--top-k K] [--target TOKEN | --target-id N] --out FILE``:
  FILE.json (the half-layers' labels, each one's top tokens with probabilities, and the target's rank and
  probability at each when given), FILE.csv (one row per half-layer and top token), FILE.png / .svg / .pdf (a
  heatmap: the half-layers down, the last layer's top tokens and the target across, each cell a probability).
- ``attribute --model DIR --text TEXT (--target TOKEN | --target-id N) [--foil TOKEN | --foil-id N]
  [--position P] --out FILE``: FILE.json (every head's, every MLP's term, the embedding's and the biases', the
  total and the model's own difference), FILE.csv (one row per term), FILE.png / .svg / .pdf (a signed heatmap:
  layers down, heads and the MLP across).
- ``patch --model DIR --clean TEXT --corrupted TEXT (--target TOKEN | --target-id N) [--foil ...] [--position P]
  --sweep resid|attn_out|mlp_out|heads|heads_by_position|q|k|v --out FILE``: denoising — the corrupted text run
  with one clean activation put in at a time; FILE.json (``Patching.to_dict``: the metric per cell, the restored
  fraction, both runs' metrics), FILE.csv (one row per cell), FILE.png / .svg / .pdf (the restored fraction, layers
  down). The two texts must have the same number of tokens. Progress goes to stderr; Ctrl+C stops between batched
  runs and writes nothing.

A token is given as text (``--target " Paris"``; the labels' ␣ reads as a space) that must be one token of the
model, or as its id. Positions count from 0 (negative from the end; default -1, the last token). The last stdout
line is a JSON summary. Bad input exits 2 with ``attention-playground lens: reason`` on stderr before any work:
what the flags alone show before torch is imported, the model's own limits (a target of two tokens, a position
past the text, an encoder given to ``attribute``) before the model runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from app.common import stopping
from app.common.outputs import check_output_file
from app.common.validation import INSPECT_LIMITS, Refused, check_device, check_device_name, check_options

FORMATS = (".json", ".csv", ".png", ".svg", ".pdf")
MAX_TOP_K = 100


def _common(p: argparse.ArgumentParser, text: bool = True) -> None:
    p.add_argument("--model", required=True, metavar="DIR", help="model folder (config.json, model.safetensors, "
                                                                 "tokenizer.json) or a .safetensors this app saved")
    if text:
        p.add_argument("--text", required=True, help="the text to run (this app's models: tokens like '3 5 7')")
    p.add_argument("--position", type=int, default=-1, metavar="P",
                   help="the token whose prediction is read, from 0 (negative: from the end; default -1)")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.json, .csv, .png, .svg or .pdf")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads while the model runs, 0 to 256 (default 1; "
                                                          "0 = torch's own)")


def _token_flags(p: argparse.ArgumentParser, name: str, required: bool, what: str) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument(f"--{name}", default=None, metavar="TOKEN", help=f"{what}, as text that is one token")
    group.add_argument(f"--{name}-id", type=int, default=None, metavar="N", help=f"{what}, as a token id")


def add_lens_parser(sub: Any) -> None:
    """The ``lens`` sub-command's arguments."""
    p = sub.add_parser("lens", help="the logit lens: what a real model would predict after each attention and MLP "
                                    "(JSON/CSV/PNG)")
    _common(p)
    p.add_argument("--top-k", type=int, default=10, metavar="K", help=f"top tokens per half-layer, 1 to {MAX_TOP_K} "
                                                                      "(default 10)")
    _token_flags(p, "target", False, "a token to follow through the layers (its rank and probability)")


def add_attribute_parser(sub: Any) -> None:
    """The ``attribute`` sub-command's arguments."""
    p = sub.add_parser("attribute", help="direct logit attribution: each head's and MLP's share of logit(target) "
                                         "- logit(foil) (JSON/CSV/PNG)")
    _common(p)
    _token_flags(p, "target", True, "the token whose logit is split")
    _token_flags(p, "foil", False, "a token to compare with (the split is then of logit(target) - logit(foil))")


def add_patch_parser(sub: Any) -> None:
    """The ``patch`` sub-command's arguments (``_common``'s ``--text`` is the corrupted run here: ``--corrupted``)."""
    from attention_core.pretrained.cause.sweeps import SWEEPS  # torch-free: --help imports no torch

    p = sub.add_parser("patch", help="activation patching: how much of the clean answer each layer, position or head "
                                     "restores in a corrupted run (JSON/CSV/PNG)")
    _common(p, text=False)
    p.add_argument("--clean", required=True, help="the text whose activations are put in")
    p.add_argument("--corrupted", required=True, help="the text that is run (the same number of tokens as --clean)")
    p.add_argument("--sweep", required=True, choices=tuple(SWEEPS), help="what is patched, one at a time: resid "
                   "(the stream entering a layer at one position), attn_out / mlp_out (a sublayer's output at one "
                   "position), heads (a head's output at every position), heads_by_position, q / k / v (a head's "
                   "query, key or value input)")
    _token_flags(p, "target", True, "the token whose logit the metric reads")
    _token_flags(p, "foil", False, "a token to compare with (metric = logit(target) - logit(foil))")


def _check(args: argparse.Namespace) -> None:
    """What the flags alone show, before torch: the output, the ranges, the device's spelling, the model's folder."""
    if Path(args.out).suffix.lower() not in FORMATS:
        raise Refused(f"--out {args.out}: the file must end in {', '.join(FORMATS)}")
    top_k = getattr(args, "top_k", 1)
    if not 1 <= top_k <= MAX_TOP_K:
        raise Refused(f"--top-k {top_k} is out of range: expected 1 to {MAX_TOP_K}")
    check_options({"threads": args.threads}, INSPECT_LIMITS)
    check_output_file(args.out, "--out")
    check_device_name(args.device)
    model = Path(args.model).expanduser()
    if not model.exists():
        raise Refused(f"--model {args.model}: no such file or folder")
    if model.is_dir() and not (model / "config.json").is_file() and not (model / "model.safetensors").is_file():
        raise Refused(f"--model {args.model}: no config.json in the folder (a model folder holds config.json, "
                      "model.safetensors and tokenizer.json)")


def _load(args: argparse.Namespace) -> Any:
    from attention_core.pretrained import load_pretrained

    check_device(args.device)
    try:
        return load_pretrained(args.model, device=args.device, dtype=args.dtype, threads=args.threads or None)
    except ValueError as exc:
        raise Refused(f"--model {exc}") from None


def _ids(model: Any, text: str, flag: str) -> Any:
    """A text's ids checked in the flag's words: some tokens, no more than the model's positions."""
    try:
        ids = model.encode(text)
    except ValueError as exc:
        raise Refused(f"{flag}: {exc}") from None
    if not ids:
        raise Refused(f"{flag} has no tokens")
    if len(ids) > model.spec.max_positions:
        raise Refused(f"{flag} is {len(ids)} tokens, longer than the model's {model.spec.max_positions} positions; "
                      "shorten it")
    return ids


def _inputs(model: Any, args: argparse.Namespace, flag: str = "--text") -> tuple[Any, int]:
    """(ids, position) checked in the flags' words: the text's tokens and length, the position within it."""
    from attention_core.pretrained.cause.targets import position_index

    ids = _ids(model, getattr(args, flag[2:]), flag)
    try:
        return ids, position_index(args.position, len(ids))
    except ValueError as exc:
        raise Refused(f"--{exc}") from None


def _token(model: Any, args: argparse.Namespace, name: str) -> int | None:
    from attention_core.pretrained.cause.targets import token_id

    text, number = getattr(args, name), getattr(args, f"{name}_id")
    if text is None and number is None:
        return None
    flag = f"--{name}" if text is not None else f"--{name}-id"
    try:
        return token_id(model, text if text is not None else number, flag)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def _write(path: Path, write: Any) -> None:
    from attention_core.fileio import atomic_write

    with stopping.deferred():
        atomic_write(path, write, text=True)


def _heatmap(path: Path, values: Any, rows: list[str], cols: list[str], title: str, kind: str, **kw: Any) -> None:
    try:
        with stopping.deferred():  # importing Qt runs Python inside Qt's start-up: a stop waits
            from app.widgets.file_export import export_heatmap
    except ImportError as exc:
        raise Refused(f"image output is unavailable ({exc}); write .json or .csv instead") from None
    with stopping.deferred():
        export_heatmap(path, values, rows, cols, title, kind=kind, **kw)


def _run_lens(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    ids, p = _inputs(model, args)
    target = _token(model, args, "target")
    lens = model.logit_lens(ids, position=p, top_k=args.top_k)
    out = Path(args.out)
    ranks = None if target is None else lens.rank_of(target).tolist()
    probs = None if target is None else lens.probs_of(target).tolist()
    suffix = out.suffix.lower()
    if suffix == ".json":
        data = {"model": model.name, "family": model.family, "ids": lens.ids.tolist(), "tokens": list(lens.tokens),
                "position": p, "predicts": lens.prediction, "labels": list(lens.labels),
                "top": [[{"id": i, "token": t, "probability": round(pr, 7)} for i, t, pr in row] for row in lens.top],
                "target": None if target is None else {"id": target, "token": model.token_strings([target])[0],
                                                       "rank": ranks, "probability": probs}}
        _write(out, lambda fh: json.dump(data, fh, ensure_ascii=False))
    elif suffix == ".csv":
        def write(fh: Any) -> None:
            fh.write(f"# Attention Playground: logit lens of {model.name} at position {p} "
                     f"({lens.tokens[p]!r}, predicting the {lens.prediction} token)\n")
            fh.write(f"# tokens: {json.dumps(list(lens.tokens), ensure_ascii=False)}\n")
            w = csv.writer(fh)
            w.writerow(["row", "label", "k", "token_id", "token", "probability", "target_rank", "target_probability"])
            for r, (label, row) in enumerate(zip(lens.labels, lens.top)):
                for k, (i, t, pr) in enumerate(row):
                    w.writerow([r, label, k, i, t, f"{pr:.7g}", "" if ranks is None else ranks[r],
                                "" if probs is None else f"{probs[r]:.7g}"])
        _write(out, write)
    else:
        cols = [i for i, _, _ in lens.top[-1]] + ([] if target is None or target in
                                                   [i for i, _, _ in lens.top[-1]] else [target])
        values = lens.probs()[:, cols]
        _heatmap(out, np.asarray(values), list(lens.labels), model.token_strings(cols),
                 f"{model.name}: logit lens at position {p} ({lens.tokens[p]})", "weights", row_title="half-layer",
                 col_title="token", colorbar_label="probability")
    top = lens.top[-1][0]
    return {"out": str(out), "model": model.name, "family": model.family, "tokens": len(ids), "position": p,
            "top": [top[0], top[1], round(top[2], 6)], "target": target,
            "target_rank": None if ranks is None else ranks[-1]}


def _run_attribute(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from attention_core.pretrained.cause.attribution import refusal

    ids, p = _inputs(model, args)
    why = refusal(model)
    if why:
        raise Refused(why)
    target, foil = _token(model, args, "target"), _token(model, args, "foil")
    if foil == target:
        raise Refused(f"--foil is the same token as --target ({target}): their difference would be 0")
    a = model.attribute(ids, target=target, foil=foil, position=p)
    out = Path(args.out)
    what = f"logit({a.target_token})" + ("" if foil is None else f" - logit({a.foil_token})")
    suffix = out.suffix.lower()
    if suffix == ".json":
        data = {"model": model.name, "family": model.family, "ids": a.ids.tolist(), "tokens": list(a.tokens),
                "position": p, "target": {"id": a.target, "token": a.target_token},
                "foil": None if foil is None else {"id": a.foil, "token": a.foil_token}, "embed": a.embed,
                "heads": a.heads.tolist(), "mlps": a.mlps.tolist(), "biases": a.biases, "total": a.total,
                "actual": a.actual, "capped": a.capped, "note": a.note, "terms": [list(t) for t in a.terms()[:20]]}
        _write(out, lambda fh: json.dump(data, fh, ensure_ascii=False))
    elif suffix == ".csv":
        def write(fh: Any) -> None:
            fh.write(f"# Attention Playground: direct logit attribution of {what} at position {p} of {model.name}\n")
            fh.write(f"# total {a.total!r}; the model's own {a.actual!r}{'; ' + a.note if a.note else ''}\n")
            w = csv.writer(fh)
            w.writerow(["component", "layer", "head", "value"])
            w.writerow(["embed", "", "", repr(a.embed)])
            for (li, h), v in np.ndenumerate(a.heads):
                w.writerow(["head", li, h, repr(float(v))])
            for li, v in enumerate(a.mlps):
                w.writerow(["mlp", li, "", repr(float(v))])
            w.writerow(["biases", "", "", repr(a.biases)])
        _write(out, write)
    else:
        values = np.concatenate([a.heads, a.mlps[:, None]], axis=1)
        _heatmap(out, values, [f"layer {li}" for li in range(len(a.mlps))],
                 [f"head {h}" for h in range(a.heads.shape[1])] + ["MLP"],
                 f"{model.name}: {what} = {a.total:.4g} at position {p} (embed {a.embed:.3g}, biases {a.biases:.3g})",
                 "signed", row_title="layer", col_title="component", colorbar_label="logit")
    best = a.terms()[0]
    return {"out": str(out), "model": model.name, "family": model.family, "tokens": len(ids), "position": p,
            "target": a.target, "foil": a.foil, "total": round(a.total, 6), "actual": round(a.actual, 6),
            "largest": [best[0], round(best[1], 6)]}


def _run_patch(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    clean = _ids(model, args.clean, "--clean")
    ids, p = _inputs(model, args, "--corrupted")
    if len(clean) != len(ids):
        raise Refused(f"--clean is {len(clean)} tokens and --corrupted {len(ids)}: patching puts each clean "
                      "activation at its own position, so both texts must have the same number of tokens")
    target, foil = _token(model, args, "target"), _token(model, args, "foil")
    if foil == target:
        raise Refused(f"--foil is the same token as --target ({target}): their difference would be 0")

    def progress(done: int, total: int) -> None:
        print(f"\rpatch: {done} of {total} batched runs", end="" if done < total else "\n", file=sys.stderr,
              flush=True)

    # Ctrl+C between batched runs: stopping.check raises Stopped, which main turns into the signal's exit code
    r = model.patch(clean, ids, target=target, foil=foil, position=p, sweep=args.sweep, progress=progress,
                    cancel=lambda: stopping.check() or False)
    out = Path(args.out)
    metric = f"logit({model.token_strings([target])[0]})" + (
        "" if foil is None else f" - logit({model.token_strings([foil])[0]})")
    suffix = out.suffix.lower()
    if suffix == ".json":
        data = {"model": model.name, "family": model.family, "metric": metric, **r.to_dict()}
        _write(out, lambda fh: json.dump(data, fh, ensure_ascii=False))
    elif suffix == ".csv":
        def write(fh: Any) -> None:
            fh.write(f"# Attention Playground: activation patching ({args.sweep}) of {model.name}, metric {metric} "
                     f"at position {p}; clean {r.clean!r}, corrupted {r.corrupted!r}\n")
            if r.warning:
                fh.write(f"# {r.warning}\n")
            w = csv.writer(fh)
            w.writerow([*r.axes, "value", "restored"])
            restored = r.restored
            for cell, v in np.ndenumerate(r.values):
                w.writerow([*cell, "" if np.isnan(v) else repr(float(v)),
                            "" if np.isnan(restored[cell]) else repr(float(restored[cell]))])
        _write(out, write)
    else:
        values = r.restored if r.values.ndim == 2 else np.nanmean(r.restored, axis=2)
        cols = (list(r.tokens) if r.axes[1] == "position" else
                [f"{'kv ' if r.axes[1] == 'kv_head' else ''}head {h}" for h in range(values.shape[1])])
        _heatmap(out, np.asarray(values), [f"layer {li}" for li in range(values.shape[0])], cols,
                 f"{model.name}: {args.sweep} patching, restored fraction of {metric} at position {p}"
                 + (" (mean over positions)" if r.values.ndim == 3 else ""), "signed", row_title="layer",
                 col_title=r.axes[1].replace("_", " "), colorbar_label="restored")
    flat = np.nan_to_num(r.restored, nan=-np.inf)
    best = np.unravel_index(int(np.argmax(flat)), flat.shape)
    return {"out": str(out), "model": model.name, "family": model.family, "tokens": len(ids), "position": p,
            "sweep": args.sweep, "clean": round(r.clean, 6), "corrupted": round(r.corrupted, 6),
            "best": None if r.warning else {"cell": [int(i) for i in best], "restored": round(float(flat[best]), 6)},
            "warning": r.warning}


def _main(args: argparse.Namespace, prog: str, run: Any) -> int:
    try:
        _check(args)
        model = _load(args)
        summary = run(model, args)
    except (ValueError, OSError) as exc:  # Refused and PretrainedError are ValueErrors
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, ensure_ascii=False))
    return 0


def cmd_lens(args: argparse.Namespace) -> int:
    """Write the logit lens; the JSON summary is the last stdout line; 2 with the reason for bad input."""
    return _main(args, "attention-playground lens", _run_lens)


def cmd_attribute(args: argparse.Namespace) -> int:
    """Write the direct logit attribution; the JSON summary is the last stdout line; 2 for bad input."""
    return _main(args, "attention-playground attribute", _run_attribute)


def cmd_patch(args: argparse.Namespace) -> int:
    """Write an activation-patching sweep; the JSON summary is the last stdout line; 2 for bad input."""
    return _main(args, "attention-playground patch", _run_patch)
