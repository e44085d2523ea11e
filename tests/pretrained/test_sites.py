"""Named sites of the forward pass (``attention_core.pretrained.sites``): every site is readable on every family we
open, with the documented shapes; what is read equals transformers (hidden states, attentions, a forward hook on the
q/k/v projections and on the output projection's input); replacing works (a site given its own clean value changes
nothing, zeros in ``z.L.h`` are the ``ablate`` of that head, another run's ``resid_pre`` gives that run's logits, a
replaced q is rotated after it is put in); names and shapes are checked.

The forward pass runs in float32 only (float32 and bfloat16 are the dtypes it loads), so every "equal" here is
float32 with the rule of ``tests/tolerance.py`` (64 ulps of the largest magnitude compared), and bitwise where the
same operations run on the same numbers.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from family_models import DECODERS, ENCODERS, LONG_TEXT, build, reference  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.positions import rotate  # noqa: E402
from attention_core.pretrained import SITE_KINDS, Hooks, parse_site, site_names, site_shape  # noqa: E402
from tests.tolerance import assert_close  # noqa: E402

OLDER = ("gpt2", "gpt2-untied", "llama", "llama-tied", "gpt_neox", "gpt_neox-sequential", "gpt_neo", "qwen2",
         "mistral")
FAMILIES = OLDER + DECODERS + ENCODERS
TEXT = "The quick brown fox and Mary went to the café. The quick brown fox jumps"
OTHER = "A lazy dog and John went to the store. The lazy brown dog jumps over it"
# transformers' names of the q, k, v projections and of W_O (whose input is every head's z side by side), for the
# families whose q and k leave the projection as the attention uses them (no q/k norm after it)
PROJECTIONS = {
    "llama": (r"layers\.(\d+)\.self_attn\.([qkv])_proj$", r"layers\.(\d+)\.self_attn\.o_proj$"),
    "mistral": (r"layers\.(\d+)\.self_attn\.([qkv])_proj$", r"layers\.(\d+)\.self_attn\.o_proj$"),
    "qwen2": (r"layers\.(\d+)\.self_attn\.([qkv])_proj$", r"layers\.(\d+)\.self_attn\.o_proj$"),
    "gemma2": (r"layers\.(\d+)\.self_attn\.([qkv])_proj$", r"layers\.(\d+)\.self_attn\.o_proj$"),
    "gpt2": (r"h\.(\d+)\.attn\.c_attn$", r"h\.(\d+)\.attn\.c_proj$"),
    "bert": (r"layer\.(\d+)\.attention\.self\.(query|key|value)$", r"layer\.(\d+)\.attention\.output\.dense$"),
}


@pytest.fixture(scope="module")
def folders(hf_models, tmp_path_factory):
    out = {name: hf_models[name] for name in OLDER}
    out.update(build(tmp_path_factory.mktemp("site_families"), DECODERS + ENCODERS))
    return out


@pytest.fixture(scope="module")
def models(folders):
    cache: dict = {}

    def get(name):
        if name not in cache:
            cache[name] = load_pretrained(folders[name])
        return cache[name]

    return get


def _text(name: str) -> str:
    return LONG_TEXT if name in DECODERS or name in ENCODERS else TEXT


def _hf(folders, name, ids, hooks=None):
    """transformers' eager run: (logits, hidden states, attentions), with forward hooks ({module regex: fn})."""
    ref = reference(folders[name], encoder=name in ENCODERS)
    handles = []
    for pattern, (kind, fn) in (hooks or {}).items():
        for mod_name, module in ref.named_modules():
            m = re.search(pattern, mod_name)
            if m:
                register = module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
                handles.append(register(lambda mod, args, *rest, m=m, fn=fn: fn(m, args, *rest)))
    try:
        with torch.no_grad():
            out = ref(torch.as_tensor(ids)[None], output_hidden_states=True, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    return (out.logits[0].numpy(), [h[0].numpy() for h in out.hidden_states],
            [a[0].numpy() for a in out.attentions])


# --- names


def test_names_in_the_order_the_pass_meets_them(models):
    model = models("llama")
    assert model.sites == site_names(model.spec.n_layers)
    assert model.sites[:10] == tuple(f"{k}.0" for k in SITE_KINDS)
    assert model.sites[10] == "resid_pre.1" and model.sites[-1] == f"resid_post.{model.spec.n_layers - 1}"
    assert parse_site("z.1.3", model.spec) == ("z", 1, 3)
    assert parse_site("k.1.1", model.spec).head == 1  # k/v count key/value heads: 2 here, 4 query heads


@pytest.mark.parametrize("name, problem", [
    ("zz.0", "not a site name"), ("z", "not a site name"), ("z.0.1.2", "not a site name"),
    ("z.x", "whole numbers"), ("z.2", "no layer 2"), ("z.-1", "no layer -1"), ("z.0.4", "no head 4"),
    ("k.0.2", "2 key/value heads"), ("resid_pre.0.1", "has no heads axis"), ("mlp_out.1.0", "has no heads axis"),
])
def test_bad_names_are_refused_naming_the_problem(models, name, problem):
    model = models("llama")  # 2 layers, 4 heads, 2 key/value heads
    with pytest.raises(ValueError, match=problem):
        parse_site(name, model.spec)
    with pytest.raises(ValueError, match=problem):
        model.run_with(TEXT, read=[name])
    with pytest.raises(ValueError, match=problem):
        model.run_with(TEXT, replace={name: np.zeros(3)})


def test_wrong_shapes_are_refused_before_and_while_running(models):
    model = models("llama")
    t = len(model.encode(TEXT))
    with pytest.raises(ValueError, match=r"'z\.1\.2'.*\(3,\).*\(" + str(t) + r", 8\)"):
        model.run_with(TEXT, replace={"z.1.2": np.zeros(3)})
    with pytest.raises(ValueError, match=r"'k\.0'.*\(4, " + str(t) + r", 8\).*\(2, " + str(t) + r", 8\)"):
        model.run_with(TEXT, replace={"k.0": np.zeros((4, t, 8))})  # a query head count where K/V heads belong
    with pytest.raises(ValueError, match=r"'resid_post\.0'.*\(" + str(t) + r",\).*\(" + str(t) + r", 32\)"):
        model.run_with(TEXT, replace={"resid_post.0": lambda x: x[:, 0]})
    with pytest.raises(ValueError, match="replace: expected"):
        model.run_with(TEXT, replace=[("z.0", 0)])
    with pytest.raises(ValueError, match="'z.0'.*a function of the clean value or a tensor"):
        model.forward(model.encode(TEXT), hooks=Hooks(write={"z.0": "zero"}))


# --- reading


@pytest.mark.parametrize("name", FAMILIES)
def test_every_site_is_readable_with_its_shape(models, name):
    model = models(name)
    spec = model.spec
    heads = [f"{k}.{spec.n_layers - 1}.{h}" for k, h in (("q", spec.n_heads - 1), ("k", spec.n_kv_heads - 1),
                                                         ("v", 0), ("pattern", 1), ("z", 2), ("result", 3))]
    run = model.run_with(_text(name), read=[*model.sites, *heads])
    t = len(run.ids)
    plain = model.forward(run.ids).logits[0].numpy()
    assert run.logits.shape == (t, spec.vocab_size)
    assert_close(run.logits, plain)  # reading result computes W_O head by head: the same sum in another order
    for site in (*model.sites, *heads):
        value = run.read[site]
        assert value.dtype == np.float32 and value.shape == site_shape(parse_site(site, spec), spec, t), site
        assert np.isfinite(value).all(), site
    for site in heads:
        kind, layer, head = site.split(".")
        np.testing.assert_array_equal(run.read[site], run.read[f"{kind}.{layer}"][int(head)])
    for layer in range(spec.n_layers - 1):
        np.testing.assert_array_equal(run.read[f"resid_post.{layer}"], run.read[f"resid_pre.{layer + 1}"])
    assert_close(run.read["pattern.0"].sum(-1), 1.0)  # float32 weights: the rule's 64 ulps


@pytest.mark.parametrize("name", FAMILIES)
def test_residual_stream_and_patterns_equal_transformers(folders, models, name):
    model = models(name)
    run = model.run_with(_text(name), read=model.sites)
    logits, hidden, attentions = _hf(folders, name, run.ids)
    layers = model.spec.n_layers
    assert len(hidden) == layers + 1
    assert_close(run.logits, logits)
    assert_close(run.read["resid_pre.0"], hidden[0])
    for layer in range(layers):
        ours = run.read[f"resid_post.{layer}"]
        if layer == layers - 1 and model.weights.final_norm is not None:  # transformers' last state is normalised
            ours = model.weights.final_norm(torch.as_tensor(ours)).numpy()
        assert_close(ours, hidden[layer + 1], err_msg=f"resid_post.{layer}")
        assert_close(run.read[f"pattern.{layer}"], attentions[layer], err_msg=f"pattern.{layer}")


@pytest.mark.parametrize("name", sorted(PROJECTIONS))
def test_q_k_v_and_z_equal_hooks_on_transformers_projections(folders, models, name):
    """q and k before rotation: what the projection returns, split per head (k and v per key/value head); z side
    by side is the input of W_O."""
    model = models(name)
    spec = model.spec
    run = model.run_with(_text(name), read=model.sites)
    t = len(run.ids)
    seen: dict = {}
    qkv_re, o_re = PROJECTIONS[name]

    def projection(m, args, output):
        if len(m.groups()) == 1:  # GPT-2's fused c_attn: [q | k | v]
            for kind, part in zip("qkv", output[0].split(spec.n_heads * spec.d_head, dim=-1)):
                seen[(kind, int(m.group(1)))] = part.numpy()
        else:
            seen[(m.group(2)[0], int(m.group(1)))] = output[0].numpy()

    def o_input(m, args):
        seen[("z", int(m.group(1)))] = args[0][0].numpy()

    _hf(folders, name, run.ids, {qkv_re: ("post", projection), o_re: ("pre", o_input)})
    for layer in range(spec.n_layers):
        for kind in "qkv":
            heads = spec.n_heads if kind == "q" else spec.n_kv_heads
            expected = seen[(kind, layer)].reshape(t, heads, spec.d_head).transpose(1, 0, 2)
            assert_close(run.read[f"{kind}.{layer}"], expected, err_msg=f"{kind}.{layer}")
        z = run.read[f"z.{layer}"].transpose(1, 0, 2).reshape(t, -1)
        assert_close(z, seen[("z", layer)], err_msg=f"z.{layer}")


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neox", "gpt_neo", "qwen2", "bert", "phi3"])
def test_results_sum_to_the_attention_output(models, name):
    """Without a norm after the sublayer, attn_out = Σ_h result_h + W_O's bias; and result_h = z_h W_O^h."""
    model = models(name)
    run = model.run_with(_text(name), read=model.sites)
    for layer in range(model.spec.n_layers):
        o = model.weights.layers[layer].o
        bias = 0.0 if o.bias is None else o.bias.numpy()
        result = run.read[f"result.{layer}"].astype(np.float64)
        assert_close(result.sum(axis=0) + bias, run.read[f"attn_out.{layer}"], dtype=np.float32)
        w = (o.weight if o.in_out else o.weight.T).numpy().astype(np.float64)  # (H·d_head, d_model)
        dh = model.spec.d_head
        for h in range(model.spec.n_heads):
            by_hand = run.read[f"z.{layer}"][h].astype(np.float64) @ w[h * dh:(h + 1) * dh]
            assert_close(result[h], by_hand, dtype=np.float32)


# --- replacing


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neox", "gemma2", "olmo2", "bert"])
def test_a_site_given_its_own_clean_value_changes_nothing(models, name):
    model = models(name)
    text = _text(name)
    layer = model.spec.n_layers - 1
    # reading result runs W_O head by head (the same terms summed in another order): read it on its own
    clean = model.run_with(text, read=[s for s in model.sites if not s.startswith("result")])
    plain = model.forward(clean.ids).logits[0].numpy()
    np.testing.assert_array_equal(clean.logits, plain)
    for kind in SITE_KINDS:
        site = f"{kind}.{layer}"
        value = model.run_with(text, read=[site]).read[site] if kind == "result" else clean.read[site]
        run = model.run_with(text, replace={site: value})
        if kind == "result":
            assert_close(run.logits, plain, err_msg=site)
        else:
            np.testing.assert_array_equal(run.logits, plain, err_msg=site)
        fn = model.run_with(text, replace={site: lambda x: x})
        np.testing.assert_array_equal(fn.logits, run.logits, err_msg=site)


@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "gpt_neox", "gemma2", "bert"])
def test_zeros_in_one_heads_z_are_the_ablation_of_that_head(models, name):
    model = models(name)
    ids = model.encode(_text(name))
    spec = model.spec
    for layer, head in ((0, 1), (spec.n_layers - 1, spec.n_heads - 1)):
        off = model.forward(ids, ablate={(layer, head): "zero"}).logits[0].numpy()
        run = model.run_with(ids, replace={f"z.{layer}.{head}": np.zeros((len(ids), spec.d_head))},
                             read=[f"z.{layer}"])
        np.testing.assert_array_equal(run.logits, off)
        assert not run.read[f"z.{layer}"][head].any() and run.read[f"z.{layer}"].any()
        by_result = model.run_with(ids, replace={f"result.{layer}.{head}": lambda r: 0 * r})
        assert_close(by_result.logits, off)  # result_h = z_h W_O^h: zero when z_h is
    assert np.abs(off - model.forward(ids).logits[0].numpy()).max() > 1e-3  # the head mattered


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neox", "gemma3_text", "bert"])
def test_another_runs_residual_stream_gives_that_runs_logits(models, name):
    model = models(name)
    ids = model.encode(_text(name))
    other = model.encode(OTHER)[:len(ids)]
    other += ids[len(other):]  # same length, other tokens
    assert len(other) == len(ids) and other != ids
    theirs = model.run_with(other, read=[f"resid_pre.{layer}" for layer in range(model.spec.n_layers)])
    for layer in range(model.spec.n_layers):
        site = f"resid_pre.{layer}"
        run = model.run_with(ids, replace={site: theirs.read[site]})  # tokens enter only through the stream
        np.testing.assert_array_equal(run.logits, theirs.logits, err_msg=site)


