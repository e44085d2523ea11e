"""The Playground's command: ``export`` renders one step of a preset, or the whole pipeline, as PNG, SVG, PDF or
CSV without a display (the same titles and renderers as the window's Export buttons), or writes the window's Copy as
code script (``--view code``). The modern options (``--rotary-base``, ``--rotary-dims``, ``--alibi``, ``--softcap``,
``--window``, ``--sinks``, ``--heads``, ``--kv-heads``) set up the Playground's state as its controls do, through the
same checks, so a value the window refuses is refused here (exit 2 and the reason) before any work; ``--view tiles``
draws FlashAttention's tiles (``--block-q``, ``--block-k``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from app.common import stopping
from app.common.outputs import check_output_file
from app.common.titles import ExportContext, colorbar_label, full_title, step_title  # Qt-free
from app.common.validation import Refused, check_causal_fits, check_preset_name, check_scale
from attention_core.steps import STEP_NAMES  # torch-free

OPTIONAL_VIEWS = ("rotated", "capped", "biased")
"""The optional steps as ``--view`` names them (``attention_core.OPTIONAL_STEPS``); each needs its option."""
VIEWS = (*STEP_NAMES, *OPTIONAL_VIEWS, "pipeline", "tiles", "code")  # what `export --view` accepts
TILES_TITLE = "FlashAttention's tiles: the online softmax, block by block"
"""The title of ``--view tiles``' CSV (the figure's own title, ``views.tiles.figure.FIGURE_TITLE``)."""
NEEDS = {"rotated": ("rotary_base", "--rotary-base"), "biased": ("alibi", "--alibi"),
         "capped": ("softcap", "--softcap")}
PROG = "attention-playground export"


def add_export_parser(sub: Any) -> None:
    """The ``export`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    e = sub.add_parser("export", help="render one step of a preset, or the whole pipeline, as PNG, SVG, PDF or "
                                      "CSV, without a display; or write it as a numpy-only Python script")
    e.add_argument("--preset", required=True, help="cat-sat-mat, it-animal-street, magnitude, bank-river-loan, "
                                                   "lesson-random-4x8 or random-N")
    e.add_argument("--view", required=True, help="scores, scaled, masked, weights, output; rotated (q and k after "
                                                 "rotary: needs --rotary-base), capped (needs --softcap), biased "
                                                 "(needs --alibi); pipeline (every step with Q, K and V in one figure; "
                                                 "PNG, SVG or PDF); tiles (FlashAttention's tiles: PNG, SVG, PDF or "
                                                 "CSV); or code (a numpy-only Python script printing every step; "
                                                 "FILE.py)")
    e.add_argument("--out", required=True, help="FILE.png, FILE.svg, FILE.pdf or FILE.csv; FILE.py for --view code "
                                                "(its folder must exist)")
    e.add_argument("--mask", choices=("none", "causal"), default="none")
    e.add_argument("--scale", type=float, default=None,
                   help="multiplier, a positive number up to 1000 (default 1/sqrt(d_k))")
    e.add_argument("--rotary-base", type=float, default=None, help="rotary positions with this base (e.g. 10000)")
    e.add_argument("--rotary-dims", type=int, default=None,
                   help="how many leading columns rotate (even, at most d_k; default all); needs --rotary-base")
    e.add_argument("--alibi", action="store_true", help="add ALiBi's distance bias (head 0's slope of --heads), "
                   "after the soft-cap")
    e.add_argument("--softcap", type=float, default=None,
                   help="soft-cap the scaled scores: c*tanh(x/c), c > 0, before any bias and the mask")
    e.add_argument("--window", type=int, default=None,
                   help="a sliding-window mask of W keys (causal; replaces --mask)")
    e.add_argument("--sinks", type=int, default=None, help="keys every query sees under --window (default 0)")
    e.add_argument("--heads", type=int, default=1, help="heads (dividing d_k and d_v; default 1)")
    e.add_argument("--kv-heads", type=int, default=None,
                   help="K/V heads (grouped-query attention; must divide --heads)")
    e.add_argument("--block-q", type=int, default=None, help="FlashAttention's query block for --view tiles (1-64)")
    e.add_argument("--block-k", type=int, default=None, help="FlashAttention's key block for --view tiles (1-64)")


def export_context(preset_name: str, scale: float | None, d_k: int, mask: str = "none",
                   mode: str | None = None, **options: Any) -> ExportContext:
    """The setting an exported figure names: preset, mask, and the scale used (the default resolved); ``mode``
    (the input mode in words, ``mode_text``) for a CSV's ``#`` lines; ``options``: the modern options' fields of
    ``ExportContext`` (``export_context.option_context``)."""
    from attention_core.steps import default_scale

    return ExportContext(preset=preset_name, mask=mask, scale=default_scale(d_k) if scale is None else float(scale),
                         d_k=d_k, mode=mode, **options)


def preset_mode(preset: Any) -> str:
    """A preset's input mode in words, as the Playground names it once the preset is loaded."""
    from app.playground.model.export_context import mode_text

    if not preset.has_projections:
        return mode_text("qkv")
    return mode_text("projection", "self" if preset.self_attention else "cross")


def export_title(view: str, preset_name: str, scale: float | None, d_k: int, mask: str = "none") -> str:
    """An exported map's one-line title: what the step is, then the setting behind it (the preset, the mask and
    the scale, which every step after the raw scores depends on; ``None`` = the default 1/√d_k), e.g.
    "Weights = softmax — preset cat-sat-mat · causal mask · scale 1 (unscaled)". A scale of 1 is never called
    "scaled". The pipeline figure's title carries the same context."""
    return full_title(step_title(view, scale), export_context(preset_name, scale, d_k, mask))


def cmd_export(args: argparse.Namespace) -> int:
    """Check the view, the output file (suffix, folder there and writable), the preset, the mask, the scale and the
    modern options, then render; 2 with the reason for bad input. Qt renders the image, so a stop waits for the file
    (``app.common.stopping``): the file is written whole or not at all."""
    import copy

    from app.playground.model.export_context import option_context
    from attention_core.presets import get_preset

    view = args.view
    if view not in VIEWS:
        return _fail(f"--view {view}: unknown view; choose one of {', '.join(VIEWS)}")
    allowed = {"pipeline": (".png", ".svg", ".pdf"), "code": (".py",)}.get(view, (".png", ".svg", ".pdf", ".csv"))
    if Path(args.out).suffix.lower() not in allowed:
        return _fail(f"--out must end in {', '.join(allowed)} for --view {view} (got {args.out!r})")
    try:
        check_output_file(args.out, "--out")
        if args.scale is not None:
            check_scale(args.scale)
        preset = get_preset(check_preset_name(args.preset))
        if args.mask == "causal":
            check_causal_fits(preset.q.shape[0], preset.k.shape[0], args.preset)
        state = _state(args, preset)
        shown = copy.deepcopy(state)
        shown.mode = "qkv"  # the preset's own Q, K, V (not X·W again): the numbers the window shows
        result = shown.compute()
    except ValueError as exc:  # Refused is one; also --scale nan
        return _fail(str(exc))
    steps = result.steps
    if not (np.isfinite(steps.weights).all() and np.isfinite(steps.output).all()):
        return _fail(f"--scale {args.scale}: the weights are not finite numbers; use a smaller scale")
    options = option_context(state)
    if view in ("tiles", "code"):
        options["blocks"] = (state.options.block_q, state.options.block_k) if view == "tiles" else None
    context = export_context(preset.name, args.scale, preset.q.shape[1], str(state.mask_mode), preset_mode(preset),
                             **options)
    if view == "code":
        from app.common.heatmap_files import atomic_write_bytes
        from app.playground.model.code_export import script_for_state

        with stopping.deferred():
            atomic_write_bytes(Path(args.out), script_for_state(state, context.line()).encode("utf-8"))
        print(str(Path(args.out).resolve()))
        return 0
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    written = False
    try:
        with stopping.deferred():
            if view == "tiles":
                _write_tiles(args.out, result, shown, preset, context)
            else:
                _write(args, view, steps, preset, context)
            written = True
    finally:  # a stop during the drawing waits for the file: it is whole, so its path is printed before the 130
        if written:
            print(str(Path(args.out).resolve()))
            sys.stdout.flush()
    return 0


def _state(args: argparse.Namespace, preset: Any) -> Any:
    """The Playground's state for the preset and every flag, each checked as the window's control checks it
    (``Refused`` naming the flag and the reason)."""
    from app.playground.model import options as opt
    from app.playground.model.state import PlaygroundState

    def flag(name: str, value: Any, fn: Any) -> Any:
        try:
            return fn()
        except ValueError as exc:
            raise Refused(f"{name} {value}: {exc}") from None

    state = PlaygroundState()
    state.load_preset(preset)
    state.set_mask_mode(args.mask)
    if args.scale is not None:
        state.set_scale("custom", float(args.scale))
    flag("--heads", args.heads, lambda: state.set_heads(args.heads))
    if args.kv_heads is not None:
        flag("--kv-heads", args.kv_heads, lambda: state.set_kv_heads(args.kv_heads))
    if args.rotary_dims is not None and args.rotary_base is None:
        raise Refused("--rotary-dims needs --rotary-base (the rotation's base, e.g. 10000)")
    o = state.options
    if args.rotary_dims is not None:
        flag("--rotary-dims", args.rotary_dims, lambda: opt.check_rotary(11.0, args.rotary_dims, state.dims["d_k"]))
    if args.rotary_base is not None:
        flag("--rotary-base", args.rotary_base,
             lambda: o.set_rotary(args.rotary_base, args.rotary_dims, state.dims["d_k"]))
    o.alibi = bool(args.alibi)
    if args.softcap is not None:
        o.softcap = flag("--softcap", args.softcap, lambda: opt.check_softcap(args.softcap))
    if args.sinks is not None and args.window is None:
        raise Refused("--sinks needs --window (the sinks are kept beside a sliding window)")
    if args.window is not None:
        if args.mask != "none":
            raise Refused(f"--window is a mask of its own: give it without --mask {args.mask}")
        o.window, o.sinks = flag("--window", args.window, lambda: opt.check_window(args.window, args.sinks or 0))
        if state.dims["Lq"] > state.dims["Lk"]:
            raise Refused(f"--window needs at least as many keys as queries (--preset {args.preset} has "
                          f"{state.dims['Lq']} queries, {state.dims['Lk']} keys)")
        state.mask_mode = "sliding"
    if (args.block_q, args.block_k) != (None, None):
        if args.view not in ("tiles", "code"):
            raise Refused(f"--block-q and --block-k size FlashAttention's tiles: give them with --view tiles "
                          f"(or code), not --view {args.view}")
        o.block_q, o.block_k = opt.check_blocks(*(opt.DEFAULT_BLOCK if b is None else b
                                                   for b in (args.block_q, args.block_k)))
    if args.view in NEEDS and not getattr(o, NEEDS[args.view][0]):
        raise Refused(f"--view {args.view} shows a step that is off: give {NEEDS[args.view][1]}")
    return state


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def _write(args: argparse.Namespace, view: str, steps: Any, preset: Any, context: ExportContext) -> None:
    if view == "pipeline":
        from app.playground.qt.pipeline_figure import write_pipeline_figure

        write_pipeline_figure(args.out, steps, list(preset.query_tokens), list(preset.key_tokens), context=context)
        return
    values = getattr(steps, view) if view != "rotated" else np.vstack([steps.q_rotated, steps.k_rotated])
    rows = list(preset.query_tokens)
    cols = list(preset.key_tokens) if view != "output" else [f"v{j}" for j in range(values.shape[1])]
    if view == "rotated":  # q's rows after rotary, then k's: one map, the columns of d_k
        rows = [f"q {t}" for t in preset.query_tokens] + [f"k {t}" for t in preset.key_tokens]
        cols = [f"k{j}" for j in range(values.shape[1])]
    from app.widgets.file_export import export_heatmap

    blocked = None if steps.mask is None else ~steps.mask
    export_heatmap(args.out, values, rows, cols, step_title(view, args.scale),
                   blocked=blocked if view in ("masked", "weights") else None,
                   kind="weights" if view == "weights" else "signed", context=context,
                   colorbar_label=colorbar_label(view, args.scale),
                   col_title="value dimension" if view == "output" else "")


def _write_tiles(out: str, result: Any, state: Any, preset: Any, context: ExportContext) -> None:
    """``--view tiles``: FlashAttention's tiled pass over the steps (the Tiles view's figure, or one CSV row a tile)."""
    from app.playground.model.option_edits import flash_of

    flash, note = flash_of(result, state)
    if Path(out).suffix.lower() == ".csv":
        from app.playground.views.tiles.model import write_tiles_csv

        write_tiles_csv(out, flash, TILES_TITLE, context)
        return
    from app.playground.views.tiles.figure import write_tiles_figure

    write_tiles_figure(out, flash, result.steps.output, list(preset.query_tokens), list(preset.key_tokens),
                       context=context, note=note)
