"""Named sites of the forward pass: the places where any activation can be read or replaced.

One mechanism instead of a flag per question: the logit lens reads ``resid_post``, attribution reads ``result``,
patching writes a clean run's value into a corrupted one, ablation writes zeros (or a mean) into ``z``, the trace
reads ``pattern`` and ``z``. Per layer L, in the order the pass meets them (``site_names``)::

    resid_pre.L   (T, d_model)    the residual stream entering layer L (resid_post.(L-1))
    q.L           (H, T, d_head)  queries before rotation (after a per-head or per-projection q norm)
    k.L, v.L      (KV, T, d_head) keys (before rotation) and values, per key/value head
    pattern.L     (H, T, T)       the attention weights after softmax (float32)
    z.L           (H, T, d_head)  each query head's pattern @ v
    result.L      (H, T, d_model) each head's z through its slice of W_O, no bias
    attn_out.L    (T, d_model)    what the attention sublayer adds to the stream (W_O, its bias, a post norm)
    mlp_out.L     (T, d_model)    likewise for the MLP
    resid_post.L  (T, d_model)    the stream leaving layer L (before the final norm)

A head index narrows a headed site: ``"z.3.1"`` is head 1's (T, d_head) slice of ``z.3``; on ``k`` and ``v`` the
index counts key/value heads. Inside the pass every value has a batch axis first. ``Hooks`` says which sites are
read and which are replaced; sites nobody names cost one dictionary lookup, and ``result`` (a (heads, T, d_model)
array per layer) is computed only when it is named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from .config import ArchSpec
from .layers import wide

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""

SITE_KINDS = ("resid_pre", "q", "k", "v", "pattern", "z", "result", "attn_out", "mlp_out", "resid_post")
HEADED = frozenset({"q", "k", "v", "pattern", "z", "result"})
"""Sites with a heads axis (axis 0 of one sequence's value), which a ``.h`` suffix may index."""
KV_KINDS = frozenset({"k", "v"})
OWNED = frozenset({"pattern", "z", "result", "attn_out", "mlp_out"})
"""Sites whose tensor the pass has just made and uses once: a replacement may be written into it in place (the
others may be a caller's tensor, e.g. a restart's ``resid``, or a view shared with other sites: copied first)."""

Writer = Callable[[torch.Tensor], torch.Tensor] | torch.Tensor
"""A replacement: a function of the clean value (B, ...) float32 returning the new one of the same shape, or a tensor
that broadcasts to the site's (B, ...) shape (a constant: zeros, a mean; it needs no clean value, so a layer whose
every head's z is constant skips its attention)."""


class Site(NamedTuple):
    """A parsed site name: ``kind`` (one of ``SITE_KINDS``), ``layer``, ``head`` (None: every head)."""

    kind: str
    layer: int
    head: int | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}.{self.layer}" + ("" if self.head is None else f".{self.head}")


def site_names(n_layers: int) -> tuple[str, ...]:
    """Every whole site of a model with ``n_layers`` layers, in the order the forward pass meets them."""
    return tuple(f"{kind}.{layer}" for layer in range(n_layers) for kind in SITE_KINDS)


def parse_site(name: str, spec: ArchSpec) -> Site:
    """``"kind.layer"`` or ``"kind.layer.head"`` checked against the model: ``ValueError`` naming the problem."""
    if not isinstance(name, str):
        raise ValueError(f"site: expected a name such as 'z.0' or 'z.0.1', got {type(name).__name__}")
    parts = name.split(".")
    if len(parts) not in (2, 3) or parts[0] not in SITE_KINDS:
        raise ValueError(f"site {name!r}: not a site name; names are kind.layer or kind.layer.head with kind one of "
                         f"{', '.join(SITE_KINDS)}")
    kind = parts[0]
    try:
        numbers = [int(p) for p in parts[1:]]
    except ValueError:
        raise ValueError(f"site {name!r}: layer and head must be whole numbers") from None
    layer = numbers[0]
    if not 0 <= layer < spec.n_layers:
        raise ValueError(f"site {name!r}: no layer {layer} (0 to {spec.n_layers - 1})")
    if len(numbers) == 1:
        return Site(kind, layer)
    if kind not in HEADED:
        raise ValueError(f"site {name!r}: {kind} has no heads axis (heads index q, k, v, pattern, z, result)")
    count = spec.n_kv_heads if kind in KV_KINDS else spec.n_heads
    what = "key/value heads" if kind in KV_KINDS else "heads"
    if not 0 <= numbers[1] < count:
        raise ValueError(f"site {name!r}: no head {numbers[1]} ({count} {what}: 0 to {count - 1})")
    return Site(kind, layer, numbers[1])


