"""The cheap evaluation (attention_core.tiny.evaluation) gives exactly what token-by-token greedy decoding gives.

References are computed independently here: ``greedy_reverse`` (the one-token-at-a-time decoder), a decoding loop
written in the test, ``ReversalTrainer.evaluate_reference`` (the old evaluation, kept as the slow literal path) and a
step-walking schedule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_core import ReversalTrainer, TinyTransformer, TrainConfig, greedy_reverse
from attention_core.masks import causal_mask
from attention_core.tiny.analysis import head_reversal_scores
from attention_core.tiny.evaluation import evaluate_reversal, evaluation_due, greedy_sequence_correct
from attention_core.tiny.vocab import SEP

SMALL = dict(train_size=256, test_size=96, train_eval_size=32, batch_size=32)


def random_model(seed: int, vocab: int = 9, layers: int = 2, heads: int = 2, d_model: int = 16) -> TinyTransformer:
    torch.manual_seed(seed)
    model = TinyTransformer(vocab, d_model=d_model, num_heads=heads, num_layers=layers, max_seq_len=32)
    with torch.no_grad():  # larger weights than the initialisation: sharper, more varied predictions
        for p in model.parameters():
            p.mul_(3.0)
    return model.eval()


def decode_by_hand(model: TinyTransformer, inputs: torch.Tensor, causal: bool) -> torch.Tensor:
    """One sequence at a time, one token at a time: the definition, written out."""
    out = []
    for row in inputs:
        seq = torch.cat([row, torch.tensor([SEP])]).unsqueeze(0)
        for _ in range(len(row)):
            mask = torch.as_tensor(causal_mask(seq.shape[1])) if causal else None
            with torch.no_grad():
                logits, _ = model(seq, mask)
            seq = torch.cat([seq, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        out.append(seq[0, len(row) + 1:])
    return torch.stack(out)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_early_stopping_decode_is_greedy_exact_match(seed: int, causal: bool) -> None:
    model = random_model(seed)
    gen = torch.Generator().manual_seed(100 + seed)
    L, n = 5, 48
    inputs = torch.randint(2, 9, (n, L), generator=gen)
    greedy = greedy_reverse(model, inputs, causal)
    np.testing.assert_array_equal(greedy[:4].numpy(), decode_by_hand(model, inputs[:4], causal).numpy())
    # targets: half the greedy output itself (right), half with one token changed at a random place (wrong there)
    targets = greedy.clone()
    wrong = torch.arange(n) % 2 == 1
    where = torch.randint(0, L, (n,), generator=gen)
    targets[wrong, where[wrong]] = 2 + (targets[wrong, where[wrong]] - 2 + 1) % 7
    got = greedy_sequence_correct(model, inputs, targets, causal)
    np.testing.assert_array_equal(got.numpy(), (greedy == targets).all(1).numpy())
    assert got.numpy().tolist() == (~wrong).numpy().tolist()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_causal_teacher_forcing_reproduces_greedy_tokens_bit_for_bit(seed: int) -> None:
    """The causal shortcut: on the sequence greedy generated, teacher forcing predicts every generated token."""
    model = random_model(seed, layers=1 + seed % 3, heads=1 + seed % 2 * 3, d_model=12 * (1 + seed % 2))
    L, n = 4 + seed, 80
    inputs = torch.randint(2, 9, (n, L), generator=torch.Generator().manual_seed(seed))
    greedy = greedy_reverse(model, inputs, causal=True)
    full = torch.cat([inputs, torch.full((n, 1), SEP), greedy], dim=1)
    with torch.no_grad():
        logits, _ = model(full[:, :-1], torch.as_tensor(causal_mask(2 * L)))
    np.testing.assert_array_equal(logits[:, L:].argmax(-1).numpy(), greedy.numpy())


def partly_trained(causal: bool, steps: int, seed: int = 0) -> ReversalTrainer:
    t = ReversalTrainer(TrainConfig(seed=seed, causal=causal, steps=200, **SMALL))
    for _ in range(steps):
        t.train_step()
    return t


@pytest.mark.parametrize("causal", [True, False])
def test_evaluate_equals_the_token_by_token_reference_along_a_run(causal: bool) -> None:
    t = ReversalTrainer(TrainConfig(seed=3, causal=causal, steps=200, **SMALL))
    seen = set()
    for step in range(0, 61, 6):
        while t.step_count < step:
            t.train_step()
        fast, ref = t.evaluate(), t.evaluate_reference()
        assert fast.keys() == ref.keys()
        for key in ("test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy"):
            assert fast[key] == ref[key], (step, key)
        np.testing.assert_array_equal(fast["head_reversal_scores"], ref["head_reversal_scores"])
        seen.add(round(ref["sequence_accuracy"], 1))
    assert len(seen) >= 3  # the comparison covered untrained, partly and well trained models


def test_default_recipe_evaluation_matches_reference_mid_training() -> None:
    t = ReversalTrainer(TrainConfig(seed=1))
    accs = []
    for _ in range(4):
        for _ in range(5):
            t.train_step()
        fast, ref = t.evaluate(), t.evaluate_reference()
        assert fast["sequence_accuracy"] == ref["sequence_accuracy"]
        assert fast["train_sequence_accuracy"] == ref["train_sequence_accuracy"]
        assert fast["test_loss"] == ref["test_loss"]
        accs.append(ref["sequence_accuracy"])
    assert min(accs) < 0.5 < max(accs)  # mid-range accuracies, where a wrong shortcut would show


def count_forwards(model: TinyTransformer) -> list[int]:
    calls = [0]
    model.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def test_causal_evaluation_is_one_forward_pass_and_decoding_stops_when_all_are_wrong() -> None:
    t = partly_trained(True, 0)
    calls = count_forwards(t.model)
    out = evaluate_reversal(t.model, t.test_data, t.train_data[:32], t.config.seq_len, causal=True)
    assert calls[0] == 1
    ref = t.evaluate_reference()
    assert out["sequence_accuracy"] == ref["sequence_accuracy"] == 0.0
    # non-causal, untrained: every sequence is wrong at its first token, so one decoding step suffices
    model = random_model(5)
    calls = count_forwards(model)
    inputs = torch.randint(2, 9, (40, 6), generator=torch.Generator().manual_seed(1))
    targets = greedy_reverse(model, inputs, causal=False)
    calls[0] = 0
    targets[:, 0] = 2 + (targets[:, 0] - 2 + 1) % 7
    assert not greedy_sequence_correct(model, inputs, targets, causal=False).any()
    assert calls[0] == 1


def test_head_scores_and_empty_train_subset() -> None:
    t = partly_trained(True, 30)
    L = t.config.seq_len
    out = evaluate_reversal(t.model, t.test_data, t.train_data[:0], L, causal=True, head_rows=50)
    assert math.isnan(out["train_sequence_accuracy"])
    np.testing.assert_array_equal(out["head_reversal_scores"],
                                  head_reversal_scores(t.model, t.test_data[:50], L, causal=True))


def schedule_by_walking(total: int, every: int, per_doubling: int) -> list[int]:
    """Independent statement of the schedule: every ``every`` steps until ``every * per_doubling``; from there the
    gap doubles at each doubling of the step (gap ``every * 2**k`` on [every*per_doubling*2**k, ... * 2**(k+1)))."""
    def gap_at(s: int) -> int:
        gap, bound = every, 2 * every * per_doubling
        while s >= bound:
            gap, bound = 2 * gap, 2 * bound
        return gap

    steps, s = [], every
    while s < total:
        steps.append(s)
        s += gap_at(s)
    return steps + [total]


@pytest.mark.parametrize("total,every,per", [(79, 3, 2), (395, 3, 2), (1000, 5, 3), (64, 1, 4), (10, 2, 1)])
def test_schedule_is_dense_early_sparse_late(total: int, every: int, per: int) -> None:
    got = [s for s in range(1, total + 1) if evaluation_due(s, total, every, per)]
    assert got == schedule_by_walking(total, every, per)
    assert len(got) <= per * math.log2(total) + 4
    assert [s for s in range(1, 31) if evaluation_due(s, 30, 4, None)] == [4, 8, 12, 16, 20, 24, 28, 30]


def test_trainer_evaluates_on_the_schedule_and_at_the_end() -> None:
    # without the causal mask the trigger is off (the batch's teacher forcing says nothing of generation)
    t = ReversalTrainer(TrainConfig(steps=40, eval_every=2, evals_per_doubling=2, causal=False, **SMALL))
    t.run()
    assert [r.step for r in t.history if r.evaluated] == [0] + schedule_by_walking(40, 2, 2)
    assert [s for s in range(1, 80) if evaluation_due(s, 79, 3)] == [3, 6, 12, 24, 48, 79]  # the defaults
    with pytest.raises(ValueError, match="evals_per_doubling"):
        TrainConfig(evals_per_doubling=0).validate()


def test_trigger_evaluates_while_batches_are_exact_and_the_test_set_is_not_yet() -> None:
    t = ReversalTrainer(TrainConfig(seed=2, steps=60))
    batch: dict[int, float] = {}
    t.run(lambda r: batch.__setitem__(r.step, t.batch_sequence_accuracy))
    evaluated = {r.step: r.sequence_accuracy for r in t.history if r.evaluated}
    regular = set(schedule_by_walking(60, 3, 1))
    expected, last_step, last_acc = [0], 0, evaluated[0]
    for step in range(1, 61):
        trigger = batch[step] >= 0.99 and last_acc < 0.99 and step - last_step >= 3
        if step in regular or trigger:
            expected.append(step)
            last_step, last_acc = step, evaluated.get(step, float("nan"))
    assert sorted(evaluated) == expected
    assert set(expected) - regular - {0}  # the trigger fired on this run
    first = min(s for s, a in evaluated.items() if a >= 0.99)
    reference = ReversalTrainer(TrainConfig(seed=2, steps=60, eval_every=1, evals_per_doubling=None))
    dense = {r.step: r.sequence_accuracy for r in reference.history if r.evaluated} | {
        r.step: r.sequence_accuracy for r in reference.reports()}
    assert dense[first] == evaluated[first]  # same run, same figure
    assert first - min(s for s, a in dense.items() if a >= 0.99) <= 3  # seen within eval_every steps
