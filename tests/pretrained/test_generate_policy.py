"""Cache policies (window, sinks), sampling (seeded draws, top-k and top-p cuts), undo and option checks of
``PretrainedModel.generate`` / ``decoder``."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.pretrained.sampling import filter_logits  # noqa: E402
from tests.pretrained.generate_families import GENERATE_FAMILIES, folder_for, reference_for, text_for  # noqa: E402
from tests.tolerance import assert_close

UNIFORM = ("gpt2", "gpt2-untied", "llama", "llama-tied", "gpt_neox", "gpt_neox-sequential", "qwen3", "olmo2",
           "phi3-partial", "smollm2")
"""Families whose layers all share one mask: transformers takes one custom 4-D mask for them."""
POLICIES = [("window", 5, 0), ("sinks", 6, 2), ("sinks", 4, 1)]


def _rule(cache: str, window: int, sinks: int, q: int) -> list[int]:
    """The positions a query at q keeps, written from the policy's definition."""
    if cache == "window":
        return [k for k in range(q + 1) if k > q - window]
    return sorted(set(range(min(sinks, q + 1))) | {k for k in range(q + 1) if k > q - (window - sinks)})


def _masked_reference(model, name, reference, ids, mask):
    """Logits of one whole forward whose query p sees only mask[p] (and the model's own causal/window rules)."""
    if name in UNIFORM:
        add = torch.zeros(1, 1, len(ids), len(ids))
        add[0, 0][~mask] = torch.finfo(torch.float32).min
        with torch.no_grad():
            return reference(torch.tensor([ids]), attention_mask=add).logits[0].numpy()
    return model.forward_pass.run(torch.tensor([ids]), mask=mask).logits[0].numpy()


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p[0]}{p[1]}-{p[2]}")
@pytest.mark.parametrize("name", GENERATE_FAMILIES)
def test_window_and_sinks_keep_the_named_positions_and_equal_a_masked_forward(hf_models, own_model_dir,
                                                                              hf_reference, family_decoders, name,
                                                                              policy):
    cache, window, sinks = policy
    model = load_pretrained(folder_for(name, hf_models, own_model_dir, family_decoders))
    prompt = model.ids_of(text_for(name))[0][:8].tolist()
    gen = model.generate(prompt, max_new_tokens=4 if name == "own" else 8, cache=cache, window=window, sinks=sinks,
                         stop_at_eos=False)
    n = len(gen.ids)
    mask = torch.zeros(n, n, dtype=torch.bool)
    for q in range(n):
        mask[q, _rule(cache, window, sinks, q)] = True
    reference = None if name not in UNIFORM else reference_for(name, hf_reference, family_decoders)
    logits = _masked_reference(model, name, reference, gen.ids, mask)
    full = model.forward_pass.run(torch.tensor([gen.ids])).logits[0].double()
    before: list[int] = []
    for step in gen.steps:
        q = step.query_position
        assert step.cache_positions == _rule(cache, window, sinks, q)
        assert len(step.cache_positions) == min(window, q + 1)
        assert step.attentions.shape[-1] == len(step.cache_positions)
        assert_close(step.logits, logits[q])
        if before:
            assert step.evicted == sorted(set(before) - set(step.cache_positions))
        before = step.cache_positions
        # against the full cache: KL(full || policy) by hand, and whether the top token moved
        p, lq = torch.log_softmax(full[q], -1), torch.log_softmax(torch.as_tensor(step.logits).double(), -1)
        assert step.kl_from_full == pytest.approx(float((p.exp() * (p - lq)).sum()), abs=1e-4)
        assert step.top_changed == (int(full[q].argmax()) != int(np.argmax(step.logits)))
    assert any(s.evicted for s in gen.steps)


