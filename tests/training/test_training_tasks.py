"""The Training tab's session trains every task and option, without a window: runs on the default
ThreadRunner. References are built here by hand (the ideal cells of a probe, greedy decoding with the model rebuilt
from the recorded parameters), never taken from the session's own helpers."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
import torch

from app.training.model.session import TrainingSession
from app.training.model.status import NO_POSITIONS_WHY, chance_accuracy
from app.training.model.tools import parse_tokens
from attention_core.masks import causal_mask
from attention_core.tiny.checkpoint import FORMAT, load_checkpoint
from attention_core.tiny.experiments import task_recipe
from attention_core.tiny.model import ModelConfig, TinyTransformer
from attention_core.tiny.tasks import generate_task_data

SMALL = {"train_size": 256, "test_size": 64, "train_eval_size": 16, "batch_size": 32}


def run(cfg) -> TrainingSession:
    s = TrainingSession(cfg)
    s.set_speed(None)
    assert s.start()
    assert s.wait_idle(120) and s.run_state == "finished", s.last_error
    return s


def rebuilt(s: TrainingSession, index: int = -1) -> TinyTransformer:
    snap = s.history[index]
    model = TinyTransformer.from_config(s.model_config.model_config())
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in snap.params.items()})
    return model.eval()


def greedy_by_hand(model, prompt: list[int], steps: int, causal: bool = True) -> list[int]:
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(steps):
            x = torch.tensor([seq])
            mask = torch.as_tensor(causal_mask(len(seq))) if causal else None
            logits, _ = model(x, mask)
            seq.append(int(logits[0, -1].argmax()))
    return seq[len(prompt):]


def ideal_cells_by_hand(task: str, probe: tuple[int, ...], L: int) -> set[tuple[int, int]]:
    """Where a solving head looks, from the task's definition (query q predicts probe[q + 1])."""
    if task == "copy":
        return {(L + p, p) for p in range(L)}
    if task == "reversal":
        return {(L + p, L - 1 - p) for p in range(L)}
    if task == "sort":
        return {(L + p, k) for p in range(L) for k in range(L) if probe[k] == probe[L + 1 + p]}
    assert task == "induction"  # the key after every earlier occurrence of the query's token
    return {(q, j + 1) for q in range(L, 2 * L - 1) for j in range(q) if probe[j] == probe[q]}


@pytest.mark.parametrize("task", ["copy", "induction"])
def test_each_task_trains_and_its_snapshot_knows_the_task(task):
    cfg = task_recipe(task, steps=20, **SMALL)
    s = run(cfg)
    snap = s.history.latest
    L = cfg.seq_len
    assert snap.step == 20 and snap.task == task and len(snap.probe) == cfg.sequence_length
    cells = {(int(q), int(k)) for q, k in zip(*np.nonzero(snap.ideal))}
    assert cells == ideal_cells_by_hand(task, snap.probe, L)
    # the answer the title quotes, and Try it's expected answer, are the task's
    answer = {"copy": snap.probe[:L], "induction": snap.probe[L + 1:]}[task]
    assert snap.answer == answer
    t = s.try_sequence(" ".join(map(str, snap.probe[:L])))
    assert t.error == "" and t.result.expected == answer
    prompt = list(snap.probe[:L + 1])
    assert t.result.prompt == tuple(prompt)
    assert list(t.result.generated) == greedy_by_hand(rebuilt(s), prompt, len(answer))
    np.testing.assert_array_equal(snap.task_scores, snap.report.head_task_scores)
    assert f"({task} task)" in s.status
    s.shutdown()


def test_probe_and_try_text_are_checked_for_the_task():
    with pytest.raises(ValueError, match="the sort model sorts sequences of exactly 4 tokens"):
        parse_tokens("2 3 4", 4, 16, "sort")
    with pytest.raises(ValueError, match="repeat with one period"):
        parse_tokens("2 3 2 5", 4, 16, "induction")
    assert parse_tokens("2 3 2 3", 4, 16, "induction") == [2, 3, 2, 3]  # already periodic: continued


def test_run_without_positions_says_what_it_measured():
    cfg = task_recipe("reversal", positional="none", steps=15, **SMALL)
    s = run(cfg)
    model = rebuilt(s)
    test = generate_task_data("reversal", cfg.test_size, cfg.seq_len, cfg.vocab_size, seed=cfg.seed * 2 + 2)
    L = cfg.seq_len
    right = [greedy_by_hand(model, row[:L + 1].tolist(), L) == row[L + 1:].tolist() for row in test]
    acc = float(np.mean(right))
    assert f"greedy exact-sequence test accuracy is {acc:.1%}" in s.status
    assert chance_accuracy(cfg) == pytest.approx((1 / 14) ** 6)
    if acc < 0.05:
        assert "cannot tell positions apart" in s.status
    assert "permutation-equivariant" in NO_POSITIONS_WHY
    s.shutdown()


def test_sort_rotary_checkpoint_reloads_with_its_options(tmp_path):
    cfg = task_recipe("sort", positional="rotary", attention_dropout=0.1, steps=4, **SMALL)
    s = run(cfg)
    path = s.save(tmp_path / "sort.safetensors")
    s.shutdown()
    loaded = TrainingSession()
    loaded.load(path)
    assert loaded.wait_idle(60) and loaded.run_state == "loaded", loaded.last_error
    c = loaded.model_config
    assert (c.task, c.positional, c.attention_dropout, c.num_heads) == ("sort", "rotary", 0.1, 1)
    assert all(snap.task == "sort" for snap in loaded.history) and len(loaded.history) == 5
    snap = loaded.history.latest
    assert {(int(q), int(k)) for q, k in zip(*np.nonzero(snap.ideal))} == ideal_cells_by_hand(
        "sort", snap.probe, cfg.seq_len)
    model, _ = load_checkpoint(path)
    assert model.config.positional == "rotary"
    loaded.shutdown()


def test_old_checkpoint_without_the_new_keys_loads_as_reversal_with_learned_positions(tmp_path):
    from safetensors.torch import save_file

    torch.manual_seed(3)
    model = TinyTransformer(16, 32, 4, 2, max_seq_len=13)
    old_model_config = {k: v for k, v in asdict(ModelConfig(16, 32, 4, 2, 13)).items()
                        if k not in ("positional", "attention_dropout")}
    train_config = {k: v for k, v in asdict(task_recipe("reversal", steps=5)).items()
                    if k not in ("task", "positional", "attention_dropout")}
    path = tmp_path / "old.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path), metadata={
        "format": FORMAT, "format_version": "1", "model_config": json.dumps(old_model_config),
        "extra": json.dumps({"train_config": train_config, "step": 5, "probe": [2, 3, 4, 5, 6, 7]})})
    s = TrainingSession()
    s.load(path)
    assert s.wait_idle(60) and s.run_state == "loaded", s.last_error
    c = s.model_config
    assert (c.task, c.positional, c.attention_dropout) == ("reversal", "learned", 0.0)
    assert s.history.latest.answer == (7, 6, 5, 4, 3, 2)
    t = s.try_sequence("2 3 4 5 6 7")
    assert list(t.result.generated) == greedy_by_hand(model.eval(), [2, 3, 4, 5, 6, 7, 1], 6)
    s.shutdown()
