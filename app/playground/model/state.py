"""The playground's session model: plain Python and numpy, no Qt.

The editor writes here (through undo commands), ``compute()`` asks ``attention_core`` for every step, and the
views draw the result. A snapshot is a small dict of lists, so undo, sessions and tests share one format.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.common.validation import SCALE, check_scale
from app.playground.model import options as opt
from app.playground.model.preset_setting import apply_preset_setting, load_preset_inputs
from attention_core import AttentionSteps, attention_steps, causal_mask, default_scale
from attention_core.multihead_steps import MultiHeadSteps, multi_head_steps
from attention_core.presets import Preset

MAX_TOKENS = 32
MAX_DIM = 128
MODES = ("qkv", "projection")
ATTENTION_KINDS = ("self", "cross")
MASK_MODES = ("none", "causal", "padding", "custom", "sliding")
SCALE_MODES = ("sqrt", "one", "custom")

# Which matrices exist in which mode; each entry: (name, rows-dimension, cols-dimension). d_k_kv and d_v_kv: d_k and
# d_v, or their share for grouped K/V heads (``options.kv_widths``)
MATRIX_SHAPES = {
    "Q": ("Lq", "d_k"), "K": ("Lk", "d_k_kv"), "V": ("Lk", "d_v_kv"),
    "X": ("Lq", "d_model"), "X_q": ("Lq", "d_model"), "X_kv": ("Lk", "d_model"),
    "W_Q": ("d_model", "d_k"), "W_K": ("d_model", "d_k_kv"), "W_V": ("d_model", "d_v_kv"),
    "W_O": ("d_v", "d_v"),  # multi-head output projection: concat (d_v) -> output (d_v)
}


def parse_number(text: str) -> float:
    """A finite float from what a user typed (accepts a comma decimal and a unicode minus), else ValueError."""
    cleaned = str(text).strip().replace("\u2212", "-").replace(",", ".")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"'{text}' is not a finite number")
    return value


@dataclass(frozen=True)
class Result:
    """One computation: the attention steps, the multi-head split (when heads > 1) and the inputs used."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    steps: AttentionSteps
    heads: MultiHeadSteps | None = None  # the multi-head split, filled by compute_heads() when heads > 1


