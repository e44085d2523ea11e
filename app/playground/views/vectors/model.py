"""The Vector view's model: queries and keys as 2-D arrows, the selected query, the hovered arrow and what hover
says. Qt-free, evented; it follows a ``PlaygroundModel`` and computes nothing the playground does not already
hold, except the geometry of the picture (norms, angles, the 2-D plane).

The plane: with d_k ≤ 2 the arrows are the rows of Q and K themselves (exact); with d_k > 2 Q and K share one
uncentred PCA plane (``attention_core.pca_2d``: a linear, orthogonal map, so the origin stays the origin and an
arrow is the shadow of the true vector). Values live in their own space (d_v): the same rule gives them their own
plane, and the selected query's output row Σ wⱼ·vⱼ lands on Σ wⱼ·(shadow of vⱼ) because the weights sum to 1.

The arrows are the vectors ① multiplies, as the Steps view computes it (one head over all of d_k), so every q·k in
hover is ①'s score: with grouped K/V heads (fewer K/V heads than heads) K and V hold fewer columns than Q, and each
key arrow is K as the Steps view reads it, each K/V head's columns repeated for the query heads of its group (what
every query head of a group sees of its K/V head); with rotary on they are q and k after the rotation.

Dragging edits a row of Q or K only where the picture is the numbers themselves: d_k ≤ 2, Q, K edited directly
(the "Q, K, V directly" mode), no rotation and no grouped K/V heads. Otherwise ``drag_note`` says why it is off.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from app.common.evented import Evented, ModelEvents, event
from app.playground.model.concealment import Concealment
from app.playground.model.playground import PlaygroundModel
from attention_core import Projection, pca_2d

KINDS = ("q", "k")


class VectorSpaceEvents(ModelEvents):
    geometry = event()   # arrows, plane, notes: after every playground result and a new selected query
    hovered = event()    # the hovered arrow and ``hover_html``


@dataclass(frozen=True)
class PairInfo:
    """One query against one key, as hover shows it: the numbers are the playground's (``scores``, ``weights``)
    with the norms and the angle of the rows it used."""

    query: int
    key: int
    dot: float
    q_norm: float
    k_norm: float
    angle_deg: float | None  # None when either vector is zero (no direction)
    scale: float
    weight: float
    masked: bool


class VectorSpace(Evented):
    """Everything the Vector view draws, from the playground's current result."""

    events: VectorSpaceEvents

    def __init__(self, playground: PlaygroundModel) -> None:
        super().__init__()
        self.playground = playground
        self.selected = 0
        self.hovered: tuple[str, int] | None = None
        self.hover_html = ""
        self.qk: Projection = pca_2d(np.zeros((1, 2)))
        self.values: Projection = self.qk
        self.queries = self.keys = self.value_tips = self.feet = np.zeros((0, 2))
        self.q = self.k = self.v = np.zeros((0, 2))
        """The vectors drawn (float64): Q (rotated when rotary is on), K and V as the Steps view reads them."""
        self.output_tip = np.zeros(2)
        self.plane_note = ""
        self.drag_note = ""
        self.draggable = False
        self.axis_labels = ("", "")
        self.value_axis_note = ""
        self.live = True  # False while no one looks (the view's tab hidden): results only mark the geometry stale
        self._stale = False
        self.concealment = Concealment.of(playground)
        """What a lesson's question hides now: hover and labels withhold those numbers."""
        playground.events.result.connect(self._on_result)  # a new token name, mask or scale recomputes it too
        self.concealment.events.changed.connect(self._on_concealment)
        self._update()

    # ------------------------------------------------------------------ reading
    @property
    def query_tokens(self) -> list[str]:
        return list(self.playground.query_tokens)

    @property
    def key_tokens(self) -> list[str]:
        return list(self.playground.key_tokens)

    @property
    def weights(self) -> np.ndarray:
        """The selected query's softmax weights over the keys (the playground's ``weights`` row)."""
        return np.asarray(self.playground.result.weights[self.selected])

    def pair(self, i: int, j: int) -> PairInfo:
        """Query ``i`` against key ``j``: q·k, |q|, |k|, the angle between them and the resulting weight."""
        self.ensure_current()
        c = self.playground.computation
        q, k = self.q[i], self.k[j]
        qn, kn = float(np.linalg.norm(q)), float(np.linalg.norm(k))
        dot = float(c.steps.scores[i, j])
        angle = None
        if qn > 0 and kn > 0:
            angle = math.degrees(math.acos(max(-1.0, min(1.0, float(q @ k) / (qn * kn)))))
        masked = c.mask is not None and not bool(np.asarray(c.mask)[i, j])
        return PairInfo(i, j, dot, qn, kn, angle, float(c.steps.scale), float(c.steps.weights[i, j]), masked)

    # ------------------------------------------------------------------ view state (not undoable)
    def select(self, query: int) -> None:
        """The query whose projections, weights and output are drawn."""
        lq = len(self.playground.query_tokens)
        if not 0 <= int(query) < lq:
            raise ValueError(f"query {query} does not exist (Lq = {lq})")
        if int(query) != self.selected:
            self.selected = int(query)
            self._update()

    def hover(self, kind: str | None, index: int = -1) -> None:
        """The arrow under the mouse: ``("q", i)`` or ``("k", j)``; ``None`` for none."""
        n = {"q": len(self.queries), "k": len(self.keys)}
        target = (kind, int(index)) if kind in n and 0 <= index < n[kind] else None
        if target != self.hovered:
            self.hovered = target
            self._describe_hover()
            self._announce("hovered")

    def drag_row(self, kind: str, index: int, point: tuple[float, float], decimals: int = 2) -> tuple[str, np.ndarray]:
        """The matrix row a dragged arrow head at ``point`` (plane coordinates) stands for: ("Q" or "K", the row),
        rounded to ``decimals``. ``ValueError`` where the plane is not the numbers themselves."""
        if not self.draggable:
            raise ValueError(self.drag_note)
        if kind not in KINDS:
            raise ValueError(f"kind must be 'q' or 'k', got {kind!r}")
        d_k = int(self.playground.computation.q.shape[1])
        row = np.round(np.asarray(point, dtype=np.float64)[:d_k], int(decimals)) + 0.0  # no -0.0
        return ("Q" if kind == "q" else "K"), row

    def set_live(self, live: bool) -> None:
        """Follow every playground result (True), or only mark the picture stale until live again (False: the two
        SVDs of a projection cost ~1 ms an edit, for a tab nobody sees). Going live catches up at once."""
        self.live = bool(live)
        if self.live and self._stale:
            self._update()

    def ensure_current(self) -> None:
        """Bring the geometry up to date if results arrived while not live (an export of a hidden tab)."""
        if self._stale:
            self._update()

    @property
    def weights_hidden(self) -> bool:
        """The weights are covered by a lesson's question: no thickness, no percentage, no weight in hover."""
        return self.concealment.hides("weights")

    @property
    def output_hidden(self) -> bool:
        return self.concealment.hides("output")

    # ------------------------------------------------------------------ internals
    def _on_concealment(self) -> None:
        self._describe_hover()
        self._announce("geometry", "hovered")

    def _on_result(self) -> None:
        if self.live:
            self._update()
        else:
            self._stale = True

    def _update(self) -> None:
        self._stale = False
        pg = self.playground
        c = pg.computation
        st = c.steps  # what ① multiplies: K and V read per query head (grouped), q and k rotated (rotary)
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (
            st.q if st.q_rotated is None else st.q_rotated, st.k if st.k_rotated is None else st.k_rotated, st.v))
        self.q, self.k, self.v = q, k, v
        lq, d_k = q.shape
        heads, kv_heads, rotated = pg.num_heads, pg.kv_heads, st.q_rotated is not None
        self.selected = min(self.selected, lq - 1)
        self.qk = pca_2d(np.vstack([q, k]))
        self.queries, self.keys = self.qk.coords[:lq], self.qk.coords[lq:]
        self.values = pca_2d(v)
        self.value_tips = self.values.coords
        self.output_tip = self.values.project(np.asarray(c.steps.output[self.selected]))
        qs = q[self.selected]
        kk = np.einsum("ij,ij->i", k, k)
        factor = np.divide(k @ qs, kk, out=np.zeros(len(k)), where=kk > 0)
        self.feet = self.qk.project(factor[:, None] * k)  # the selected query's projection onto each key's line
        if self.qk.exact:
            self.axis_labels = ("k0 (Q, K column 0)", "k1 (Q, K column 1)") if d_k == 2 else ("k0", "")
            self.plane_note = f"d_k = {d_k}: the plane is exact" + (
                "." if rotated or kv_heads < heads else ", the arrows are the rows of Q and K.")
        else:
            r = self.qk.explained_ratio
            self.axis_labels = (f"PC1 ({r[0]:.0%})", f"PC2 ({r[1]:.0%})")
            self.plane_note = (f"d_k = {d_k}: a 2-D PCA projection of Q and K together (uncentred), keeping "
                               f"{self.qk.kept:.0%} of their squared length (PC1 {r[0]:.0%}, PC2 {r[1]:.0%}). "
                               "Lengths and angles are shadows: hover shows the true numbers.")
        self.value_axis_note = ("" if self.values.exact else
                                f"values: own PCA plane (d_v = {v.shape[1]}, keeps {self.values.kept:.0%})")
        if heads > 1:
            self.plane_note += " Heads > 1: weights are the Steps view's (one head over all of d_k)."
        if kv_heads < heads:
            group, width = heads // kv_heads, int(np.asarray(c.k).shape[1]) // kv_heads
            self.plane_note += (f" K/V heads {kv_heads} for {heads} heads: each key arrow is K as the Steps view "
                                f"reads it, every K/V head's {width} column{'s' if width != 1 else ''} repeated for "
                                f"the {group} query heads of its group ({d_k} columns, like q), so q·k is ①'s score.")
        if rotated:
            self.plane_note += " Rotary is on: the arrows are q and k after the rotation (what ① multiplies)."
        if pg.mode != "qkv":
            self.draggable = False
            self.drag_note = ("Dragging is off: here Q = X·W_Q and K = X·W_K are computed (projection mode). "
                              "Switch the mode to 'Q, K, V directly' to drag arrows.")
        elif not self.qk.exact:
            self.draggable = False
            self.drag_note = (f"Dragging is exact only in 2-D, so it is off for d_k = {d_k} (set d_k = 2 to drag); "
                              "edit the numbers in the inputs.")
        elif rotated or kv_heads < heads:
            self.draggable = False
            self.drag_note = ("Dragging is off: " + ("the arrows are rotated q and k, not the rows of Q and K"
                                                     if rotated else "a key arrow repeats K's columns per query head")
                              + "; edit the numbers in the inputs.")
        else:
            self.draggable = True
            self.drag_note = "Drag an arrow head to edit that row of Q or K (one undo step per drag)."
        if self.hovered is not None and self.hovered[1] >= (lq if self.hovered[0] == "q" else len(k)):
            self.hovered = None
        self._describe_hover()
        self._announce("geometry", "hovered")

    def _describe_hover(self) -> None:
        if self.hovered is None:
            self.hover_html = ""
            return
        kind, idx = self.hovered
        esc = html.escape
        hidden = self.concealment.hidden
        if kind == "k":
            self.hover_html = _pair_html(self.pair(self.selected, idx), self.query_tokens, self.key_tokens,
                                         hidden=hidden)
            return
        lines = [_pair_html(self.pair(idx, j), self.query_tokens, self.key_tokens, short=True, hidden=hidden)
                 for j in range(len(self.keys))]
        qn = float(np.linalg.norm(self.q[idx]))
        self.hover_html = (f"query <b>{esc(self.query_tokens[idx])}</b>: |q| = {qn:.3g}<br>" + "<br>".join(lines))


