"""The small expression language of lesson files: ``{weights[it][animal]:.2f}`` in a text is filled from the live
computation, never typed in. Qt-free.

An expression is parsed with ``ast.parse(mode="eval")`` and *walked* over a whitelist; nothing is ever ``eval``-ed.
Allowed: numbers and strings, names of the context (``scores``, ``scaled``, ``masked``, ``weights``, ``output``,
``Q``, ``K``, ``V``, ``scale``, ``d_k`` …), indexing by position or by token name (``scores[it][street]``,
``weights[0, 1]``, ``K['K2 long']``), ``+ - * / **``, unary minus, comparisons, and calls of the functions in
``FUNCTIONS`` (``sqrt``, ``argmax``, ``entropy``, ``probe_before`` …). Anything else (attributes, lambdas,
comprehensions, unknown names) is refused with a ``LessonExprError`` that says what.

A placeholder is ``{EXPR}`` or ``{EXPR:SPEC}`` (SPEC: a Python format spec such as ``.2f`` or ``.0%``); ``{{`` and
``}}`` are literal braces.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attention_core.scaling.results import attention_flops, estimate_mib


class LessonExprError(ValueError):
    """A placeholder that cannot be parsed or computed; the message says why."""


@dataclass(frozen=True)
class Labeled:
    """An array whose axes may carry token names (rows: query tokens, columns: key tokens)."""

    a: np.ndarray
    axes: tuple[tuple[str, ...] | None, ...]

    def index(self, key: Any) -> Any:
        if self.a.ndim == 0:
            raise LessonExprError("a number cannot be indexed")
        labels = self.axes[0] if self.axes else None
        if isinstance(key, str):
            if labels is None or key not in labels:
                names = ", ".join(labels) if labels else "none (index by position)"
                raise LessonExprError(f"no token {key!r} on this axis (tokens: {names})")
            i = labels.index(key)
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key)
            if not -self.a.shape[0] <= i < self.a.shape[0]:
                raise LessonExprError(f"index {i} is outside 0..{self.a.shape[0] - 1}")
        else:
            raise LessonExprError(f"an index must be a whole number or a token name, not {key!r}")
        sub = self.a[i]
        return Labeled(np.asarray(sub), self.axes[1:]) if np.ndim(sub) else float(sub)


def _arr(x: Any) -> np.ndarray:
    if isinstance(x, Labeled):
        return x.a
    if isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool):
        return np.asarray(float(x))
    raise LessonExprError(f"expected a number or an array, got {x!r}")


def _wrap(a: Any, like: Any = None) -> Any:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return float(a)
    axes = like.axes if isinstance(like, Labeled) and like.a.shape == a.shape else (None,) * a.ndim
    return Labeled(a, axes)


def _argbest(fn: Callable[[np.ndarray], Any]) -> Callable[[Any], Any]:
    def pick(x: Any) -> Any:
        a = _arr(x)
        if a.ndim != 1:
            raise LessonExprError("argmax/argmin take one row (index the map first, e.g. argmax(weights[it]))")
        i = int(fn(a))
        labels = x.axes[0] if isinstance(x, Labeled) and x.axes else None
        return labels[i] if labels else i
    return pick


def _entropy(x: Any) -> float:
    p = _arr(x)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _softmax(x: Any) -> Any:
    a = _arr(x)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return _wrap(e / e.sum(axis=-1, keepdims=True), x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": lambda x: _wrap(np.sqrt(_arr(x)), x),
    "exp": lambda x: _wrap(np.exp(_arr(x)), x),
    "log": lambda x: _wrap(np.log(_arr(x)), x),
    "abs": lambda x: _wrap(np.abs(_arr(x)), x),
    "max": lambda x: float(np.max(_arr(x))),
    "min": lambda x: float(np.min(_arr(x))),
    "sum": lambda x: float(np.sum(_arr(x))),
    "mean": lambda x: float(np.mean(_arr(x))),
    "norm": lambda x: float(np.linalg.norm(_arr(x))),
    "dot": lambda x, y: float(np.dot(_arr(x).ravel(), _arr(y).ravel())),
    "round": lambda x, n=0: _wrap(np.round(_arr(x), int(n)), x),
    "argmax": _argbest(np.argmax),
    "argmin": _argbest(np.argmin),
    "entropy": _entropy,
    "softmax": _softmax,
    "len": lambda x: len(_arr(x)),
    "size": lambda x: int(_arr(x).size),
    "choose": lambda cond, a, b: a if cond else b,
    "flops": lambda n, d: attention_flops(1, 1, int(n), int(d)),
    "mib": lambda n, d, impl="steps": estimate_mib(str(impl), 1, 1, int(n), int(d), "float32"),
}
"""The functions a placeholder may call. ``entropy`` is in nats; ``argmax`` answers a token name when the axis has
them. ``flops(n, d)``: the multiply-adds ×2 of one head's attention at length n and width d
(``attention_core.scaling.results.attention_flops``); ``mib(n, d[, impl])``: the memory one call needs at its peak,
float32 (``estimate_mib``). The context adds its own (``probe_before`` / ``probe_after``: the causality probe on the
current state)."""

CONTEXT_FUNCTIONS = frozenset({"probe_before", "probe_after", "step_reached", "accuracy_without", "lab_slope",
                               "lab_seconds", "lab_doubling", "real_score", "real_best_layer", "real_best_head",
                               "real_best_score", "real_above", "real_second_half_without", "rotated_score",
                               "kv_bytes_for", "running_max", "running_sum", "rescale", "gen_bytes", "gen_mha_bytes",
                               "gen_bytes_after", "gen_kept", "gen_kl", "gen_top_changed"})
"""Functions the lesson context adds: the causality probe on the current state (``app.learn.model.context``),
over the Training tab's run ``step_reached(x)`` and ``accuracy_without(layer, head)`` (``app.learn.model.training``),
over the Lab's measurement ``lab_slope(impl)``, ``lab_seconds(impl)``, ``lab_doubling(impl)``
(``app.learn.model.lab``); over today's attention options (``app.learn.model.context``) ``rotated_score``,
``kv_bytes_for``, ``running_max``, ``running_sum``, ``rescale``."""

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b,
}
_CMPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}


def parse(expr: str) -> ast.Expression:
    """Parse and check an expression's shape (no context needed): what ``--check`` refuses before running."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise LessonExprError(f"cannot parse {expr!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Subscript, ast.Tuple, ast.BinOp, ast.UnaryOp,
                   ast.USub, ast.UAdd, ast.Call, ast.Compare, *_BINOPS, *_CMPS)
        if not isinstance(node, allowed):
            raise LessonExprError(f"{type(node).__name__} is not allowed in {expr!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
            raise LessonExprError(f"the constant {node.value!r} is not allowed in {expr!r}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.keywords:
                raise LessonExprError(f"only plain calls of named functions are allowed in {expr!r}")
            if node.func.id not in FUNCTIONS and node.func.id not in CONTEXT_FUNCTIONS:
                known = ", ".join(sorted({*FUNCTIONS, *CONTEXT_FUNCTIONS}))
                raise LessonExprError(f"{node.func.id}() is not allowed in {expr!r}; use one of {known}")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise LessonExprError(f"the name {node.id!r} is not allowed in {expr!r}")
    return tree


class Evaluator:
    """Evaluates expressions against ``names`` (values: numbers, strings, ``Labeled`` arrays, functions)."""

    def __init__(self, names: Mapping[str, Any], tokens: frozenset[str] = frozenset(),
                 missing: Mapping[str, str] | None = None, precision: int | None = None) -> None:
        self.names, self.tokens = names, tokens
        self.precision = precision
        """Decimals of a number shown without a spec or with a bare ``g`` (a lesson's ``precision``; None: 3
        significant digits, and ``g`` as Python writes it)."""
        """``tokens``: bare names that stand for themselves (token names, e.g. ``probe_before(sat)``)."""
        self.missing = missing or {}
        """Names that exist but have no value now, with the reason (``best_head`` before any model is trained)."""

    def value(self, expr: str) -> Any:
        tree = parse(expr)
        try:
            with np.errstate(all="ignore"):
                return self._eval(tree.body)
        except LessonExprError:
            raise
        except (ValueError, TypeError, ZeroDivisionError, OverflowError, IndexError) as exc:
            raise LessonExprError(f"{expr!r}: {exc}") from None

    def _eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                if node.id in self.tokens:
                    return node.id
                if node.id in self.missing:
                    raise LessonExprError(f"{node.id}: {self.missing[node.id]}")
                raise LessonExprError(f"unknown name {node.id!r}")
            return self.names[node.id]
        if isinstance(node, ast.Subscript):
            target = self._eval(node.value)
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for key in keys:
                if not isinstance(target, Labeled):
                    raise LessonExprError("too many indices")
                target = target.index(self._key(key, target))
            return target
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand)
            return _wrap(-_arr(v), v) if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = self._eval(node.left), self._eval(node.right)
            return _wrap(_BINOPS[type(node.op)](_arr(a), _arr(b)), a if isinstance(a, Labeled) else b)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = self._eval(comp)
                if not _CMPS[type(op)](_plain(left), _plain(right)):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            fn = self.names.get(node.func.id) if callable(self.names.get(node.func.id)) else FUNCTIONS.get(node.func.id)
            if fn is None:
                raise LessonExprError(f"unknown function {node.func.id!r}; use one of {', '.join(sorted(FUNCTIONS))}")
            return fn(*[self._eval(a) for a in node.args])
        if isinstance(node, ast.Tuple):
            raise LessonExprError("a tuple is only allowed as an index")
        raise LessonExprError(f"{type(node).__name__} is not allowed")

    def _key(self, node: ast.AST, target: Labeled) -> Any:
        """An index: a bare name is a token name when this axis has that token, else a context name."""
        if isinstance(node, ast.Name):
            labels = target.axes[0] if target.axes else None
            if labels and node.id in labels:
                return node.id
            if node.id not in self.names:
                names = ", ".join(labels) if labels else "none (index by position)"
                raise LessonExprError(f"no token {node.id!r} on this axis (tokens: {names})")
        v = self._eval(node)
        return int(v) if isinstance(v, float) and v.is_integer() else v


def _plain(x: Any) -> Any:
    if isinstance(x, Labeled):
        return x.a.tolist()
    return x


def format_value(value: Any, spec: str = "", precision: int | None = None) -> str:
    """A value as text: numbers through ``spec`` (default: 3 significant digits), −∞ for a blocked score, arrays
    as ``[a, b]``. With ``precision`` (a lesson's decimals) a number without a spec or with a bare ``g`` is rounded
    to that many decimals, trailing zeros dropped (0.284335 → 0.284, 0.5 → 0.5, 4.0 → 4); a non-zero number that
    would round to 0 keeps 2 significant digits (1.2e-07)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, Labeled):
        return "[" + ", ".join(format_value(float(x) if np.ndim(x) == 0 else Labeled(np.asarray(x), value.axes[1:]),
                                            spec, precision) for x in value.a) + "]"
    if isinstance(value, (int, np.integer)) and not spec:
        return str(int(value))
    v = float(value)
    if math.isinf(v):
        return "−∞" if v < 0 else "∞"
    if math.isnan(v):
        return "nan"
    if precision is not None and spec in ("", "g"):
        if v != 0 and abs(v) < 0.5 * 10.0 ** -precision:
            return f"{v:.2g}"
        text = f"{v:.{precision}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return "0" if text in ("-0", "") else text
    try:
        text = format(v, spec) if spec else f"{v:.3g}"
    except ValueError:
        raise LessonExprError(f"bad format {spec!r}") from None
    return text[1:] if re.fullmatch(r"-0(\.0*)?%?", text) else text


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_SPEC = re.compile(r"^[<>^=+\- #0-9.,_eEfFgGdn%]*$")


def placeholders(text: str) -> list[tuple[str, str]]:
    """The (expression, spec) pairs of a text; ``LessonExprError`` for an unbalanced brace."""
    out: list[tuple[str, str]] = []
    rest = _PLACEHOLDER.sub(lambda m: "" if m.group(1) is None else "\0", text)
    if "{" in rest or "}" in rest:
        raise LessonExprError("unbalanced '{' or '}' (write {{ or }} for a literal brace)")
    for m in _PLACEHOLDER.finditer(text):
        if m.group(1) is None:
            continue
        body = m.group(1)
        expr, spec = body, ""
        if ":" in body:
            head, tail = body.rsplit(":", 1)
            if _SPEC.match(tail):
                expr, spec = head, tail
        if not expr.strip():
            raise LessonExprError("an empty placeholder {}")
        parse(expr)
        out.append((expr, spec))
    return out


def render(text: str, ev: Evaluator) -> str:
    """``text`` with every placeholder replaced by its live value."""
    placeholders(text)  # balanced braces, parseable expressions

    def fill(m: re.Match[str]) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        body = m.group(1)
        expr, spec = body, ""
        if ":" in body:
            head, tail = body.rsplit(":", 1)
            if _SPEC.match(tail):
                expr, spec = head, tail
        return format_value(ev.value(expr), spec, ev.precision)

    return _PLACEHOLDER.sub(fill, text)
