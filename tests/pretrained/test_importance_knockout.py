"""Value-weighted maps, attention rollout and knockout against transformers' eager forward (the reference).

Value norms: HF's attentions and its v_proj output (captured by a hook) give ‖α_ij · v_j · W_O^h‖ by hand, and the
vectors summed over keys equal the head's slice of o_proj's input through its columns of W_O. Knockout: HF eager
with a custom 4-D additive float mask (every layer: given as the model's attention_mask; some layers or heads: put
into those layers' attention calls by a forward pre-hook).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.pretrained.conftest import TEXT

pytest.importorskip("transformers")


def _load(hf_models, name):
    from attention_core.pretrained import load_pretrained

    return load_pretrained(hf_models[name], threads=1)


def _close(ours, ref, rel=1e-4):
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert np.abs(ours - ref).max() <= rel * max(float(np.abs(ref).max()), 1e-30), np.abs(ours - ref).max()


def _hf_capture(hf, ids, names):
    """HF's outputs (attentions kept) and, per layer, the outputs of the named attention submodules."""
    attn = [b.self_attn for b in hf.model.layers]
    got: dict = {}
    handles = []
    for li, a in enumerate(attn):
        for n in names:
            if n == "o_in":
                handles.append(a.o_proj.register_forward_pre_hook(
                    lambda m, args, li=li: got.__setitem__(("o_in", li), args[0].clone())))
            else:
                handles.append(getattr(a, n).register_forward_hook(
                    lambda m, args, out, li=li, n=n: got.__setitem__((n, li), out.clone())))
    try:
        with torch.no_grad():
            out = hf(torch.tensor([ids]), output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    return out, got


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_value_norms_and_vectors_equal_the_reference(hf_models, hf_reference, name):
    from attention_core.pretrained.cause.importance import value_vectors

    model, hf = _load(hf_models, name), hf_reference(name)
    trace = model.trace(TEXT)
    spec = model.spec
    dh, group = spec.d_head, spec.n_heads // spec.n_kv_heads
    norms = trace.value_norms
    assert norms.shape == trace.attentions.shape and norms.dtype == np.float32
    if name == "gpt2":  # the fused projection: check the sums against our own z and W_O, the norms by hand
        for li in range(spec.n_layers):
            w_o = hf.transformer.h[li].attn.c_proj.weight.detach().double().numpy()  # (H·d_head, d_model), Conv1D
            for h in range(spec.n_heads):
                vec = value_vectors(trace, li, h)
                z = trace.head_outputs[li, h].astype(np.float64)
                _close(vec.sum(axis=1), z @ w_o[h * dh:(h + 1) * dh])
                _close(norms[li, h], np.linalg.norm(vec, axis=-1))
        return
    out, got = _hf_capture(hf, trace.ids.tolist(), ("v_proj", "o_in"))
    for li in range(spec.n_layers):
        w_o = hf.model.layers[li].self_attn.o_proj.weight.detach().double().numpy()  # (d_model, H·d_head)
        alpha = out.attentions[li][0].double().numpy()
        v = got[("v_proj", li)][0].double().numpy()
        z = got[("o_in", li)][0].double().numpy()
        for h in range(spec.n_heads):
            kv = h // group
            u = v[:, kv * dh:(kv + 1) * dh] @ w_o[:, h * dh:(h + 1) * dh].T  # (T, d_model): v_j W_O^h
            _close(norms[li, h], alpha[h] * np.linalg.norm(u, axis=-1)[None, :])
            vec = value_vectors(trace, li, h)
            _close(vec.sum(axis=1), z[:, h * dh:(h + 1) * dh] @ w_o[:, h * dh:(h + 1) * dh].T)


def test_rollout_is_the_product_of_half_identity_maps(hf_models, hf_reference):
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    trace = model.trace(TEXT)
    with torch.no_grad():
        att = [a[0].double().numpy() for a in hf(torch.tensor([trace.ids.tolist()]), output_attentions=True).attentions]
    t = len(trace)
    r = np.eye(t)
    expect = []
    for a in att:
        step = 0.5 * a.mean(axis=0) + 0.5 * np.eye(t)
        step = step / step.sum(axis=1, keepdims=True)
        r = step @ r
        expect.append(r)
    got = trace.rollout()
    assert got.shape == (model.spec.n_layers, t, t)
    _close(got, np.stack(expect))
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.allclose(np.triu(got[-1], 1), 0.0)  # causal: nothing flows from later tokens


def _hf_knockout_logits(hf, ids, blocked_by_layer, n_heads):
    """HF eager logits with each layer's (heads, T, T) bool "blocked" put in as −inf (float32 min) on top of the
    causal mask, through a pre-hook on that layer's attention (its attention_mask kwarg)."""
    t = len(ids)
    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
    neg = torch.finfo(torch.float32).min
    handles = []
    for li, block in enumerate(hf.model.layers):
        if li not in blocked_by_layer:
            continue
        add = torch.zeros(1, n_heads, t, t)
        add.masked_fill_(causal | blocked_by_layer[li], neg)

        def hook(mod, args, kwargs, add=add):
            return args, {**kwargs, "attention_mask": add}
        handles.append(block.self_attn.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            return hf(torch.tensor([ids])).logits[0, -1].double()
    finally:
        for h in handles:
            h.remove()


def test_knockout_every_layer_equals_a_4d_additive_mask(hf_models, hf_reference):
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    ids = model.encode(TEXT)
    t = len(ids)
    edges = [(t - 1, 0), (t - 1, t - 2), (5, 3)]
    result = model.knockout(ids, edges)
    mask = torch.zeros(1, 1, t, t)
    blocked = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
    for q, k in edges:
        blocked[q, k] = True
    mask.masked_fill_(blocked, torch.finfo(torch.float32).min)
    with torch.no_grad():
        before = hf(torch.tensor([ids])).logits[0, -1].double()
        after = hf(torch.tensor([ids]), attention_mask=mask).logits[0, -1].double()
    p_b, p_a = torch.softmax(before, -1).numpy(), torch.softmax(after, -1).numpy()
    _close(result.before, p_b)
    _close(result.after, p_a)
    kl = float((p_b * (np.log(p_b) - np.log(p_a))).sum())
    assert result.kl == pytest.approx(kl, rel=1e-3, abs=1e-7)
    assert result.kl > 1e-6  # the cells mattered here: a real comparison
    assert result.top_after[0][1] == int(np.argmax(p_a)) and len(result.top_before) == 10
    assert len(result.moved(model, 3)) == 3


def test_knockout_in_chosen_layers_and_heads(hf_models, hf_reference):
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    ids = model.encode(TEXT)
    t, heads = len(ids), model.spec.n_heads
    edges = [(t - 1, 0), (t - 1, 1), (t - 3, 2)]
    cells = torch.zeros(t, t, dtype=torch.bool)
    for q, k in edges:
        cells[q, k] = True
    result = model.knockout(ids, edges, layers=[1])
    ref = _hf_knockout_logits(hf, ids, {1: cells.expand(heads, t, t)}, heads)
    _close(result.after, torch.softmax(ref, -1).numpy())
    per_head = torch.zeros(heads, t, t, dtype=torch.bool)
    per_head[2] = cells
    result = model.knockout(ids, edges, layers=[(0, 2)])
    ref = _hf_knockout_logits(hf, ids, {0: per_head}, heads)
    _close(result.after, torch.softmax(ref, -1).numpy())
    assert result.heads == ((0, 2),)


def test_knockout_refusals(hf_models):
    model = _load(hf_models, "gpt2")
    ids = model.encode(TEXT)
    t = len(ids)
    with pytest.raises(ValueError, match="cannot see key"):
        model.knockout(ids, [(2, 5)])
    with pytest.raises(ValueError, match="no key left"):
        model.knockout(ids, [(1, 0), (1, 1)])
    with pytest.raises(ValueError, match="outside"):
        model.knockout(ids, [(t, 0)])
    with pytest.raises(ValueError, match="no layer"):
        model.knockout(ids, [(3, 0)], layers=[9])
    with pytest.raises(ValueError, match="at least one"):
        model.knockout(ids, [])


def test_long_trace_refuses_value_norms(hf_models):
    from attention_core.pretrained import LongTraceError
    from attention_core.pretrained.cause.importance import rollout, value_norms
    from attention_core.pretrained.trace import NotKept

    kept = NotKept("attentions", (2, 4, 2000, 2000), "head_map", 2000)
    with pytest.raises(LongTraceError, match="not kept"):
        value_norms(kept, np.zeros(0), lambda li: np.zeros(0), 4, 4)  # type: ignore[arg-type]
    with pytest.raises(LongTraceError, match="not kept"):
        rollout(kept)  # type: ignore[arg-type]