def test_a_replaced_query_is_rotated_after_it_is_put_in(models):
    """q.L before rotation: the pattern follows softmax(rotate(q)·rotate(k)ᵀ · scale), masked, by hand."""
    model = models("llama")
    spec = model.spec
    ids = model.encode(TEXT)
    t, layer = len(ids), 1
    q = np.random.default_rng(0).normal(size=(spec.n_heads, t, spec.d_head)).astype(np.float32)
    run = model.run_with(ids, replace={f"q.{layer}": q}, read=[f"k.{layer}", f"pattern.{layer}", f"q.{layer}"])
    np.testing.assert_array_equal(run.read[f"q.{layer}"], q)
    theta, _ = spec.rope_of(layer)
    pos = np.arange(t)
    k = rotate(run.read[f"k.{layer}"].astype(np.float64), pos, base=theta)
    for h in range(spec.n_heads):
        scores = rotate(q[h].astype(np.float64), pos, base=theta) @ k[h // spec.kv_group].T * spec.scales[layer]
        scores[np.triu_indices(t, 1)] = -np.inf
        w = np.exp(scores - scores.max(-1, keepdims=True))
        assert_close(run.read[f"pattern.{layer}"][h], w / w.sum(-1, keepdims=True), dtype=np.float32)


def test_a_replaced_pattern_gives_z_as_pattern_times_v(models):
    model = models("llama")  # grouped-query: query head h reads value head h // 2
    spec = model.spec
    ids = model.encode(TEXT)
    t = len(ids)
    uniform = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]
    run = model.run_with(ids, replace={"pattern.0": np.broadcast_to(uniform, (spec.n_heads, t, t))},
                         read=["z.0", "v.0"])
    for h in range(spec.n_heads):
        assert_close(run.read["z.0"][h], uniform @ run.read["v.0"][h // spec.kv_group], dtype=np.float32)


def test_batched_writers_change_only_the_rows_they_touch(models):
    """Inside the pass (``forward(hooks=...)``) a writer gets the batch and may change one row of it."""
    model = models("gpt2")
    ids = model.encode(TEXT)
    other = model.encode(OTHER)[:len(ids)]
    theirs = model.run_with(other, read=["resid_pre.1"])
    patch = torch.as_tensor(theirs.read["resid_pre.1"])

    def second_row(x):
        x = x.clone()
        x[1] = patch
        return x

    hooks = Hooks(read=["z.1.0", "attn_out.0"], write={"resid_pre.1": second_row})
    out = model.forward(np.stack([ids, ids]), hooks=hooks)
    np.testing.assert_array_equal(out.logits[0].numpy(), model.forward(ids).logits[0].numpy())
    np.testing.assert_array_equal(out.logits[1].numpy(), theirs.logits)
    assert hooks.values["z.1.0"].shape == (2, len(ids), model.spec.d_head)
    assert hooks.values["attn_out.0"].shape == (2, len(ids), model.spec.d_model)


def test_bfloat16_reads_are_float32(folders):
    model = load_pretrained(folders["llama"], dtype="bfloat16")
    run = model.run_with(TEXT, read=["z.0", "resid_post.1", "pattern.1"])
    assert all(v.dtype == np.float32 for v in run.read.values())
    zeros = model.run_with(TEXT, replace={"z.0.1": np.zeros((len(run.ids), model.spec.d_head))})
    np.testing.assert_array_equal(zeros.logits, model.forward(run.ids, ablate={(0, 1): "zero"}).logits[0].numpy())


def test_an_overview_cannot_read_a_pattern(models):
    model = models("gpt2")
    with pytest.raises(ValueError, match="pattern"):
        model.forward(model.encode(TEXT), record={"overview"}, hooks=Hooks(read=["pattern.0"]))


@pytest.mark.parametrize("record", ["final", "resid"])
def test_a_record_sees_every_position_when_only_some_logits_are_asked(models, record):
    """Row-skipping (``logit_positions``) runs only the rows the logits need: never when something is recorded."""
    model = models("gpt2")
    ids = model.encode(TEXT)
    whole = model.forward(ids, record={record})
    some = model.forward(ids, record={record}, logit_positions=slice(2, 5))
    for a, b in zip(whole.records[record], some.records[record]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert_close(some.logits, whole.logits[:, 2:5])  # the unembedding of 3 rows or of all: other blocking


def test_a_reader_given_arrays_gets_the_maps_computed_in_them(models):
    """``Hooks.into``: the pass computes pattern and z in the arrays given (a trace's way to keep every map without
    a copy); a replacement at the site lands in them too."""
    model = models("llama")
    ids = model.encode(TEXT)
    t, spec = len(ids), model.spec
    pattern = torch.full((1, spec.n_heads, t, t), float("nan"))
    z = torch.full((1, spec.n_heads, t, spec.d_head), float("nan"))
    hooks = Hooks(read=["pattern.1", "z.1"], write={"z.1.2": torch.zeros(())}, into={"pattern.1": pattern, "z.1": z})
    out = model.forward(ids, hooks=hooks)
    assert hooks.values["pattern.1"].data_ptr() == pattern.data_ptr() and hooks.values["z.1"].data_ptr() == z.data_ptr()
    clean = model.run_with(ids, read=["pattern.1", "z.1"])
    np.testing.assert_array_equal(pattern[0].numpy(), clean.read["pattern.1"])
    np.testing.assert_array_equal(z[0, 2].numpy(), 0.0)
    np.testing.assert_array_equal(z[0, :2].numpy(), clean.read["z.1"][:2])
    np.testing.assert_array_equal(out.logits[0].numpy(), model.forward(ids, ablate={(1, 2): "zero"}).logits[0].numpy())
    with pytest.raises(ValueError, match="only whole pattern and z"):
        model.forward(ids, hooks=Hooks(into={"q.0": torch.empty(1, spec.n_heads, t, spec.d_head)}))