def site_shape(site: Site, spec: ArchSpec, tokens: int, keys: int | None = None) -> tuple[int, ...]:
    """One sequence's shape of a site's value (no batch axis); ``keys``: the pattern's key count (default T)."""
    t, d, dh = tokens, spec.d_model, spec.d_head
    heads = spec.n_kv_heads if site.kind in KV_KINDS else spec.n_heads
    shape: tuple[int, ...] = {
        "q": (heads, t, dh), "k": (heads, t, dh), "v": (heads, t, dh), "z": (heads, t, dh),
        "pattern": (heads, t, t if keys is None else keys), "result": (heads, t, d)}.get(site.kind, (t, d))
    return shape if site.head is None else shape[1:]


class Hooks:
    """What one forward pass reads and replaces: ``read`` (site names), ``write`` ({site name: ``Writer``}),
    ``into`` ({``pattern.L`` or ``z.L``: a preallocated (B, ...) tensor the pass computes that site in, so a reader
    that keeps every layer's maps, as a trace does, gets them without a copy}).

    After the run ``values[name]`` holds each read site (float32, batch axis first). A read sees the value the pass
    went on with (after a replacement at the same site). At one site the whole-site writer runs first, then the
    head-indexed ones; writers get float32 and their result is cast back to the model's dtype. A writer's result
    of the wrong shape raises ``ValueError`` naming the site and both shapes."""

    def __init__(self, read: Iterable[str] = (), write: Mapping[str, Writer] | None = None,
                 into: Mapping[str, torch.Tensor] | None = None) -> None:
        self.read = tuple(read)
        self.write = dict(write or {})
        self.into = dict(into or {})
        self.values: dict[str, torch.Tensor] = {}
        self._reads: dict[tuple[str, int], list[Site]] = {}
        self._writes: dict[tuple[str, int], list[tuple[Site, Writer]]] = {}
        self._spec: ArchSpec | None = None
        self._into: dict[tuple[str, int], torch.Tensor] = {}

    def bind(self, spec: ArchSpec) -> Hooks:
        """Check every name against the model (``ValueError`` before any work) and index them by (kind, layer)."""
        reads: dict[tuple[str, int], list[Site]] = {}
        writes: dict[tuple[str, int], list[tuple[Site, Writer]]] = {}
        for name in self.read:
            s = parse_site(name, spec)
            reads.setdefault((s.kind, s.layer), []).append(s)
        for name, how in self.write.items():
            s = parse_site(name, spec)
            if not (callable(how) or isinstance(how, torch.Tensor)):
                raise ValueError(f"site {name!r}: a replacement is a function of the clean value or a tensor, "
                                 f"got {type(how).__name__}")
            writes.setdefault((s.kind, s.layer), []).append((s, how))
        buffers: dict[tuple[str, int], torch.Tensor] = {}
        for name, out in self.into.items():
            s = parse_site(name, spec)
            if s.kind not in ("pattern", "z") or s.head is not None:
                raise ValueError(f"site {name!r}: only whole pattern and z sites are computed into a given array")
            buffers[(s.kind, s.layer)] = out
        for entries in writes.values():
            entries.sort(key=lambda e: e[0].head is not None)  # the whole site first, then its heads
        self._reads, self._writes, self._into, self._spec, self.values = reads, writes, buffers, spec, {}
        return self

    def __bool__(self) -> bool:
        return bool(self._reads or self._writes or self._into)

    def buffer(self, kind: str, layer: int) -> torch.Tensor | None:
        """The array ``into`` gives for this site (None: the pass makes its own)."""
        return self._into.get((kind, layer))

    def touches(self, kind: str, layer: int) -> bool:
        return (kind, layer) in self._reads or (kind, layer) in self._writes

    def only_constants(self, kinds: frozenset[str] = frozenset({"z"})) -> bool:
        """Nothing read, every writer a constant on one of ``kinds`` (what row-skipping passes may carry)."""
        return not self._reads and not self._into and all(k in kinds and not callable(how)
                                       for (k, _), entries in self._writes.items() for _, how in entries)

    def constant_z(self, layer: int) -> bool:
        """Every head's z of ``layer`` is a constant and nothing else of that layer's attention is named: its
        attention need not run."""
        entries = self._writes.get(("z", layer), [])
        if any(callable(how) for _, how in entries) or any(
                self.touches(k, layer) for k in ("q", "k", "v", "pattern", "result")) or ("z", layer) in self._reads \
                or ("z", layer) in self._into:
            return False
        heads = {s.head for s, _ in entries}
        return None in heads or (self._spec is not None and len(heads) == self._spec.n_heads)

    def __call__(self, kind: str, layer: int, x: torch.Tensor, span: slice | None = None) -> torch.Tensor:
        """The value the pass goes on with at this site (x (B, ...) when nothing replaces it); reads recorded.
        ``span``: the positions x's rows are, when the pass runs only some (a constant's position axis is cut)."""
        key = (kind, layer)
        entries = self._writes.get(key)
        if entries:
            x = x if kind in OWNED else x.clone()
            for site, how in entries:
                part = x if site.head is None else x[:, site.head]
                if callable(how):
                    new = how(wide(part))
                    if not isinstance(new, torch.Tensor) or new.shape != part.shape:
                        got = tuple(new.shape) if isinstance(new, torch.Tensor) else type(new).__name__
                        raise ValueError(f"site {site.name!r}: the replacement has shape {got}, the site "
                                         f"{tuple(part.shape)} (batch first)")
                else:
                    new = how
                    if span is not None and new.dim() >= 2 and kind != "pattern":
                        new = new[..., span, :]
                part.copy_(new.to(device=x.device, dtype=x.dtype) if isinstance(new, torch.Tensor) else new)
        for site in self._reads.get(key, ()):
            self.values[site.name] = wide(x if site.head is None else x[:, site.head])
        return x


