"""What a lesson may name about a model writing over its key/value cache (the Generate view's figures): the
``gen_`` names that ``app.learn.model.model_tab`` adds to a lesson's expressions. Qt-free; every number is read
from the library's own decoder (``PretrainedModel.decoder``) on the model open in the Model tab, run when a text or
an answer needs it (greedy, so it repeats), never typed in. A name that cannot be computed raises ``ValueError``
with the reason (the lesson's evaluator says it).

The prompt: the first ``PROMPT_TOKENS`` tokens of the Model tab's traced text, so every position a lesson names is
the same on any model (step i's query sits at position 3 + i). Names, all prefixed ``gen_``:

- ``gen_kv_heads``, ``gen_d_head``, ``gen_element_bytes`` (bytes a cached number takes), ``gen_prompt_tokens``;
- ``gen_bytes(positions)``: what the formula says a cache of that many positions holds, 2 × layers × K/V heads ×
  positions × d_head × bytes; ``gen_mha_bytes(positions)``: the same with one K/V head per query head;
- ``gen_bytes_after(n)``: the cache's bytes the decoder reports while it makes its n-th new token (full cache);
- ``gen_kept(query, window, sinks)``: the positions a sinks cache keeps when the query is at position ``query``
  ("0–1, 7–10"), read from the decoder's step; ``gen_kl(query, window, sinks)`` and ``gen_top_changed(query,
  window, sinks)``: how far that step's next-token distribution moved from the full cache's (KL, nats) and whether
  its top token changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.model_tab.model.generate_views import ranges_text

if TYPE_CHECKING:
    from app.model_tab.model.session import InspectSession

GEN_FUNCTIONS = frozenset({"gen_bytes", "gen_mha_bytes", "gen_bytes_after", "gen_kept", "gen_kl",
                           "gen_top_changed"})
GEN_NAMES = frozenset({"gen_kv_heads", "gen_d_head", "gen_element_bytes", "gen_prompt_tokens", *GEN_FUNCTIONS})
PROMPT_TOKENS = 4
NO_MODEL = "no model is open: open one in the Model tab (or Show me on the lesson's first step)"


class GenerateNames:
    """The ``gen_`` names over ``session``'s open model; decoder runs are remembered per model and setting."""

    def __init__(self, session: InspectSession) -> None:
        self.session = session
        self._runs: dict[tuple[Any, ...], list[Any]] = {}

    def _model(self) -> Any:
        s = self.session
        if s.model is None or s.trace is None or s.load_state != "ready":
            raise ValueError(NO_MODEL)
        return s.model

    def prompt_ids(self) -> list[int]:
        trace = self.session.trace
        if trace is None:
            raise ValueError(NO_MODEL)
        if len(trace) < PROMPT_TOKENS:
            raise ValueError(f"the Model tab's text has {len(trace)} tokens: trace one of {PROMPT_TOKENS} or "
                                  "more (its first tokens are the lesson's prompt)")
        return [int(i) for i in trace.ids[:PROMPT_TOKENS]]

    def steps(self, n: int, cache: str = "full", window: int | None = None, sinks: int = 4) -> list[Any]:
        """The first ``n`` steps of a greedy decoding of the prompt with that cache (fewer if the model stops)."""
        model = self._model()
        ids = self.prompt_ids()
        key = (id(model), tuple(ids), n, cache, window, sinks)
        if key not in self._runs:
            decoder = model.decoder(ids, cache=cache, window=window, sinks=sinks, stop_at_eos=False)
            out = []
            for _ in range(n):
                step = decoder.step()
                if step is None:
                    break
                out.append(step)
            self._runs[key] = out
        return self._runs[key]

    def step_at(self, query: Any, width: Any, sinks: Any) -> Any:
        """The sinks-cache step whose query sits at position ``query``."""
        q, w, s = int(query), int(width), int(sinks)
        first = len(self.prompt_ids()) - 1
        if q < first:
            raise ValueError(f"the prompt already reaches position {first}: ask about a later query")
        steps = self.steps(q - first + 1, "sinks", w, s)
        if not steps or int(steps[-1].query_position) != q:
            raise ValueError(f"the model stopped before its query reached position {q}")
        return steps[-1]

    def element_bytes(self) -> int:
        info = self._model().info
        return 2 if info.dtype in ("bfloat16", "float16") else 4

    def bytes_for(self, positions: Any, kv_heads: int | None = None) -> int:
        info = self._model().info
        kv = info.kv_heads if kv_heads is None else kv_heads
        return 2 * info.layers * kv * int(positions) * info.d_head * self.element_bytes()

    def bytes_after(self, n: Any) -> int:
        count = int(n)
        if count < 1:
            raise ValueError("gen_bytes_after(n): n counts new tokens from 1")
        steps = self.steps(count)
        if len(steps) < count:
            raise ValueError(f"the model stopped after {len(steps)} new tokens")
        return int(steps[-1].cache_bytes)

    def kept(self, query: Any, width: Any, sinks: Any) -> str:
        return ranges_text([int(p) for p in self.step_at(query, width, sinks).cache_positions])

    def context(self) -> dict[str, Any]:
        names: dict[str, Any] = {
            "gen_bytes": self.bytes_for,
            "gen_mha_bytes": lambda positions: self.bytes_for(positions, self._model().info.heads),
            "gen_bytes_after": self.bytes_after,
            "gen_kept": self.kept,
            "gen_kl": lambda q, w, s: float(self.step_at(q, w, s).kl_from_full),
            "gen_top_changed": lambda q, w, s: bool(self.step_at(q, w, s).top_changed),
        }
        s = self.session
        if s.model is not None and s.trace is not None and s.load_state == "ready":
            names.update(gen_kv_heads=int(s.model.info.kv_heads), gen_d_head=int(s.model.info.d_head),
                         gen_element_bytes=self.element_bytes(), gen_prompt_tokens=PROMPT_TOKENS)
        return names
