"""Head detectors against the same formulas on transformers' attentions; exact heads score 1.0; this app's induction
model has its induction head in layer 2, and switching it off breaks in-context copying."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from attention_core.phenomena import (  # noqa: E402
    KINDS,
    ablate,
    ablation_scan,
    all_head_scores,
    head_scores,
    repeated_tokens,
    score_attention,
)
from tests.tolerance import assert_close


def _formula(kind, att, seq_len, offset):
    """The detector definitions written out query by query (batch, layers, heads, n, n) -> (layers, heads)."""
    n = att.shape[-1]
    pairs = []
    for i in range(n):
        second = i >= offset + seq_len
        target = {"previous-token": i - 1 if i >= 1 else None, "first-token": 0 if i >= 1 else None,
                  "duplicate-token": i - seq_len if second else None,
                  "induction": i - seq_len + 1 if second else None}[kind]
        if target is not None:
            pairs.append(att[..., i, target])
    return np.mean(pairs, axis=0).mean(axis=0)


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neo", "gpt_neox"])
def test_detectors_equal_the_formula_on_transformers_attentions(hf_models, hf_reference, name):
    model = load_pretrained(hf_models[name])
    scores = all_head_scores(model, seq_len=8, seed=3, batch=2)
    ids = scores["induction"].ids
    offset = 1 if model.spec.bos_token_id is not None else 0
    assert ids.shape == (2, offset + 16) and (offset == 0 or np.all(ids[:, 0] == model.spec.bos_token_id))
    np.testing.assert_array_equal(ids[:, offset:offset + 8], ids[:, offset + 8:])
    with torch.no_grad():
        out = hf_reference(name)(torch.as_tensor(ids), output_attentions=True)
    att = torch.stack(out.attentions, dim=1).numpy()  # (batch, layers, heads, n, n)
    for kind in KINDS:
        expect = _formula(kind, att, 8, offset)
        assert_close(scores[kind].scores, expect)
        one = head_scores(model, kind, seq_len=8, seed=3, batch=2)
        assert_close(one.scores, scores[kind].scores)
        assert one.kind == kind and one.threshold == 0.4 and one.scores.shape == (2, 4)


def _exact(kind, n, seq_len, offset):
    a = np.zeros((n, n))
    for i in range(n):
        a[i, 0] = 1.0  # every query's weight sits somewhere; overwritten below where the pattern has a key
        second = i >= offset + seq_len
        key = {"previous-token": i - 1, "first-token": 0, "duplicate-token": i - seq_len if second else 0,
               "induction": i - seq_len + 1 if second else 0}[kind]
        if key >= 0 and (kind in ("previous-token", "first-token") or second):
            a[i] = 0.0
            a[i, key] = 1.0
    return a


@pytest.mark.parametrize("offset", [0, 1])
def test_a_head_built_to_do_exactly_that_scores_one(offset):
    seq_len, n = 6, offset + 12
    for kind in KINDS:
        att = np.full((2, 3, n, n), 0.0)
        att[1, 2] = _exact(kind, n, seq_len, offset)  # layer 1, head 2 does it; the rest look at position 0..
        att[0, 0] = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # uniform causal
        scores = score_attention(kind, att, seq_len, offset)
        assert scores[1, 2] == pytest.approx(1.0)
        others = np.delete(scores.ravel(), 1 * 3 + 2)
        assert kind == "first-token" or others.max() < 1.0
    uniform = score_attention("first-token", np.tril(np.ones((1, 1, 12, 12))) / np.arange(1, 13)[:, None], 6, 0)
    assert uniform[0, 0] == pytest.approx(np.mean(1 / np.arange(2, 13)))
    with pytest.raises(ValueError, match="unknown kind"):
        score_attention("copying", att, seq_len, offset)
    with pytest.raises(ValueError, match="do not fit"):
        score_attention("induction", att, seq_len + 1, offset)


def test_head_scores_through_a_model_whose_attention_is_set_by_hand(hf_models, monkeypatch):
    """The whole pipeline (probe ids, the model's records, scoring, heads_above) on a model whose layer 1 head 3
    attends exactly to the induction key."""
    from attention_core.phenomena import detect

    model = load_pretrained(hf_models["gpt2"])
    real = detect.probe_attentions

    def patched(model_, ids):
        att = real(model_, ids)
        att[:, 1, 3] = _exact("induction", ids.shape[1], 5, 1)
        return att

    monkeypatch.setattr(detect, "probe_attentions", patched)
    scores = head_scores(model, "induction", seq_len=5)
    assert scores.scores[1, 3] == pytest.approx(1.0) and scores.best() == (1, 3)
    assert scores.heads_above()[0] == (1, 3) and all(scores.scores[p] > 0.4 for p in scores.heads_above())
    assert scores.to_json()["heads_above"][0] == [1, 3]


def test_repeated_tokens_and_seq_len_limits(hf_models, own_model_dir):
    llama = load_pretrained(hf_models["llama"])
    rep = repeated_tokens(llama, 10, seed=1, batch=3)
    assert rep.ids.shape == (3, 21) and np.all(rep.ids[:, 0] == 1) and rep.losses.shape == (3, 20)
    assert rep.first_half_loss == pytest.approx(rep.losses[:, 0:10].mean())
    assert rep.second_half_loss == pytest.approx(rep.losses[:, 10:].mean())
    with pytest.raises(ValueError, match="does not fit"):
        repeated_tokens(llama, 40)  # BOS + 80 > 64 positions
    own = load_pretrained(own_model_dir)
    assert head_scores(own, "induction").seq_len == 5  # 12 positions, the last one untrained: S = 5
    with pytest.raises(ValueError, match="2 to 5"):
        head_scores(own, "induction", seq_len=6)
    own_rep = repeated_tokens(own, seed=0, batch=16)
    assert own_rep.ids.shape == (16, 10) and own_rep.ids.min() >= 2  # no PAD, no SEP
    assert own_rep.second_half_loss < 0.5 * own_rep.first_half_loss  # it copies in context


def test_the_app_induction_model_has_its_induction_head_in_layer_2(own_model_dir):
    model = load_pretrained(own_model_dir)
    scores = head_scores(model, "induction", batch=16)
    layer, head = scores.best()
    assert layer == 1 and scores.scores[layer, head] > 0.4  # 0-based: the app's "layer 2"
    prev = head_scores(model, "previous-token", batch=16)
    assert prev.scores[0].max() > prev.scores[1].max()  # layer 1 does the previous-token work
    # Its four layer-2 heads are all induction heads, each enough alone: with the other three kept off, the one
    # left carries the circuit, and switching it off raises the repeat's loss more than any other head does.
    twins = [(1, h) for h in range(4) if h != head]
    probe = [5, 9, 3, 12, 5, 9, 3, 12, 5, 9]
    scan = ablation_scan(model, probe, seed=0, batch=16, also_off=twins)
    assert np.isnan(scan.repeat_change[1, [h for h in range(4) if h != head]]).all()
    measured = scan.repeat_change[~np.isnan(scan.repeat_change)]
    assert scan.repeat_change[layer, head] == measured.max() and measured.max() > 1.0
    single = ablate(model, probe, [(layer, head)], seed=0, batch=16, also_off=twins)
    assert single.repeat_change == pytest.approx(scan.repeat_change[layer, head], abs=1e-5)
    both = ablate(model, probe, [(1, h) for h in range(4)], "mean", batch=16)
    assert both.repeat_change > 1.0 and both.to_json()["how"] == "mean"


def test_scan_progress_cancel_and_json(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    seen = []
    scan = ablation_scan(model, "The quick brown fox", seq_len=6, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 8) for i in range(1, 9)] and scan.completed
    assert np.isfinite(scan.text_change).all() and scan.text_change.shape == (2, 4)
    stop = iter([False, False, False, True])
    part = ablation_scan(model, "The quick brown fox", "mean", seq_len=6, cancel=lambda: next(stop))
    assert not part.completed and np.isfinite(part.text_change).sum() == 3
    assert part.to_json()["text_change"][1] == [None] * 4
    with pytest.raises(ValueError, match="how must be 'zero' or 'mean'"):
        ablate(model, "The quick", [(0, 0)], how="resample")
    with pytest.raises(ValueError, match="no layer 2 head 0"):
        ablate(model, "The quick", [(2, 0)])


def test_gpt2_small_has_the_literatures_heads_where_it_is_cached():
    """Runs only where GPT-2 small is already in the local Hugging Face cache (never downloads): its induction heads
    are the literature's (5.1, 5.5, 6.9, 7.2, 7.10 in TransformerLens' numbering, scores ~0.8-0.9) and 4.11 is a
    previous-token head."""
    from pathlib import Path

    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download("gpt2", local_files_only=True,
                                   allow_patterns=["config.json", "model.safetensors", "tokenizer.json"])
    except Exception:
        pytest.skip("GPT-2 small is not in the local Hugging Face cache")
    if not (Path(folder) / "model.safetensors").is_file() or not (Path(folder) / "tokenizer.json").is_file():
        pytest.skip("the cached GPT-2 lacks model.safetensors or tokenizer.json")
    from attention_core.phenomena import head_scores
    from attention_core.pretrained import load_pretrained

    model = load_pretrained(folder, threads=1)
    induction = head_scores(model, "induction")
    found = set(induction.heads_above())
    assert {(5, 1), (5, 5), (6, 9), (7, 2), (7, 10)} <= found, sorted(found)
    assert min(induction.scores[h] for h in [(5, 1), (5, 5), (6, 9), (7, 2), (7, 10)]) > 0.6
    assert (4, 11) in set(head_scores(model, "previous-token").heads_above())