def head_results(o_weight: torch.Tensor, in_out: bool, z: torch.Tensor) -> torch.Tensor:
    """result (B, H, T, d_model): each head's z (B, H, T, d_head) through its own columns of W_O (no bias);
    their sum over heads plus W_O's bias is the attention's output."""
    b, h, t, dh = z.shape
    w = o_weight if in_out else o_weight.t()  # (H·d_head, d_model)
    return torch.einsum("bhtd,hde->bhte", z, w.reshape(h, dh, w.shape[-1]))


def check_value(site: Site, value: Any, shape: tuple[int, ...]) -> None:
    """A replacement given as an array must have the site's shape (one sequence): ``ValueError`` naming both."""
    got = tuple(getattr(value, "shape", ()))
    if got != shape:
        raise ValueError(f"site {site.name!r}: the replacement has shape {got}, the site {shape}")


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Run:
    """One sequence run with sites read or replaced (``PretrainedModel.run_with``): ``ids`` (T,) int64, ``logits``
    (T, vocab) float32 (after every replacement), ``read`` {site name: float32 array of the site's shape}."""

    ids: np.ndarray
    logits: np.ndarray
    read: dict[str, np.ndarray]


def run_with(model: PretrainedModel, text_or_ids: Any, *, read: Any = (), replace: Any = None) -> Run:
    """One text (or ids) through ``model`` with sites read and replaced: ``read`` (site names), ``replace`` {site
    name: an array of the site's shape (one sequence, see ``site_shape``) or a function of its clean value (numpy)
    returning one}. Unknown names, heads out of range and arrays of the wrong shape raise ``ValueError`` before the
    model runs; a function's result of the wrong shape raises it while the model runs."""
    ids, _ = model.ids_of(text_or_ids)
    names = (read,) if isinstance(read, str) else tuple(read)
    for name in names:
        parse_site(name, model.spec)
    if replace is not None and not isinstance(replace, Mapping):
        raise ValueError(f"replace: expected {{site name: array or function}}, got {type(replace).__name__}")
    writes: dict[str, Writer] = {}
    for name, how in (replace or {}).items():
        site = parse_site(name, model.spec)
        shape = site_shape(site, model.spec, len(ids))
        if callable(how):
            writes[name] = _numpy_writer(site, shape, how)
        else:
            value = np.asarray(how, dtype=np.float32)
            check_value(site, value, shape)
            writes[name] = torch.as_tensor(value, device=model.device)[None]
    hooks = Hooks(names, writes)
    out = model.forward(ids, hooks=hooks)
    assert out.logits is not None
    return Run(ids, out.logits[0].cpu().numpy(), {n: hooks.values[n][0].cpu().numpy() for n in names})


def _numpy_writer(site: Site, shape: tuple[int, ...], fn: Callable[[np.ndarray], Any]) -> Writer:
    """A function of one sequence's clean value (numpy) as a batched writer, its result checked."""

    def write(x: torch.Tensor) -> torch.Tensor:
        new = np.asarray(fn(x[0].cpu().numpy()), dtype=np.float32)
        check_value(site, new, shape)
        return torch.as_tensor(new, device=x.device)[None]

    return write
