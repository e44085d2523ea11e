"""The logit lens and direct logit attribution against transformers' eager models.

Lens: every half-layer row equals ``lm_head(norm(h))`` of Hugging Face's own states (``output_hidden_states`` for
the points between layers, a forward hook on the attention module, or on the post-attention norm where the family
normalises the attention's output, for the points after attention), Gemma 2's final soft-cap and BERT's masked-LM
head included; the last row equals the logits. Attribution: the terms add up to the total in float64, the total to
the model's own logit difference, and each head's and MLP's term equals an independent computation from Hugging
Face's modules (the head's slice of ``o_proj``'s input through ``o_proj`` without bias, a post-attention norm and
the final norm frozen at their clean scales, dotted with ``W_U[target] − W_U[foil]``). The models are float32 (our
loader offers float32 and bfloat16): activations are read in float32 and the terms summed in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from family_models import build, reference  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from tests.tolerance import assert_close  # noqa: E402

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"
DECODERS = ("gpt2", "llama", "gpt_neox", "gpt_neox-sequential", "gpt_neo", "olmo2", "gemma2")
# per family: the layers, the module whose output is what the attention adds (before the residual add), its output
# projection, the module whose output is what the MLP adds, the final norm
HF = {
    "gpt2": (lambda m: m.transformer.h, "attn", "attn.c_proj", "mlp", lambda m: m.transformer.ln_f),
    "gpt_neo": (lambda m: m.transformer.h, "attn", "attn.attention.out_proj", "mlp", lambda m: m.transformer.ln_f),
    "llama": (lambda m: m.model.layers, "self_attn", "self_attn.o_proj", "mlp", lambda m: m.model.norm),
    "gpt_neox": (lambda m: m.gpt_neox.layers, "attention", "attention.dense", "mlp",
                 lambda m: m.gpt_neox.final_layer_norm),
    "olmo2": (lambda m: m.model.layers, "post_attention_layernorm", "self_attn.o_proj", "post_feedforward_layernorm",
              lambda m: m.model.norm),
    "gemma2": (lambda m: m.model.layers, "post_attention_layernorm", "self_attn.o_proj",
               "post_feedforward_layernorm", lambda m: m.model.norm),
}


@pytest.fixture(scope="module")
def folders(hf_models, tmp_path_factory):
    return {**{n: hf_models[n] for n in ("gpt2", "llama", "gpt_neox", "gpt_neox-sequential", "gpt_neo")},
            **build(tmp_path_factory.mktemp("lens"), ("olmo2", "gemma2", "bert"))}


def _family(name: str) -> str:
    return name.split("-")[0]


def _hf_run(ref, family: str, ids: np.ndarray) -> dict:
    """One eager run with hooks: hidden states, per layer what the attention adds, the o-projection's input and
    output, what the MLP adds, and the final norm's input."""
    layers_of, attn, o_proj, mlp, final = HF[family]
    got: dict = {"attn": {}, "o_in": {}, "o_out": {}, "mlp": {}}
    handles = []

    def keep(kind, li, pre=False):
        def hook(module, args, output=None):
            value = args[0] if pre else output
            got[kind][li] = (value[0] if isinstance(value, tuple) else value)[0].detach().double()
        return hook

    for li, layer in enumerate(layers_of(ref)):
        handles += [layer.get_submodule(attn).register_forward_hook(keep("attn", li)),
                    layer.get_submodule(o_proj).register_forward_pre_hook(keep("o_in", li, pre=True)),
                    layer.get_submodule(o_proj).register_forward_hook(keep("o_out", li)),
                    layer.get_submodule(mlp).register_forward_hook(keep("mlp", li))]
    handles.append(final(ref).register_forward_pre_hook(
        lambda module, args: got.__setitem__("final_in", args[0][0].detach().double())))
    try:
        with torch.no_grad():
            out = ref(torch.as_tensor(ids)[None], output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    got["hidden"] = [h[0].double() for h in out.hidden_states]
    got["logits"] = out.logits[0].double()
    return got


def _unembed(ref, family: str, h: torch.Tensor) -> np.ndarray:
    """Hugging Face's final norm, unembedding and final soft-cap on states (N, d)."""
    with torch.no_grad():
        z = ref.get_output_embeddings()(HF[family][4](ref)(h.float())).double()
        cap = getattr(ref.config, "final_logit_softcapping", None)
        return (z if cap is None else torch.tanh(z / cap) * cap).numpy()


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("position", [-1, 3])
def test_lens_rows_equal_transformers(folders, name, position):
    model = load_pretrained(folders[name])
    lens = model.logit_lens(TEXT, position=position, top_k=5)
    n = model.spec.n_layers
    assert lens.labels == ("embed", *(f"{k} {i}" for i in range(n) for k in ("attn", "mlp")))
    assert lens.logits.shape == (2 * n + 1, model.spec.vocab_size) and lens.logits.dtype == np.float32
    ref, family = reference(folders[name]), _family(name)
    hf = _hf_run(ref, family, lens.ids)
    p = lens.position
    states = [hf["hidden"][0][p]]
    for li in range(n):
        states.append(hf["hidden"][li][p] + hf["attn"][li][p])  # after the attention's add (NeoX: its share)
        if li < n - 1:
            states.append(hf["hidden"][li + 1][p])
    expected = _unembed(ref, family, torch.stack(states))
    assert_close(lens.logits[:-1], expected, dtype=np.float32)
    assert_close(lens.logits[-1], hf["logits"][p].numpy(), dtype=np.float32)
    own = model.trace(TEXT).logits[p]
    assert_close(lens.logits[-1], own, dtype=np.float32)
    probs = lens.probs()
    for row, top in zip(probs, lens.top):
        assert len(top) == 5 and [t[0] for t in top] == np.argsort(-row, kind="stable")[:5].tolist()
        assert [t[2] for t in top] == pytest.approx(row[[t[0] for t in top]].tolist(), rel=1e-12)
        assert [t[1] for t in top] == model.token_strings([t[0] for t in top])
    final_top = lens.top[-1][0][0]
    assert lens.rank_of(final_top)[-1] == 0
    ranks = lens.rank_of(5)
    assert ranks.tolist() == [(row > row[5]).sum() for row in lens.logits]
    assert lens.probs_of(5).tolist() == pytest.approx(probs[:, 5].tolist(), rel=1e-12)


def test_lens_on_an_encoder_reads_the_post_ln_states_through_its_masked_lm_head(folders):
    model = load_pretrained(folders["bert"])
    text = "the quick [MASK] fox"
    lens = model.logit_lens(text, position=3)
    assert lens.prediction == "masked" and lens.tokens[3] == "[MASK]"
    ref = reference(folders["bert"], encoder=True)
    mids = {}
    handles = [layer.attention.register_forward_hook(lambda mod, args, out, li=li: mids.__setitem__(li, out[0][0]))
               for li, layer in enumerate(ref.bert.encoder.layer)]
    with torch.no_grad():
        out = ref(torch.as_tensor(lens.ids)[None], output_hidden_states=True)
        for h in handles:
            h.remove()
        states = [out.hidden_states[0][0, 3]]
        for li in range(model.spec.n_layers):
            states += [mids[li][3], out.hidden_states[li + 1][0, 3]]
        expected = ref.cls(torch.stack(states)).numpy()
    assert_close(lens.logits, expected, dtype=np.float32)
    assert_close(lens.logits[-1], out.logits[0, 3].numpy(), dtype=np.float32)


def _frozen(norm: torch.nn.Module, clean: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The norm's linear part with its scale fixed at ``clean`` (float64), written from Hugging Face's module."""
    eps = getattr(norm, "eps", None) or getattr(norm, "variance_epsilon", None)
    w = norm.weight.double()
    if isinstance(norm, torch.nn.LayerNorm):
        sigma = torch.sqrt(clean.var(unbiased=False) + eps)
        return (v - v.mean(-1, keepdim=True)) / sigma * w
    gain = 1.0 + w if "Gemma" in type(norm).__name__ else w
    return v / torch.sqrt(clean.pow(2).mean() + eps) * gain


def _independent_terms(ref, family: str, hf: dict, p: int, direction: torch.Tensor, heads: int):
    """(heads (L, H), mlps (L,), embed) from Hugging Face's activations and modules."""
    layers_of, _, o_proj, _, final = HF[family]
    final_norm, x = final(ref), hf["final_in"][p]

    def through_final(v):
        return _frozen(final_norm, x, v) @ direction

    head_terms, mlp_terms = [], []
    for li, layer in enumerate(layers_of(ref)):
        o = layer.get_submodule(o_proj)
        w = o.weight.double()
        w = w.T if isinstance(o, torch.nn.Linear) else w  # Conv1D (GPT-2) stores [in, out]
        z = hf["o_in"][li][p]
        dh = z.shape[0] // heads
        results = torch.stack([z[h * dh:(h + 1) * dh] @ w[h * dh:(h + 1) * dh] for h in range(heads)])
        if family in ("olmo2", "gemma2"):  # the post-attention norm, frozen at o_proj's clean output
            results = _frozen(layer.post_attention_layernorm, hf["o_out"][li][p], results)
        head_terms.append(through_final(results).numpy())
        mlp_terms.append(float(through_final(hf["mlp"][li][p])))
    return np.array(head_terms), np.array(mlp_terms), float(through_final(hf["hidden"][0][p]))


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("foil", [None, 7])
def test_attribution_adds_up_and_each_term_equals_an_independent_one(folders, name, foil):
    model = load_pretrained(folders[name])
    target = 11
    a = model.attribute(TEXT, target=target, foil=foil, position=-2)
    n, h = model.spec.n_layers, model.spec.n_heads
    assert a.heads.shape == (n, h) and a.mlps.shape == (n,) and a.heads.dtype == np.float64
    parts = np.array([a.embed, a.biases, *a.heads.ravel(), *a.mlps])
    largest = float(np.abs(parts).max())
    summed = a.embed + a.heads.sum() + a.mlps.sum() + a.biases
    assert abs(summed - a.total) <= 1e-12 * largest  # float64: the terms are the total's own parts (measured 2e-15)
    # the model's own logit difference, from its float32 run: its rounding, 64 float32 ulps of the largest term
    # (7.6e-6 of it; measured up to 7.8e-7 over every position of these models)
    assert_close(a.total, a.actual, dtype=np.float32, scale=largest)
    ref, family = reference(folders[name]), _family(name)
    hf = _hf_run(ref, family, a.ids)
    p = a.position
    w_u = ref.get_output_embeddings().weight.double()
    direction = w_u[target] - (0 if foil is None else w_u[foil])
    with torch.no_grad():
        heads, mlps, embed = _independent_terms(ref, family, hf, p, direction, h)
        pre_cap = (_frozen(HF[family][4](ref), hf["final_in"][p], hf["final_in"][p]) @ direction).item()
    assert_close(a.heads, heads, dtype=np.float32, scale=largest)
    assert_close(a.mlps, mlps, dtype=np.float32, scale=largest)
    assert_close(a.embed, embed, dtype=np.float32, scale=largest)
    if family == "gemma2":  # the cap is not linear: the terms split the logits before it
        assert a.capped is not None and "soft-cap" in a.note
        logits = hf["logits"][p]
        assert a.capped == pytest.approx(float(logits[target] - (0 if foil is None else logits[foil])), abs=1e-5)
        assert_close(a.actual, pre_cap, dtype=np.float32, scale=largest)
    else:
        assert a.capped is None and a.note == ""
        logits = hf["logits"][p]
        assert_close(a.actual, float(logits[target] - (0 if foil is None else logits[foil])), dtype=np.float32,
                     scale=largest)
    names = dict(a.terms())
    assert len(names) == 2 + n * h + n and names["0.1"] == a.heads[0, 1] and names["mlp 1"] == a.mlps[1]


def test_biases_hold_w_o_and_final_norm_biases(folders):
    """GPT-2 (W_O and the final LayerNorm have biases) against Llama (none): the biases term is exactly those."""
    gpt2 = load_pretrained(folders["gpt2"])
    a = gpt2.attribute(TEXT, target=11, foil=7)
    ref = reference(folders["gpt2"])
    hf = _hf_run(ref, "gpt2", a.ids)
    w_u = ref.get_output_embeddings().weight.double()
    direction = w_u[11] - w_u[7]
    ln_f, x = ref.transformer.ln_f, hf["final_in"][a.position]
    with torch.no_grad():
        expected = float(ln_f.bias.double() @ direction)
        for layer in ref.transformer.h:
            expected += float(_frozen(ln_f, x, layer.attn.c_proj.bias.double()) @ direction)
    assert a.biases == pytest.approx(expected, rel=1e-6)
    assert load_pretrained(folders["llama"]).attribute(TEXT, target=11).biases == 0.0


def test_targets_as_strings_and_refusals(folders):
    model = load_pretrained(folders["llama"])  # its tokenizer adds <s> to every text: not part of a target
    ids = model.encode(" brown")
    assert ids[0] == 1 and len(ids) == 2
    by_id = model.attribute(TEXT, target=ids[1])
    for given in (" brown", "␣brown"):
        assert model.attribute(TEXT, target=given).total == by_id.total
    lens = model.logit_lens(TEXT)
    assert by_id.target_token == "␣brown" and lens.rank_of(" brown").tolist() == lens.rank_of(ids[1]).tolist()
    assert model.attribute(TEXT, target="<s>").target == 1  # a special token written on purpose is kept
    with pytest.raises(ValueError, match="target: ' fox' is 2 tokens \\('␣fo', 'x'\\), not one"):
        model.attribute(TEXT, target=" fox")
    with pytest.raises(ValueError, match="foil: token id 400 is outside the vocabulary"):
        model.attribute(TEXT, target=5, foil=400)
    with pytest.raises(ValueError, match="foil: the same token as the target"):
        model.attribute(TEXT, target=5, foil=5)
    with pytest.raises(ValueError, match="target: give a token id or a token string"):
        model.attribute(TEXT, target=1.5)
    with pytest.raises(ValueError, match="target: an empty string"):
        model.attribute(TEXT, target="")
    n = len(model.encode(TEXT))
    with pytest.raises(ValueError, match=f"position {n} is outside the text's {n} tokens"):
        model.attribute(TEXT, target=5, position=n)
    with pytest.raises(ValueError, match="position"):
        model.logit_lens(TEXT, position=-n - 1)
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        model.logit_lens(TEXT, top_k=0)
    with pytest.raises(ValueError, match="token: token id -1 is outside"):
        model.logit_lens(TEXT).rank_of(-1)
    bert = load_pretrained(folders["bert"])
    with pytest.raises(ValueError, match="bert's post-LN blocks renormalise .* masked-LM head"):
        bert.attribute("the quick [MASK] fox", target=5)


def test_attribution_adds_up_on_this_apps_own_model(own_model_dir):
    """The induction model this app trains (LayerNorm, learned positions, W_O biases): the same identity."""
    model = load_pretrained(own_model_dir)
    text = "5 6 7 8 5 6 7"
    a = model.attribute(text, target="8", foil=5)
    largest = float(np.abs([a.embed, a.biases, *a.heads.ravel(), *a.mlps]).max())
    assert abs(a.embed + a.heads.sum() + a.mlps.sum() + a.biases - a.total) <= 1e-12 * largest
    assert_close(a.total, a.actual, dtype=np.float32, scale=largest)
    assert a.target == 8 and a.foil == 5 and a.biases != 0.0
    lens = model.logit_lens(text)
    assert_close(lens.logits[-1], model.trace(text).logits[-1], dtype=np.float32)
