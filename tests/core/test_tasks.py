"""The task registry: generators and ideal patterns on hand-made examples, head task scores, evaluation of every
task against the literal token-by-token reference, and each task learned by its recipe."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_core.tiny.analysis import head_reversal_scores, head_task_scores, pattern_scores_from_weights
from attention_core.tiny.config import TrainConfig
from attention_core.tiny.experiments import TASK_RECIPES, task_recipe
from attention_core.tiny.model import TinyTransformer
from attention_core.tiny.tasks import (
    TASK_NAMES,
    generate_task_data,
    ideal_pattern,
    make_task_example,
    prompt_length,
    sequence_length,
)
from attention_core.tiny.training import ReversalTrainer
from attention_core.tiny.vocab import SEP
from tests.tolerance import assert_close


def _keys(task: str, seq: list[int], L: int) -> dict[int, list[int]]:
    pat = ideal_pattern(task, torch.tensor(seq), L)
    return {q: torch.nonzero(pat[q])[:, 0].tolist() for q in range(pat.shape[0]) if bool(pat[q].any())}


def test_examples_written_by_hand():
    assert make_task_example("reversal", [5, 7, 9]).tolist() == [5, 7, 9, SEP, 9, 7, 5]
    assert make_task_example("copy", [5, 7, 9]).tolist() == [5, 7, 9, SEP, 5, 7, 9]
    assert make_task_example("sort", [9, 5, 7]).tolist() == [9, 5, 7, SEP, 5, 7, 9]
    assert make_task_example("induction", [5, 7, 9]).tolist() == [5, 7, 9, 5, 7, 9]
    assert make_task_example("induction", [5, 7, 5, 7]).tolist() == [5, 7, 5, 7, 5, 7, 5, 7]  # period 2 goes on
    with pytest.raises(ValueError, match="period"):
        make_task_example("induction", [5, 7, 5, 9])
    with pytest.raises(ValueError, match=">= 2"):
        make_task_example("copy", [5, SEP])


def test_ideal_patterns_written_by_hand():
    # query t predicts seq[t+1]; the answer starts after x SEP (L = 3: queries 3, 4, 5)
    assert _keys("reversal", [5, 7, 9, SEP, 9, 7, 5], 3) == {3: [2], 4: [1], 5: [0]}
    assert _keys("copy", [5, 7, 9, SEP, 5, 7, 9], 3) == {3: [0], 4: [1], 5: [2]}
    assert _keys("sort", [9, 5, 7, SEP, 5, 7, 9], 3) == {3: [1], 4: [2], 5: [0]}  # where 5, then 7, then 9 sit
    # induction, period 2 in L = 4: [5 7 5 7 | 5 7 5 7]; query 4 holds 5 and predicts 7: keys after every earlier 5
    assert _keys("induction", [5, 7, 5, 7, 5, 7, 5, 7], 4) == {4: [1, 3], 5: [2, 4], 6: [1, 3, 5]}
    assert _keys("induction", [5, 7, 9, 5, 7, 9], 3) == {3: [1], 4: [2]}  # x x: the diagonal offset by L - 1


@pytest.mark.parametrize("task", TASK_NAMES)
def test_generated_data_follows_the_task(task):
    L, V = 6, 16
    data = generate_task_data(task, 200, L, V, seed=3)
    assert data.shape == (200, sequence_length(task, L))
    assert torch.equal(data, generate_task_data(task, 200, L, V, seed=3))  # seeded
    assert bool((data >= 2).all()) if task == "induction" else bool((data[:, L] == SEP).all())
    for row in data[:40].tolist():
        x = row[:L]
        if task == "induction":
            period = next((i for i, v in enumerate(x) if v in x[:i]), L)
            assert (L + 1) // 2 <= period <= L and len(set(x[:period])) == period
            assert row == [x[i % period] for i in range(2 * L)]
        else:
            expected = {"reversal": x[::-1], "copy": x, "sort": sorted(x)}[task]
            assert row[L + 1:] == expected
            if task == "sort":
                assert len(set(x)) == L
        assert make_task_example(task, x).tolist() == row
    periods = {next((i for i, v in enumerate(r[:L]) if v in r[:i]), L) for r in data.tolist()} if task == "induction" \
        else {L}
    assert len(periods) > 1 or task != "induction"  # the period varies: no fixed offset solves it


def test_pattern_scores_count_argmax_on_ideal_keys():
    data = generate_task_data("copy", 5, 4, 12, seed=0)
    pat = ideal_pattern("copy", data, 4)
    T = pat.shape[-1]
    perfect = pat.float() + 0.01 * torch.rand(5, T, T)
    shifted = torch.roll(pat, 1, dims=-1).float() + 0.01 * torch.rand(5, T, T)
    w = [torch.stack([perfect, shifted], dim=1)]  # one layer, two heads
    assert pattern_scores_from_weights(w, pat).tolist() == [[1.0, 0.0]]


def test_head_task_scores_generalise_head_reversal_scores():
    torch.manual_seed(0)
    model = TinyTransformer(12, 16, 2, 2, 9).eval()
    data = generate_task_data("reversal", 50, 4, 12, seed=1)
    np.testing.assert_allclose(head_task_scores(model, "reversal", data, 4), head_reversal_scores(model, data, 4))


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("causal", [True, False])
def test_evaluation_equals_token_by_token_reference(task, causal):
    config = task_recipe(task, steps=25, causal=causal, test_size=120, train_eval_size=40, seed=1)
    trainer = ReversalTrainer(config)
    trainer.run()
    fast, slow = trainer.evaluate(), trainer.evaluate_reference()
    for key in ("test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy"):
        assert fast[key] == pytest.approx(slow[key], abs=1e-6), key
    for key in ("head_reversal_scores", "head_task_scores", "head_entropy"):
        assert_close(fast[key], slow[key])


@pytest.mark.slow  # ~20 s for the four (sort trains 600 steps); CI runs it too
@pytest.mark.parametrize("task", TASK_NAMES)
def test_every_recipe_reaches_99_percent_with_its_head(task):
    trainer = ReversalTrainer(task_recipe(task))
    trainer.run()
    last = trainer.history[-1]
    assert last.sequence_accuracy >= 0.99, TASK_RECIPES[task]
    first = prompt_length(task, trainer.config.seq_len) - 1
    scored = ideal_pattern(task, trainer.test_data[:100], trainer.config.seq_len)[:, first:].any(dim=-1)
    assert bool(scored.all())  # every answer query has an ideal key
    scores = last.head_task_scores
    assert scores is not None and scores.max() >= 0.9
    if task == "induction":  # the induction head sits in layer 2, reading layer 1
        assert scores[1].max() >= 0.9


def test_reversal_without_positions_stays_at_chance():
    trainer = ReversalTrainer(TrainConfig(positional="none", steps=150, test_size=500))
    trainer.run()
    L, V = trainer.config.seq_len, trainer.config.vocab_size
    chance = (1 / (V - 2)) ** L
    assert trainer.history[-1].sequence_accuracy <= 2 * chance
    assert trainer.history[-1].loss > 1.0  # not learned: the loss stays far from 0


def test_configs_refuse_impossible_tasks():
    with pytest.raises(ValueError, match="distinct tokens"):
        TrainConfig(task="induction", seq_len=15, vocab_size=16).validate()
    with pytest.raises(ValueError, match="unknown task"):
        TrainConfig(task="parity").validate()
    with pytest.raises(ValueError, match="even head width"):
        TrainConfig(positional="rotary", d_model=36, num_heads=4).validate()
    with pytest.raises(ValueError, match="attention dropout"):
        TrainConfig(attention_dropout=0.95).validate()
    assert TrainConfig(task="induction").sequence_length == 12 and TrainConfig(task="copy").sequence_length == 13
