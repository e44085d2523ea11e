"""The Playground model's edits of the modern attention options, and the FlashAttention record of what is on screen.
Qt-free; a mixin of ``PlaygroundModel`` (apart from ``playground.py`` by responsibility, and to keep it small).

Each setter validates through ``app.playground.model.options`` (``ValueError`` with the reason; nothing changes),
recomputes, and announces ``options`` (with ``mask`` for the window, ``heads``/``dims``/``matrices`` for K/V heads,
whose widths change) — one undo step when called through ``UndoableEdits.apply``. ``flash`` is computed only when
asked for, once per change: the Tiles view asks while it is open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.playground.model import options as opt

if TYPE_CHECKING:
    from app.playground.model.state import PlaygroundState, Result
    from attention_core import FlashSteps

OPTION_FIELDS = ("rotary_base", "rotary_dims", "alibi", "softcap", "window", "sinks", "num_kv_heads", "block_q",
                 "block_k")
"""The options readable on the model as attributes (``model.rotary_base`` …), as ``model.mask_mode`` is."""


class OptionEdits:
    """Setters of the modern options and ``flash``; ``PlaygroundModel`` provides the state and the commit."""

    state: PlaygroundState
    _flash: FlashSteps | None
    _flash_note: str

    if TYPE_CHECKING:
        @property
        def computation(self) -> Result: ...

        def _guarded(self, fn: Callable[[PlaygroundState], object],
                     revert: Callable[[], object] | None = None) -> None: ...

        def _commit(self, fields: set[str], matrices: frozenset[str] = frozenset(),
                    new_inputs: bool = False) -> None: ...

    def set_rotary(self, base: float | None, dims: int | None = None) -> None:
        """Rotary positions with frequency ``base`` (None: off) on the first ``dims`` columns of Q and K (None:
        all of d_k; even, at most d_k)."""
        self._guarded(lambda s: s.options.set_rotary(base, dims, s.dims["d_k"]))
        self._commit({"options"})

    def set_alibi(self, on: bool) -> None:
        """ALiBi: add head 0's linear distance bias (of the Playground's heads) to the scaled scores (to the
        soft-capped ones when the soft-cap is on: the bias comes after it)."""
        if not isinstance(on, bool):
            raise ValueError(f"ALiBi is on or off (True or False), got {on!r}")
        self._guarded(lambda s: setattr(s.options, "alibi", on))
        self._commit({"options"})

    def set_softcap(self, cap: float | None) -> None:
        """Soft-cap the scaled scores at ±``cap`` (c·tanh(x/c), before the bias and the mask); None: off."""
        self._guarded(lambda s: setattr(s.options, "softcap", opt.check_softcap(cap)))
        self._commit({"options"})

    def set_window(self, window: int, sinks: int = 0) -> None:
        """The sliding window W (a query sees itself and the W − 1 keys before it) and the sinks S (the first keys
        every query sees), used while the mask is "sliding"."""

        def put(s: PlaygroundState) -> None:
            s.options.window, s.options.sinks = opt.check_window(window, sinks)

        self._guarded(put)
        self._commit({"options", "mask"})

    def set_kv_heads(self, n: int | None) -> None:
        """K/V heads (grouped-query attention; 1: multi-query; None or the heads' count: standard). K, V, W_K and
        W_V narrow to their share of d_k and d_v (the first columns kept; undo brings the rest back)."""
        self._guarded(lambda s: s.set_kv_heads(n))
        self._commit({"options", "heads", "dims", "matrices"})

    def set_blocks(self, block_q: int, block_k: int) -> None:
        """FlashAttention's block sizes: query rows and key columns per tile (1…64). No number of the steps
        changes; ``flash`` does."""
        bq, bk = opt.check_blocks(block_q, block_k)  # no number of the steps depends on them: nothing to recompute
        self.state.options.block_q, self.state.options.block_k = bq, bk
        self._commit({"blocks"})

    @property
    def kv_heads(self) -> int:
        """The K/V heads in use (as many as the heads unless grouped)."""
        return self.state.options.kv_heads(self.state.num_heads)

    @property
    def flash(self) -> FlashSteps:
        """FlashAttention-2's tiled pass over what Steps computes (rotated Q and K when rotary is on, the mask, the
        scale), with the current block sizes; computed when first asked for after a change."""
        if self._flash is None:
            self._flash, self._flash_note = flash_of(self.computation, self.state)
        return self._flash

    @property
    def flash_note(self) -> str:
        """"" or why the tiled pass differs from Steps (an option ``flash_steps`` does not take)."""
        _ = self.flash
        return self._flash_note


def flash_of(result: Result, state: PlaygroundState) -> tuple[FlashSteps, str]:
    """``flash_steps`` of ``result``'s inputs (the steps' own Q and K after rotation, K and V as Steps reads
    them) and a note naming any option it could not take."""
    import inspect

    from attention_core import flash_steps

    s = result.steps
    q = s.q if s.q_rotated is None else s.q_rotated
    k = s.k if s.k_rotated is None else s.k_rotated
    o = state.options
    params = inspect.signature(flash_steps).parameters
    extra: dict[str, Any] = {}
    left = []
    for name, value, words in (("bias", s.bias, "the ALiBi bias"), ("softcap", s.softcap, "the soft-cap")):
        if value is None:
            continue
        if name in params:
            extra[name] = value
        else:
            left.append(words)
    flash = flash_steps(q, k, s.v, mask=s.mask, scale=s.scale, block_q=o.block_q, block_k=o.block_k, **extra)
    note = (f"the tiles leave out {' and '.join(left)}: their output differs from Steps'" if left else "")
    return flash, note