def _angle_text(angle: float | None) -> str:
    return "undefined (a zero vector)" if angle is None else f"{angle:.1f}°"


COVERED = "<i>covered</i>"
"""What hover says in place of a number a lesson's question hides."""


def _pair_html(p: PairInfo, q_tokens: list[str], k_tokens: list[str], short: bool = False,
               hidden: frozenset[str] = frozenset()) -> str:
    """One query against one key; the numbers of a map in ``hidden`` (a lesson's cover) read "covered"."""
    qt, kt = html.escape(q_tokens[p.query]), html.escape(k_tokens[p.key])
    weight = ("weight " + COVERED if "weights" in hidden else "masked: weight 0" if p.masked
              else f"weight {p.weight:.3f} ({p.weight:.0%})")
    dot = COVERED if "scores" in hidden else f"{p.dot:.3g}" if short else f"{p.dot:.4g}"
    if short:
        return f"· {kt}: q·k = {dot}, |k| = {p.k_norm:.3g}, angle {_angle_text(p.angle_deg)}, {weight}"
    why = (f"|q| {p.q_norm:.4g} × |k| {p.k_norm:.4g} × cos {_angle_text(p.angle_deg)}" if p.angle_deg is not None
           else f"|q| {p.q_norm:.4g}, |k| {p.k_norm:.4g}: a zero vector has no direction")
    scaled = COVERED if hidden & {"scores", "scaled"} else f"{p.dot * p.scale:.4g}"
    return (f"<b>{qt}</b> · <b>{kt}</b>: q·k = {dot} ({why}); × scale {p.scale:.3g} = "
            f"{scaled} → softmax {weight}")
