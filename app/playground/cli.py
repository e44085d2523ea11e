"""The Playground's command: ``export`` renders one step of a preset, or the whole pipeline, as PNG, SVG, PDF or
CSV without a display (the same titles and renderers as the window's Export buttons), or writes the window's Copy as
code script (``--view code``)."""

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

VIEWS = (*STEP_NAMES, "pipeline", "code")  # what `export --view` accepts
PROG = "attention-playground export"


def add_export_parser(sub: Any) -> None:
    """The ``export`` sub-command's arguments (``sub``: the main parser's sub-parsers)."""
    e = sub.add_parser("export", help="render one step of a preset, or the whole pipeline, as PNG, SVG, PDF or "
                                      "CSV, without a display; or write it as a numpy-only Python script")
    e.add_argument("--preset", required=True, help="cat-sat-mat, it-animal-street, magnitude, bank-river-loan, "
                                                   "lesson-random-4x8 or random-N")
    e.add_argument("--view", required=True, help="scores, scaled, masked, weights, output, pipeline (every step "
                                                 "with Q, K and V in one figure; PNG, SVG or PDF), or code (a "
                                                 "numpy-only Python script printing the five steps; FILE.py)")
    e.add_argument("--out", required=True, help="FILE.png, FILE.svg, FILE.pdf or FILE.csv; FILE.py for --view code "
                                                "(its folder must exist)")
    e.add_argument("--mask", choices=("none", "causal"), default="none")
    e.add_argument("--scale", type=float, default=None,
                   help="multiplier, a positive number up to 1000 (default 1/sqrt(d_k))")


def export_context(preset_name: str, scale: float | None, d_k: int, mask: str = "none",
                   mode: str | None = None) -> ExportContext:
    """The setting an exported figure names: preset, mask, and the scale used (the default resolved); ``mode``
    (the input mode in words, ``mode_text``) for a CSV's ``#`` lines."""
    from attention_core.steps import default_scale

    return ExportContext(preset=preset_name, mask=mask, scale=default_scale(d_k) if scale is None else float(scale),
                         d_k=d_k, mode=mode)


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
    """Check the view, the output file (suffix, folder there and writable), the preset, the mask and the scale,
    then render; 2 with the reason for bad input. Qt renders the image, so a stop waits for the file
    (``app.common.stopping``): the file is written whole or not at all."""
    from attention_core import attention_steps, causal_mask
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
    except ValueError as exc:  # Refused is one
        return _fail(str(exc))
    lq, lk = preset.q.shape[0], preset.k.shape[0]
    mask = None
    if args.mask == "causal":
        try:
            check_causal_fits(lq, lk, args.preset)
        except Refused as exc:
            return _fail(str(exc))
        mask = causal_mask(lq)
    try:
        steps = attention_steps(preset.q, preset.k, preset.v, mask=mask, scale=args.scale)
    except ValueError as exc:  # e.g. --scale nan
        return _fail(str(exc))
    if not (np.isfinite(steps.weights).all() and np.isfinite(steps.output).all()):
        return _fail(f"--scale {args.scale}: the weights are not finite numbers; use a smaller scale")
    context = export_context(preset.name, args.scale, preset.q.shape[1], args.mask, preset_mode(preset))
    if view == "code":
        with stopping.deferred():
            _write_code(args.out, preset, args.mask, args.scale, context)
        print(str(Path(args.out).resolve()))
        return 0
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # rendering a file never needs a screen
    with stopping.deferred():
        _write(args, view, steps, preset, context)
    print(str(Path(args.out).resolve()))
    return 0


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def _write_code(out: str, preset: Any, mask: str, scale: float | None, context: ExportContext) -> None:
    """``--view code``: the Playground's own script (``code_export``) for the preset loaded as the window loads
    it, with the mask and the scale given; written atomically."""
    from app.common.heatmap_files import atomic_write_bytes
    from app.playground.model.code_export import script_for_state
    from app.playground.model.state import PlaygroundState

    state = PlaygroundState()
    state.load_preset(preset)
    state.set_mask_mode(mask)
    if scale is not None:
        state.set_scale("custom", float(scale))
    atomic_write_bytes(Path(out), script_for_state(state, context.line()).encode("utf-8"))


def _write(args: argparse.Namespace, view: str, steps: Any, preset: Any, context: ExportContext) -> None:
    if view == "pipeline":
        from app.playground.qt.pipeline_figure import write_pipeline_figure

        write_pipeline_figure(args.out, steps, list(preset.query_tokens), list(preset.key_tokens), context=context)
        return
    values = getattr(steps, view)
    rows = list(preset.query_tokens)
    cols = list(preset.key_tokens) if view != "output" else [f"v{j}" for j in range(values.shape[1])]
    from app.widgets.file_export import export_heatmap

    blocked = None if steps.mask is None else ~steps.mask
    export_heatmap(args.out, values, rows, cols, step_title(view, args.scale),
                   blocked=blocked if view in ("masked", "weights") else None,
                   kind="weights" if view == "weights" else "signed", context=context,
                   colorbar_label=colorbar_label(view, args.scale),
                   col_title="value dimension" if view == "output" else "")