def test_sampling_with_a_seed_repeats_and_another_seed_differs(hf_models):
    model = load_pretrained(hf_models["llama"])
    runs = [model.generate(text_for("llama"), max_new_tokens=10, temperature=1.5, seed=s, stop_at_eos=False).new_ids
            for s in (7, 7, 8)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize("top_k,top_p", [(3, None), (None, 0.7), (5, 0.5), (None, 0.999), (1, None)])
def test_top_k_and_top_p_cut_where_transformers_cuts(top_k, top_p):
    from transformers import TopKLogitsWarper, TopPLogitsWarper

    gen = torch.Generator().manual_seed(top_k or 0)
    for _ in range(20):
        logits = torch.randn(50, generator=gen, dtype=torch.float64) * 3
        ours = filter_logits(logits, top_k, top_p)
        ref = logits[None].clone()
        if top_k is not None:
            ref = TopKLogitsWarper(top_k)(None, ref)
        if top_p is not None:
            ref = TopPLogitsWarper(top_p)(None, ref)
        assert torch.equal(torch.isinf(ours), torch.isinf(ref[0]))


def test_top_k_and_top_p_by_their_definitions():
    probs = torch.tensor([0.05, 0.5, 0.15, 0.3], dtype=torch.float64)
    logits = probs.log()
    kept = lambda **kw: torch.nonzero(~torch.isinf(filter_logits(logits, **kw))).flatten().tolist()  # noqa: E731
    assert kept(top_k=2, top_p=None) == [1, 3]
    assert kept(top_k=None, top_p=0.5) == [1]  # 0.5 alone reaches p
    assert kept(top_k=None, top_p=0.75) == [1, 3]  # 0.5 + 0.3 = 0.8 >= 0.75: the smallest such head
    assert kept(top_k=None, top_p=0.85) == [1, 2, 3]  # 0.8 < 0.85: the third joins
    assert kept(top_k=1, top_p=0.99) == [1]


def test_each_step_lists_the_distribution_before_and_after_the_cuts(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    step = model.decoder(text_for("gpt2"), temperature=0.8, top_k=4, seed=3).step()
    assert step is not None
    raw = torch.softmax(torch.as_tensor(step.logits).double(), -1)
    order = torch.argsort(raw, descending=True)
    assert [t[0] for t in step.top_raw] == order[:10].tolist()
    assert [t[2] for t in step.top_raw] == pytest.approx(raw[order[:10]].tolist())
    cut = torch.softmax(torch.as_tensor(step.logits).double()[order[:4]] / 0.8, -1)  # top 4, temperature 0.8
    assert [t[0] for t in step.top] == order[:4].tolist()
    assert [t[2] for t in step.top] == pytest.approx(cut.tolist())
    assert step.id in order[:4].tolist() and step.probability == pytest.approx(float(raw[step.id]))
    assert step.token == model.token_strings([step.id])[0]


@pytest.mark.parametrize("cache", ["full", "sinks"])
def test_undo_then_step_again_gives_the_same_token(hf_models, cache):
    model = load_pretrained(hf_models["llama"])
    decoder = model.decoder(text_for("llama"), temperature=1.2, seed=5, cache=cache,
                            window=None if cache == "full" else 6, sinks=2, stop_at_eos=False)
    steps = [decoder.step() for _ in range(4)]
    assert decoder.undo() and decoder.undo()
    assert decoder.generation.new_ids == [s.id for s in steps[:2]]
    again = [decoder.step(), decoder.step()]
    for old, new in zip(steps[2:], again):
        assert new.id == old.id and new.cache_positions == old.cache_positions
        np.testing.assert_array_equal(new.logits, old.logits)
    while decoder.undo():
        pass
    assert decoder.generation.new_ids == [] and decoder.step().id == steps[0].id


def test_changing_sampling_and_policy_mid_way(hf_models, hf_reference):
    model = load_pretrained(hf_models["gpt2"])
    decoder = model.decoder(text_for("gpt2"), stop_at_eos=False)
    for _ in range(3):
        decoder.step()
    decoder.set_cache("window", window=4)
    step = decoder.step()
    ids = decoder.generation.ids
    q = step.query_position
    assert step.cache_positions == list(range(q - 3, q + 1))
    mask = torch.tril(torch.ones(len(ids), len(ids), dtype=torch.bool))
    mask &= torch.arange(len(ids))[None, :] > torch.arange(len(ids))[:, None] - 4  # as if on from the start
    assert_close(step.logits, _masked_reference(model, "gpt2", hf_reference("gpt2"), ids, mask)[q])
    decoder.set_sampling(temperature=1.0, top_k=1)
    assert decoder.step().id == int(np.argmax(decoder.generation.steps[-1].logits))
    assert decoder.generation.cache == "window" and decoder.generation.window == 4


@pytest.mark.parametrize("kwargs,word", [
    (dict(cache="window", window=0), "window"), (dict(cache="sinks", window=4, sinks=4), "sinks"),
    (dict(cache="sinks", window=4, sinks=-1), "sinks"), (dict(top_p=0.0), "top_p"), (dict(top_p=1.5), "top_p"),
    (dict(top_k=0), "top_k"), (dict(temperature=-0.1), "temperature"), (dict(temperature=math.nan), "temperature"),
    (dict(cache="lru"), "cache"), (dict(cache="window"), "window"), (dict(max_new_tokens=-1), "max_new_tokens"),
    (dict(seed=1.5), "seed")])
def test_bad_options_are_refused(hf_models, kwargs, word):
    model = load_pretrained(hf_models["gpt2"])
    with pytest.raises(ValueError, match=word):
        model.generate(text_for("gpt2"), **kwargs)


def test_an_empty_prompt_and_bad_changes_are_refused_and_change_nothing(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    for prompt in ("", []):
        with pytest.raises(ValueError):
            model.generate(prompt)
    decoder = model.decoder(text_for("gpt2"), temperature=0.5, cache="sinks", window=6, sinks=2)
    with pytest.raises(ValueError, match="top_p"):
        decoder.set_sampling(temperature=1.0, top_p=2.0)
    with pytest.raises(ValueError, match="sinks"):
        decoder.set_cache("sinks", window=3, sinks=3)
    assert decoder.sampling.temperature == 0.5 and decoder.policy.window == 6 and decoder.policy.sinks == 2
