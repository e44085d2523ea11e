"""Decoding in linear memory: the ``Decoder``'s undo history keeps what taking a token back needs (a cache length per
lane, a window's evicted entries, the random state), never a copy of a cache, so what it holds does not grow with
the tokens written; ``generate`` and the ``generate`` command keep no history at all. Undo still restores the cache
entry for entry (``KVCache.evict`` / ``rewind``), and after a policy switch and back it returns to the very cache
the steps ran on. No timing here: the speed and the peak memory are ``benchmarks/bench_generate_long.py``'s."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.pretrained import generate as generate_module  # noqa: E402
from attention_core.pretrained.cache_policy import KVCache  # noqa: E402
from tests.pretrained.generate_families import text_for  # noqa: E402


def _torch_bytes(root: object) -> int:
    """Bytes of every distinct tensor storage reachable from ``root`` through attributes, containers and
    dataclasses (the model left out: its weights are not the decoder's). A view counts its whole storage: it keeps
    it alive."""
    seen: set[int] = set()
    storages: dict[int, int] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.ndarray)):
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
            stack.extend(v for k, v in vars(obj).items() if k != "model")
    return sum(storages.values())


def _per_position(model) -> int:
    """One position's keys and values in every layer (bytes), and its position (a long) per layer."""
    spec = model.spec
    return spec.n_layers * (2 * spec.n_kv_heads * spec.d_head * model.weights.embed.element_size() + 8)


@pytest.mark.parametrize("cache,window", [("full", None), ("window", 4), ("sinks", 5)])
@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_the_undo_history_holds_nothing_that_grows_with_the_tokens(hf_models, cache, window, temperature):
    """After N steps the decoder holds its caches (the policy's and, for a window, the full one beside it) and per
    step at most one evicted position and one random state: a bound linear in N. A history of cache copies holds
    the sum of every step's cache, quadratic in N (at 48 steps about 14 times this bound)."""
    model = load_pretrained(hf_models["gpt2"])
    decoder = model.decoder(text_for("gpt2")[:12], temperature=temperature, seed=1, cache=cache, window=window,
                            sinks=2, stop_at_eos=False)
    rng_bytes = torch.Generator().get_state().untyped_storage().nbytes()
    per_step = _per_position(model) + 16 + (rng_bytes if temperature else 0)  # evicted + its index, random state
    for n in range(1, 49):
        assert decoder.step() is not None
        length = len(decoder.ids) - 1  # positions the full cache holds
        lanes = length + (0 if cache == "full" else window)  # the full lane beside a window's, or the full one
        assert _torch_bytes(decoder) <= lanes * _per_position(model) + n * per_step, n
    # each record holds a constant: nothing in it is the size of a cache
    records = decoder._history
    assert records is not None and len(records) == 48
    assert max(r.nbytes() for r in records[-10:]) <= per_step
    assert decoder.history_bytes == sum(r.nbytes() for r in records)


def test_generate_and_a_decoder_without_undo_keep_no_history(hf_models, monkeypatch):
    """``generate`` runs a decoder made with ``undo=False``: after every step its history holds 0 bytes and what the
    decoder holds is its caches alone (watched from inside the real steps)."""
    model = load_pretrained(hf_models["gpt2"])
    seen: list[tuple[int, int, int]] = []
    real_step = generate_module.Decoder.step

    def watched(self):
        out = real_step(self)
        if out is not None:
            seen.append((self.history_bytes, _torch_bytes(self), len(self.ids) - 1))
        return out

    monkeypatch.setattr(generate_module.Decoder, "step", watched)
    gen = model.generate(text_for("gpt2")[:12], max_new_tokens=30, temperature=0.7, cache="sinks", window=5,
                         sinks=2, stop_at_eos=False)
    assert len(seen) == len(gen.steps) == 30
    for history, held, length in seen:
        assert history == 0 and held <= (length + 5) * _per_position(model)
    decoder = generate_module.Decoder(model, text_for("gpt2"), undo=False)
    decoder.step()
    assert decoder.undo() is False and len(decoder.steps) == 1


def test_the_generate_command_keeps_no_history(hf_models, tmp_path, capsys, monkeypatch):
    from app.cli import main

    seen: list[int] = []
    real_step = generate_module.Decoder.step

    def watched(self):
        out = real_step(self)
        seen.append(self.history_bytes + (0 if self._history is None else 1))
        return out

    monkeypatch.setattr(generate_module.Decoder, "step", watched)
    code = main(["generate", "--model", str(hf_models["gpt2"]), "--prompt", text_for("gpt2"), "--max-new-tokens",
                 "6", "--temperature", "0.8", "--out", str(tmp_path / "g.json")])
    capsys.readouterr()
    assert code == 0 and seen and set(seen) == {0}


def _state(cache: KVCache) -> list[torch.Tensor]:
    return [t.clone() for t in (*cache.keys, *cache.values, *cache.positions) if t is not None]


@pytest.mark.parametrize("cache,window,sinks", [("full", None, 0), ("window", 3, 0), ("sinks", 5, 2)])
def test_undo_restores_every_cache_entry_and_the_same_steps_follow(hf_models, cache, window, sinks):
    model = load_pretrained(hf_models["llama"])
    decoder = model.decoder(text_for("llama"), temperature=1.1, seed=4, cache=cache, window=window, sinks=sinks,
                            stop_at_eos=False)
    decoder.step()  # the first step builds the cache from the prompt
    states, steps = [], []
    for _ in range(8):
        states.append((_state(decoder._lane.cache), None if decoder._full is None else _state(decoder._full.cache)))
        steps.append(decoder.step())
    for i in reversed(range(8)):
        assert decoder.undo()
        lane_state, full_state = states[i]
        assert all(torch.equal(a, b) for a, b in zip(_state(decoder._lane.cache), lane_state, strict=True))
        if full_state is not None:
            assert all(torch.equal(a, b) for a, b in zip(_state(decoder._full.cache), full_state, strict=True))
    again = [decoder.step() for _ in range(8)]
    for old, new in zip(steps, again):
        assert new.id == old.id and new.cache_positions == old.cache_positions and new.evicted == old.evicted
        np.testing.assert_array_equal(new.logits, old.logits)
        np.testing.assert_array_equal(new.attentions, old.attentions)
        assert new.kl_from_full == old.kl_from_full


def test_undo_after_a_switch_and_back_returns_to_the_cache_the_steps_ran_on(hf_models):
    """sinks → full → sinks with no step between, then undo: the next step runs on the sinks cache those steps built
    token by token (as a restored snapshot did), not on one rebuilt in a single pass; its logits equal, bit for bit,
    those of a decoder that never switched."""
    model = load_pretrained(hf_models["llama"])
    kwargs = dict(temperature=0.0, cache="sinks", window=5, sinks=1, stop_at_eos=False)
    straight = model.decoder(text_for("llama"), **kwargs)
    expected = [straight.step() for _ in range(5)]
    decoder = model.decoder(text_for("llama"), **kwargs)
    for _ in range(5):
        decoder.step()
    decoder.set_cache("full")
    decoder.set_cache("sinks", window=5, sinks=1)
    assert decoder.undo() and decoder.undo()
    redo = [decoder.step(), decoder.step()]
    for old, new in zip(expected[3:], redo):
        np.testing.assert_array_equal(new.logits, old.logits)
        assert new.cache_positions == old.cache_positions


def test_evict_then_rewind_gives_back_the_cache_entry_for_entry():
    gen = torch.Generator().manual_seed(0)
    layers, heads, length, d = 3, 2, 9, 4
    cache = KVCache([torch.randn(1, heads, length, d, generator=gen) for _ in range(layers)],
                    [torch.randn(1, heads, length, d, generator=gen) for _ in range(layers)],
                    [torch.arange(length) * 2 for _ in range(layers)])
    before = _state(cache)
    keep = torch.tensor([True, False, False, True, True, False, True, True, True])
    evicted = cache.evict(keep)
    assert cache.length() == 6 and evicted.index.tolist() == [1, 2, 5]
    # copies of the three entries (keys, values, positions per layer, and their indices), not views of the whole
    assert evicted.nbytes() == layers * (2 * heads * 3 * d * 4 + 3 * 8) + 3 * 8
    for li in range(layers):  # a run appends a token, as the forward pass does (torch.cat)
        new = torch.randn(1, heads, 1, d, generator=gen)
        cache.keys[li] = torch.cat((cache.keys[li], new), dim=-2)
        cache.values[li] = torch.cat((cache.values[li], new), dim=-2)
        cache.positions[li] = torch.cat((cache.positions[li], torch.tensor([18])))
    cache.rewind(length, evicted)
    assert all(torch.equal(a, b) for a, b in zip(_state(cache), before, strict=True))
    cache.rewind(length - 2)  # no eviction: a slice of what is there
    assert cache.length() == length - 2 and torch.equal(cache.keys[0], before[0][:, :, :length - 2])


def test_append_grows_by_doubling_and_equals_cat_entry_for_entry():
    """``KVCache.append`` (the preallocated form the forward pass can call instead of ``torch.cat``): the same keys,
    values and positions as concatenation, the same attention over them bit for bit, buffers that double (about
    log2(T) allocations, not one a step), and a tensor once handed out never changes."""
    gen = torch.Generator().manual_seed(1)
    heads, d = 12, 64
    grown, cat = KVCache.empty(1), KVCache.empty(1)
    handed: list[tuple[torch.Tensor, torch.Tensor]] = []
    buffers = set()
    for step in range(70):
        t = 7 if step == 0 else 1
        k, v = torch.randn(1, heads, t, d, generator=gen), torch.randn(1, heads, t, d, generator=gen)
        pos = torch.arange(cat.length(), cat.length() + t)
        gk, gv, gp = grown.append(0, k, v, pos)
        if cat.keys[0] is None:
            cat.keys[0], cat.values[0], cat.positions[0] = k, v, pos
        else:
            cat.keys[0] = torch.cat((cat.keys[0], k), dim=-2)
            cat.values[0] = torch.cat((cat.values[0], v), dim=-2)
            cat.positions[0] = torch.cat((cat.positions[0], pos))
        assert torch.equal(gk, cat.keys[0]) and torch.equal(gv, cat.values[0]) and torch.equal(gp, cat.positions[0])
        q = torch.randn(1, heads, 1, d, generator=gen)
        ours = torch.softmax(q @ gk.transpose(-1, -2) / 8, dim=-1) @ gv
        theirs = torch.softmax(q @ cat.keys[0].transpose(-1, -2) / 8, dim=-1) @ cat.values[0]
        assert torch.equal(ours, theirs)
        buffers.add(gk.untyped_storage().data_ptr())
        handed.append((gk, gk.clone()))
    assert len(buffers) <= 4  # 16 -> 32 -> 64 -> 128 entries for 76
    assert all(torch.equal(view, copy) for view, copy in handed)
    grown.rewind(50)  # a shorter view: the next append starts a new buffer, the old views stay as they were
    grown.append(0, torch.zeros(1, heads, 1, d), torch.zeros(1, heads, 1, d), torch.tensor([50]))
    assert grown.length() == 51 and all(torch.equal(view, copy) for view, copy in handed)
    assert grown.keys[0].untyped_storage().data_ptr() not in buffers
