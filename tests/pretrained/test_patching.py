"""Activation patching and path patching against transformers' eager forward with torch hooks (the reference).

Each reference cell is its own hooked Hugging Face run of the corrupted ids: a forward pre-hook replaces a head's
slice of the output projection's input (a head's z), a decoder layer's input hidden state at one position
(resid_pre), or a forward hook replaces a slice of q_proj / k_proj / v_proj's (or GPT-2's fused c_attn's) output.
Our sweeps run batched, restarted at the patched layer and with equal cells skipped: the numbers must still agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.pretrained.conftest import TEXT
from tests.tolerance import assert_close

pytest.importorskip("transformers")


def _load(hf_models, name):
    from attention_core.pretrained import load_pretrained

    return load_pretrained(hf_models[name], threads=1)


def _texts(model):
    """Clean ids and corrupted ids (two tokens changed), and a target/foil the model tells apart."""
    clean = model.encode(TEXT)[:12]
    corrupted = list(clean)
    corrupted[3] = (corrupted[3] + 7) % 300 + 10
    corrupted[6] = (corrupted[6] + 11) % 300 + 10
    return clean, corrupted


def _metric(logits, p, target, foil):
    row = logits[0, p].double()
    return float(row[target] - row[foil])


def _blocks(hf):
    return hf.transformer.h if hasattr(hf, "transformer") else hf.model.layers


def _o_proj(block):
    return block.attn.c_proj if hasattr(block, "attn") else block.self_attn.o_proj


def _hf_run(hf, ids, hooks=()):
    handles = [mod.register_forward_pre_hook(fn, with_kwargs=True) if pre else mod.register_forward_hook(fn)
               for mod, fn, pre in hooks]
    try:
        with torch.no_grad():
            return hf(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()


def _pre_replace(fn):
    """A forward pre-hook (with kwargs) that maps the module's first input (positional or hidden_states=)."""
    def hook(mod, args, kwargs):
        if args:
            return (fn(args[0].clone()), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": fn(kwargs["hidden_states"].clone())}
    return hook


def _capture_o_inputs(hf, ids):
    got = {}
    hooks = []
    for li, block in enumerate(_blocks(hf)):
        def fn(x, li=li):
            got[li] = x.clone()
            return x
        hooks.append((_o_proj(block), _pre_replace(fn), True))
    out = _hf_run(hf, ids, hooks)
    return out, got


def _assert_close(ours, ref):
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = max(1.0, float(np.abs(ref).max()))
    assert np.abs(ours - ref).max() <= 1e-4 * scale, (ours, ref)


def _target_foil(hf, clean, corrupted):
    c = _hf_run(hf, clean).logits[0, -1]
    x = _hf_run(hf, corrupted).logits[0, -1]
    target = int(c.argmax())
    foil = int(x.argmax()) if int(x.argmax()) != target else int(torch.topk(x, 2).indices[1])
    return target, foil


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_heads_sweep_equals_hooked_hf(hf_models, hf_reference, name):
    model, hf = _load(hf_models, name), hf_reference(name)
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    result = model.patch(clean, corrupted, target=target, foil=foil, sweep="heads")
    clean_out, clean_z = _capture_o_inputs(hf, clean)
    dh = model.spec.d_head
    ref = np.zeros((model.spec.n_layers, model.spec.n_heads))
    for li, block in enumerate(_blocks(hf)):
        for h in range(model.spec.n_heads):
            def fn(x, li=li, h=h):
                x[..., h * dh:(h + 1) * dh] = clean_z[li][..., h * dh:(h + 1) * dh]
                return x
            ref[li, h] = _metric(_hf_run(hf, corrupted, [(_o_proj(block), _pre_replace(fn), True)]).logits, -1,
                                 target, foil)
    _assert_close(result.values, ref)
    _assert_close(result.clean, _metric(clean_out.logits, -1, target, foil))
    _assert_close(result.corrupted, _metric(_hf_run(hf, corrupted).logits, -1, target, foil))
    assert result.axes == ("layer", "head") and result.completed and result.warning is None
    expect = (ref - result.corrupted) / (result.clean - result.corrupted)
    # float32 metrics divided by (clean - corrupted): judged at the metrics' magnitude over that difference
    assert_close(result.restored, expect, dtype=np.float32,
                 scale=float(np.abs(ref).max()) / abs(result.clean - result.corrupted))


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_resid_sweep_equals_hooked_hf(hf_models, hf_reference, name):
    model, hf = _load(hf_models, name), hf_reference(name)
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    position = 9
    result = model.patch(clean, corrupted, target=target, foil=foil, position=position, sweep="resid")
    states = _hf_run(hf, clean).hidden_states  # states[l] enters layer l
    t = len(clean)
    ref = np.zeros((model.spec.n_layers, t))
    for li, block in enumerate(_blocks(hf)):
        for p in range(t):
            def fn(x, li=li, p=p):
                x[:, p] = states[li][:, p]
                return x
            ref[li, p] = _metric(_hf_run(hf, corrupted, [(block, _pre_replace(fn), True)]).logits, position,
                                 target, foil)
    _assert_close(result.values, ref)
    assert result.values.shape == (model.spec.n_layers, t) and result.position == position


def _proj_hook(sl, value):
    def hook(mod, args, out):
        out = out.clone()
        out[..., sl] = value[..., sl]
        return out
    return hook


def test_qkv_sweeps_equal_hooked_hf_with_grouped_query(hf_models, hf_reference):
    """Llama with 4 query heads over 2 key/value heads: q is (layers, 4), k and v (layers, 2), each equal to
    replacing that head's slice of the projection's output in a hooked HF run."""
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    spec = model.spec
    assert spec.n_kv_heads < spec.n_heads
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    dh = spec.d_head
    for which in ("q", "k", "v"):
        result = model.patch(clean, corrupted, target=target, foil=foil, sweep=which)
        count = spec.n_heads if which == "q" else spec.n_kv_heads
        assert result.values.shape == (spec.n_layers, count)
        if which != "q":
            assert result.feeds == ((0, 1), (2, 3))
        got = {}

        def keep(mod, args, out, got=got):
            got[mod] = out.clone()
        mods = [getattr(b.self_attn, f"{which}_proj") for b in _blocks(hf)]
        _hf_run(hf, clean, [(m, keep, False) for m in mods])
        ref = np.zeros((spec.n_layers, count))
        for li, m in enumerate(mods):
            for h in range(count):
                hook = _proj_hook(slice(h * dh, (h + 1) * dh), got[m])
                ref[li, h] = _metric(_hf_run(hf, corrupted, [(m, hook, False)]).logits, -1, target, foil)
        _assert_close(result.values, ref)


def test_q_sweep_on_gpt2_fused_projection(hf_models, hf_reference):
    model, hf = _load(hf_models, "gpt2"), hf_reference("gpt2")
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    d, dh = model.spec.d_model, model.spec.d_head
    result = model.patch(clean, corrupted, target=target, foil=foil, sweep="v")
    got = {}

    def keep(mod, args, out):
        got[mod] = out.clone()
    mods = [b.attn.c_attn for b in _blocks(hf)]
    _hf_run(hf, clean, [(m, keep, False) for m in mods])
    ref = np.zeros(result.values.shape)
    for li, m in enumerate(mods):
        for h in range(model.spec.n_heads):
            hook = _proj_hook(slice(2 * d + h * dh, 2 * d + (h + 1) * dh), got[m])
            ref[li, h] = _metric(_hf_run(hf, corrupted, [(m, hook, False)]).logits, -1, target, foil)
    _assert_close(result.values, ref)


def test_position_sweeps_equal_hooked_hf(hf_models, hf_reference):
    """attn_out, mlp_out (one position of a sublayer's output) and heads_by_position (one head at one position)."""
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    t, dh = len(clean), model.spec.d_head
    blocks = _blocks(hf)
    for sweep, mods in (("attn_out", [b.self_attn.o_proj for b in blocks]), ("mlp_out", [b.mlp for b in blocks])):
        got = {}

        def keep(mod, args, out, got=got):
            got[mod] = out.clone()
        _hf_run(hf, clean, [(m, keep, False) for m in mods])
        result = model.patch(clean, corrupted, target=target, foil=foil, sweep=sweep)
        ref = np.zeros((model.spec.n_layers, t))
        for li, m in enumerate(mods):
            for p in range(t):
                def hook(mod, args, out, p=p, m=m):
                    out = out.clone()
                    out[:, p] = got[m][:, p]
                    return out
                ref[li, p] = _metric(_hf_run(hf, corrupted, [(m, hook, False)]).logits, -1, target, foil)
        _assert_close(result.values, ref)
    _, clean_z = _capture_o_inputs(hf, clean)
    result = model.patch(clean, corrupted, target=target, foil=foil, sweep="heads_by_position")
    assert result.values.shape == (model.spec.n_layers, model.spec.n_heads, t)
    for li, block in enumerate(blocks):
        for h in range(model.spec.n_heads):
            for p in (2, 3, 7, t - 1):
                def fn(x, li=li, h=h, p=p):
                    x[:, p, h * dh:(h + 1) * dh] = clean_z[li][:, p, h * dh:(h + 1) * dh]
                    return x
                ref_v = _metric(_hf_run(hf, corrupted, [(_o_proj(block), _pre_replace(fn), True)]).logits, -1,
                                target, foil)
                _assert_close(result.values[li, h, p], ref_v)


def test_sweep_progress_cancel_and_refusals(hf_models):
    model = _load(hf_models, "gpt2")
    clean, corrupted = _texts(model)
    seen = []
    full = model.patch(clean, corrupted, target=5, foil=6, sweep="heads_by_position",
                       progress=lambda done, total: seen.append((done, total)))
    assert seen[-1][0] == seen[-1][1] == full.values.size
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 1
    part = model.patch(clean, corrupted, target=5, foil=6, sweep="heads_by_position", cancel=cancel)
    assert not part.completed and np.isnan(part.values).any()
    done = ~np.isnan(part.values)
    np.testing.assert_array_equal(part.values[done], full.values[done])
    with pytest.raises(ValueError, match="same number of tokens"):
        model.patch(clean, corrupted[:-1], target=5, sweep="heads")
    with pytest.raises(ValueError, match="sweep"):
        model.patch(clean, corrupted, target=5, sweep="neurons")
    with pytest.raises(ValueError, match="target"):
        model.patch(clean, corrupted, target=10**6, sweep="heads")
    with pytest.raises(ValueError, match="position"):
        model.patch(clean, corrupted, target=5, position=len(clean), sweep="heads")


def test_same_metric_gives_nan_with_a_warning(hf_models):
    model = _load(hf_models, "gpt2")
    clean, _ = _texts(model)
    result = model.patch(clean, clean, target=5, foil=6, sweep="resid")
    assert result.clean == result.corrupted
    assert np.isnan(result.restored).all() and "undefined" in (result.warning or "")
    assert result.to_dict()["restored"][0][0] is None
    path = model.path_patch(clean, clean, senders=[(0, 0)], receivers=[(1, 0, "k")], target=5, foil=6)
    assert path.value == pytest.approx(path.corrupted, rel=1e-5) and np.isnan(path.restored) and path.warning


def test_path_patch_direct_path_equals_hand_computation(hf_models, hf_reference):
    """Senders in layer 0, a receiver's query in layer 1: its q input is q_proj(norm(corrupted stream + the
    senders' clean − corrupted result)), the rest of the corrupted run as it is; the reference builds that input
    from HF's own hidden states and o_proj weights, then replaces the receiver's q_proj slice in a hooked run."""
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    dh = model.spec.d_head
    senders, receiver = [(0, 1), (0, 3)], (1, 2, "q")
    result = model.path_patch(clean, corrupted, senders=senders, receivers=[receiver], target=target, foil=foil)
    _, z_clean = _capture_o_inputs(hf, clean)
    x_out, z_corr = _capture_o_inputs(hf, corrupted)
    block0, block1 = _blocks(hf)[0], _blocks(hf)[1]
    w_o = block0.self_attn.o_proj.weight  # (d_model, H·d_head)
    stream = x_out.hidden_states[1].clone()  # entering layer 1 in the corrupted run
    for _, h in senders:
        sl = slice(h * dh, (h + 1) * dh)
        stream += (z_clean[0][..., sl] - z_corr[0][..., sl]) @ w_o[:, sl].T
    with torch.no_grad():
        q_in = block1.self_attn.q_proj(block1.input_layernorm(stream))
    h = receiver[1]
    hook = _proj_hook(slice(h * dh, (h + 1) * dh), q_in)
    ref = _metric(_hf_run(hf, corrupted, [(block1.self_attn.q_proj, hook, False)]).logits, -1, target, foil)
    _assert_close(result.value, ref)
    assert result.restored == pytest.approx((ref - result.corrupted) / (result.clean - result.corrupted), rel=1e-3)
    with pytest.raises(ValueError, match="no sender is before it"):
        model.path_patch(clean, corrupted, senders=[(1, 0)], receivers=[(1, 2, "q")], target=target)
    with pytest.raises(ValueError, match="q', 'k' or 'v'"):
        model.path_patch(clean, corrupted, senders=[(0, 0)], receivers=[(1, 2, "z")], target=target)


def test_path_patch_through_mlps_equals_hooked_hf(hf_models, hf_reference):
    """Wang et al.'s own definition (``through_mlps=True``): the corrupted run with the senders' z clean and MLP 0
    recomputed gives the stream entering layer 1 (HF: a hooked corrupted run, its hidden_states[1]); the receiver's
    key input is k_proj(norm(that stream)), put into a second corrupted run in place of its k_proj slice."""
    model, hf = _load(hf_models, "llama"), hf_reference("llama")
    clean, corrupted = _texts(model)
    target, foil = _target_foil(hf, clean, corrupted)
    dh = model.spec.d_head
    senders, receiver = [(0, 0), (0, 2)], (1, 1, "k")  # k head 1 serves query heads 2 and 3
    result = model.path_patch(clean, corrupted, senders=senders, receivers=[receiver], target=target, foil=foil,
                              through_mlps=True)
    _, z_clean = _capture_o_inputs(hf, clean)
    block0, block1 = _blocks(hf)[0], _blocks(hf)[1]

    def senders_clean(x):
        for _, h in senders:
            x[..., h * dh:(h + 1) * dh] = z_clean[0][..., h * dh:(h + 1) * dh]
        return x
    stream = _hf_run(hf, corrupted, [(_o_proj(block0), _pre_replace(senders_clean), True)]).hidden_states[1]
    with torch.no_grad():
        k_in = block1.self_attn.k_proj(block1.input_layernorm(stream))
    hook = _proj_hook(slice(receiver[1] * dh, (receiver[1] + 1) * dh), k_in)
    ref = _metric(_hf_run(hf, corrupted, [(block1.self_attn.k_proj, hook, False)]).logits, -1, target, foil)
    _assert_close(result.value, ref)
    assert result.feeds[receiver] == (2, 3) and result.through_mlps
    direct = model.path_patch(clean, corrupted, senders=senders, receivers=[receiver], target=target, foil=foil)
    assert direct.value != result.value  # MLP 0 recomputing is a different path set