class PlaygroundState:
    """Everything the user edits. Mutators validate and raise ValueError with a readable message."""

    def __init__(self) -> None:
        self.mode = "qkv"
        self.kind = "self"
        self.query_tokens = ["cat", "sat", "mat"]
        self.key_tokens = ["cat", "sat", "mat"]
        self.dims = {"Lq": 3, "Lk": 3, "d_k": 4, "d_v": 4, "d_model": 4}
        self.matrices: dict[str, np.ndarray] = {}
        self.scale_mode = "sqrt"
        self.custom_scale = 0.5
        self.mask_mode = "none"
        self.padding_keep: list[bool] = [True] * 3
        self.custom_mask = np.ones((3, 3), dtype=bool)
        self.num_heads = 1
        self.device = "cpu"
        self.preset_name = ""
        self.story = ""
        self.options = opt.AttentionOptions()  # rotary, ALiBi, soft-cap, window, K/V heads, blocks
        self._fill_missing()

    # ------------------------------------------------------------------ structure
    def matrix_names(self) -> list[str]:
        """The editable matrices in the current mode, in reading order."""
        if self.mode == "qkv":
            return ["Q", "K", "V", "W_O"] if self.num_heads > 1 else ["Q", "K", "V"]
        xs = ["X"] if self.kind == "self" else ["X_q", "X_kv"]
        names = [*xs, "W_Q", "W_K", "W_V"]
        return names + ["W_O"] if self.num_heads > 1 else names

    def shape_of(self, name: str) -> tuple[int, int]:
        rows, cols = MATRIX_SHAPES[name]
        return self.size(rows), self.size(cols)

    def size(self, dim: str) -> int:
        """A dimension's size: ``dims``, or the K and V widths grouped K/V heads give."""
        if dim in ("d_k_kv", "d_v_kv"):
            return opt.kv_widths(self.dims, self.num_heads, self.options)[dim == "d_v_kv"]
        return self.dims[dim]

    def row_labels(self, name: str) -> list[str]:
        rows = MATRIX_SHAPES[name][0]
        if rows == "Lq":
            return list(self.query_tokens)
        if rows == "Lk":
            return list(self.key_tokens)
        if name == "W_O":
            return [f"c{i}" for i in range(self.dims[rows])]
        return [f"x{i}" for i in range(self.dims[rows])]

    def col_labels(self, name: str) -> list[str]:
        cols = MATRIX_SHAPES[name][1]
        if name == "W_O":
            return [f"o{j}" for j in range(self.dims[cols])]
        prefix = {"d_k": "k", "d_v": "v", "d_model": "x", "d_k_kv": "k", "d_v_kv": "v"}[cols]
        return [f"{prefix}{j}" for j in range(self.size(cols))]

    @property
    def tied_tokens(self) -> bool:
        """Self-attention in projection mode: one X, so the keys are the queries."""
        return self.mode == "projection" and self.kind == "self"

    def _fill_missing(self) -> None:
        """Give every matrix of every mode its current shape, keeping the cells that remain."""
        if self.tied_tokens:
            self.dims["Lk"] = self.dims["Lq"]
            self.key_tokens = list(self.query_tokens)
        for name in MATRIX_SHAPES:
            shape = self.shape_of(name)
            old = self.matrices.get(name)
            # projections grow as the identity would (a new dimension passes straight through); data grows zeros
            new = np.eye(*shape) if name.startswith("W_") else np.zeros(shape)
            if old is not None:
                r, c = min(old.shape[0], shape[0]), min(old.shape[1], shape[1])
                new[:r, :c] = old[:r, :c]
            self.matrices[name] = new
        self.query_tokens = self._fit_tokens(self.query_tokens, self.dims["Lq"], "q")
        # one X: the keys are the queries, new ones included (found by the stateful fuzz test)
        self.key_tokens = (list(self.query_tokens) if self.tied_tokens
                           else self._fit_tokens(self.key_tokens, self.dims["Lk"], "k"))
        lq, lk = self.dims["Lq"], self.dims["Lk"]
        self.padding_keep = (self.padding_keep + [True] * lk)[:lk]
        cm = np.ones((lq, lk), dtype=bool)
        r, c = min(self.custom_mask.shape[0], lq), min(self.custom_mask.shape[1], lk)
        cm[:r, :c] = self.custom_mask[:r, :c]
        self.custom_mask = cm
        if self.mask_mode == "causal" and lq != lk:
            self.mask_mode = "none"

    @staticmethod
    def _fit_tokens(tokens: list[str], n: int, prefix: str) -> list[str]:
        out = list(tokens[:n])
        while len(out) < n:
            out.append(f"{prefix}{len(out)}")
        return out

    # ------------------------------------------------------------------ edits
    def set_cell(self, name: str, row: int, col: int, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"{name}[{row}, {col}]: {value} is not a finite number")
        m = self.matrices[name]
        if not (0 <= row < m.shape[0] and 0 <= col < m.shape[1]):
            raise ValueError(f"{name}: cell ({row}, {col}) is outside the {m.shape[0]}×{m.shape[1]} matrix")
        m[row, col] = float(value)

    def set_block(self, name: str, row: int, col: int, block: np.ndarray) -> None:
        """Paste a block at (row, col); it must fit and be finite."""
        b = np.asarray(block, dtype=np.float64)
        if b.ndim != 2 or not np.all(np.isfinite(b)):
            raise ValueError("pasted block must be a rectangle of finite numbers")
        m = self.matrices[name]
        if row + b.shape[0] > m.shape[0] or col + b.shape[1] > m.shape[1]:
            raise ValueError(
                f"pasted block {b.shape[0]}×{b.shape[1]} does not fit in {name} ({m.shape[0]}×{m.shape[1]}) "
                f"at row {row + 1}, column {col + 1}"
            )
        m[row:row + b.shape[0], col:col + b.shape[1]] = b

    def set_dim(self, dim: str, n: int) -> None:
        limit = MAX_TOKENS if dim in ("Lq", "Lk") else MAX_DIM
        if not (1 <= int(n) <= limit):
            raise ValueError(f"{dim} must be between 1 and {limit}, got {n}")
        if dim == "Lk" and self.tied_tokens:
            dim = "Lq"
        self.dims[dim] = int(n)
        if self.num_heads > 1 and not self._heads_fit(self.num_heads):
            self.num_heads, self.options.num_kv_heads = 1, None
        self.options.set_rotary(self.options.rotary_base, self.options.rotary_dims, self.dims["d_k"])  # still fits?
        self._fill_missing()

    def set_token(self, side: str, index: int, text: str) -> None:
        text = str(text).strip()
        if not text:
            raise ValueError("a token name cannot be empty")
        tokens = self.query_tokens if side == "q" else self.key_tokens
        if not 0 <= index < len(tokens):
            raise ValueError(f"token {index} does not exist")
        tokens[index] = text
        if self.tied_tokens:  # one X: the keys are the queries
            self.key_tokens = list(tokens)
            self.query_tokens = list(tokens)

    def set_mode(self, mode: str, kind: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if kind is not None and kind not in ATTENTION_KINDS:
            raise ValueError(f"kind must be one of {ATTENTION_KINDS}")
        kind = self.kind if kind is None else kind
        if mode == "qkv" and self.mode == "projection":
            # keep what the user sees: Q, K, V become the projected matrices
            self.matrices["Q"], self.matrices["K"], self.matrices["V"] = (a.copy() for a in self.projected())
        elif mode == "projection" and self.mode == "qkv":
            # start from what the user sees: X from Q (and K), identity projections
            m, d_k, d_v = self.matrices, self.dims["d_k"], self.dims["d_v"]
            self.dims["d_model"] = d_k
            m["X"], m["X_q"], m["X_kv"] = m["Q"].copy(), m["Q"].copy(), m["K"].copy()
            m["W_Q"], m["W_K"], m["W_V"] = np.eye(d_k), np.eye(d_k), np.eye(d_k, d_v)  # (_fill_missing: K/V heads)
            if kind == "self" and self.dims["Lq"] != self.dims["Lk"]:
                kind = "cross"  # one X cannot hold different query and key sequences
        elif mode == "projection" and kind != self.kind:
            m = self.matrices
            if kind == "cross":  # both sequences start as the shared X
                m["X_q"], m["X_kv"] = m["X"].copy(), m["X"].copy()
                self.dims["Lk"] = self.dims["Lq"]
            else:
                m["X"] = m["X_q"].copy()
        self.mode, self.kind = mode, kind
        self._fill_missing()

    def set_scale(self, mode: str, custom: float | None = None) -> None:
        if mode not in SCALE_MODES:
            raise ValueError(f"scale mode must be one of {SCALE_MODES}")
        if custom is not None:  # the one range of the CLI's --scale and this control (ValueError naming it)
            self.custom_scale = check_scale(custom, flags=False)
        self.scale_mode = mode

    def set_mask_mode(self, mode: str) -> None:
        if mode not in MASK_MODES:
            raise ValueError(f"mask must be one of {MASK_MODES}")
        if mode == "causal" and self.dims["Lq"] != self.dims["Lk"]:
            raise ValueError("a causal mask needs as many queries as keys")
        self.mask_mode = mode

    def toggle_padding(self, key: int) -> None:
        self.padding_keep[key] = not self.padding_keep[key]

    def toggle_custom(self, row: int, col: int) -> None:
        self.custom_mask[row, col] = not self.custom_mask[row, col]

    def _heads_fit(self, h: int) -> bool:
        return self.dims["d_k"] % h == 0 and self.dims["d_v"] % h == 0

    def set_heads(self, h: int) -> None:
        if h < 1 or not self._heads_fit(h):
            raise ValueError(
                f"{h} heads do not divide d_k = {self.dims['d_k']} and d_v = {self.dims['d_v']} evenly"
            )
        kv = self.options.num_kv_heads  # kept while it still divides the heads
        self.num_heads, self.options.num_kv_heads = int(h), None if kv is None or h % kv else opt.check_kv_heads(kv, h)
        self._fill_missing()

    def set_kv_heads(self, n: int | None) -> None:
        self.options.num_kv_heads = opt.check_kv_heads(n, self.num_heads)
        self._fill_missing()

    def valid_head_counts(self) -> list[int]:
        return [h for h in range(1, min(self.dims["d_k"], self.dims["d_v"]) + 1) if self._heads_fit(h)]

    def load_preset(self, preset: Preset) -> None:
        """Replace the inputs with a preset's (projection mode when it has X and W) and take the setting it
        brings: its scale and mask, every modern option off (``preset_setting``)."""
        load_preset_inputs(self, preset)
        self._fill_missing()
        apply_preset_setting(self, preset)

    # ------------------------------------------------------------------ derived values
    def projected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Q, K, V as attention sees them (derived from X and W in projection mode)."""
        m = self.matrices
        if self.mode == "qkv":
            return m["Q"], m["K"], m["V"]
        xq = m["X"] if self.kind == "self" else m["X_q"]
        xkv = m["X"] if self.kind == "self" else m["X_kv"]
        return xq @ m["W_Q"], xkv @ m["W_K"], xkv @ m["W_V"]

    def mask(self) -> np.ndarray | None:
        """The mask for attention_steps (True = may attend), or None."""
        lq, lk = self.dims["Lq"], self.dims["Lk"]
        if self.mask_mode == "causal":
            return causal_mask(lq)
        if self.mask_mode == "padding":
            return np.broadcast_to(np.asarray(self.padding_keep, dtype=bool), (lq, lk)).copy()
        if self.mask_mode == "custom":
            return self.custom_mask.copy()
        return opt.sliding_mask(lq, lk, self.options) if self.mask_mode == "sliding" else None

    def scale(self, d_k: int | None = None) -> float:
        """The multiplier for width ``d_k`` (default: the full d_k; a head passes its own width)."""
        if self.scale_mode == "one":
            return 1.0
        if self.scale_mode == "custom":
            return self.custom_scale
        return default_scale(self.dims["d_k"] if d_k is None else d_k)

    def compute(self) -> Result:
        """Every step, through attention_core (the only place maths happens). numpy only: no torch import."""
        q, k, v = self.projected()
        mask, h, kv = self.mask(), self.num_heads, self.options.kv_heads(self.num_heads)
        steps = attention_steps(q, opt.expand_kv(k, h, kv), opt.expand_kv(v, h, kv), mask=mask, scale=self.scale(),
                                device=self.device, **opt.step_options(self.options, h, q.shape[0], k.shape[0]))
        return Result(q, k, v, mask, steps)

    def compute_heads(self, result: Result) -> Result:
        """``result`` with the multi-head split filled in (heads > 1; numpy, no torch).

        Heads scale by 1/√(d_k / heads) in the standard mode.
        """
        if self.num_heads <= 1:
            return result
        kw = opt.head_options(self.options, self.num_heads, self.dims["d_k"], *result.steps.scores.shape)
        heads = multi_head_steps(result.q, result.k, result.v, self.num_heads, w_o=self.matrices["W_O"],
                                 mask=result.mask, scale=self.scale(self.dims["d_k"] // self.num_heads),
                                 device=self.device, **kw)
        return Result(result.q, result.k, result.v, result.mask, result.steps, heads)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, arrays: bool = False) -> dict[str, Any]:
        """A deep, JSON-ready copy (session files use it). ``arrays``: the matrices as float64 array copies instead
        of nested lists (the undo stack keeps these: a quarter of the memory, and no conversion per edit)."""
        return {
            "mode": self.mode, "kind": self.kind, "query_tokens": list(self.query_tokens),
            "key_tokens": list(self.key_tokens), "dims": dict(self.dims),
            "matrices": {k: (v.copy() if arrays else v.tolist()) for k, v in self.matrices.items()},
            "scale_mode": self.scale_mode, "custom_scale": self.custom_scale, "mask_mode": self.mask_mode,
            "padding_keep": list(self.padding_keep), "custom_mask": self.custom_mask.tolist(),
            "num_heads": self.num_heads, "preset_name": self.preset_name, "story": self.story,
            **self.options.snapshot(),
        }

    def restore(self, snap: dict[str, Any]) -> None:
        """Replace everything from a snapshot, validating it first (a bad one leaves the state unchanged)."""
        fresh = PlaygroundState.from_snapshot(snap)
        device = self.device
        self.__dict__.update(copy.deepcopy(fresh.__dict__))
        self.device = device

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> PlaygroundState:
        """Build a state from a snapshot; raises ValueError naming the first problem."""
        if not isinstance(snap, dict):
            raise ValueError("session state must be an object")
        s = cls()
        try:
            mode, kind = snap["mode"], snap["kind"]
            if mode not in MODES or kind not in ATTENTION_KINDS:
                raise ValueError(f"unknown mode {mode!r}/{kind!r}")
            dims = {k: int(snap["dims"][k]) for k in ("Lq", "Lk", "d_k", "d_v", "d_model")}
            for k, n in dims.items():
                limit = MAX_TOKENS if k in ("Lq", "Lk") else MAX_DIM
                if not 1 <= n <= limit:
                    raise ValueError(f"{k} = {n} is outside 1…{limit}")
            s.mode, s.kind, s.dims = mode, kind, dims
            s.num_heads = int(snap.get("num_heads", 1))
            if not s._heads_fit(s.num_heads):
                raise ValueError(f"{s.num_heads} heads do not divide d_k and d_v")
            s.options = opt.AttentionOptions.from_snapshot(snap, dims, s.num_heads)  # (defaults: an older session)
            s.query_tokens = [str(t) for t in snap["query_tokens"]]
            s.key_tokens = [str(t) for t in snap["key_tokens"]]
            if len(s.query_tokens) != dims["Lq"] or len(s.key_tokens) != dims["Lk"]:
                raise ValueError("token lists do not match Lq/Lk")
            for name, rows in snap["matrices"].items():
                if name not in MATRIX_SHAPES:
                    raise ValueError(f"unknown matrix {name!r}")
                arr = np.array(rows, dtype=np.float64)
                if arr.shape != s.shape_of(name):
                    raise ValueError(f"matrix {name} has shape {arr.shape}, expected {s.shape_of(name)}")
                if not np.all(np.isfinite(arr)):
                    raise ValueError(f"matrix {name} contains NaN or infinity")
                s.matrices[name] = arr
            s.scale_mode = snap.get("scale_mode", "sqrt")
            s.custom_scale = float(snap.get("custom_scale", 0.5))
            if s.scale_mode not in SCALE_MODES or not 0 < s.custom_scale <= SCALE.hi:  # NaN too
                raise ValueError("invalid scale settings")
            s.mask_mode = snap.get("mask_mode", "none")
            if s.mask_mode not in MASK_MODES:
                raise ValueError(f"unknown mask {s.mask_mode!r}")
            s.padding_keep = [bool(b) for b in snap.get("padding_keep", [True] * dims["Lk"])]
            s.custom_mask = np.array(snap.get("custom_mask", np.ones((dims["Lq"], dims["Lk"]))), dtype=bool)
            if len(s.padding_keep) != dims["Lk"] or s.custom_mask.shape != (dims["Lq"], dims["Lk"]):
                raise ValueError("mask settings do not match Lq/Lk")
            s.preset_name = str(snap.get("preset_name", ""))
            s.story = str(snap.get("story", ""))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"session state is incomplete or malformed ({exc!r})") from None
        s._fill_missing()
        return s
