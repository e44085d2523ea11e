"""Cheap, exact evaluation of a reversal model: the figures ``ReversalTrainer.evaluate`` reports, at a fraction of
the cost of decoding every held-out sequence token by token.

Exactness. The greedy exact-sequence accuracy keeps its definition (feed ``inputs + SEP``, append the argmax
token ``L`` times, count the sequences whose ``L`` generated tokens all equal the reversed input). What changes is
how much work it takes:

- **Causal model.** While a sequence's generated prefix equals the true one, greedy decoding feeds the model the
  very tokens teacher forcing feeds it, and under the causal mask no position reads a later one; so the greedy
  logits at that step are the teacher-forced logits at that position. A sequence is therefore generated exactly iff
  every teacher-forced prediction of its reversed half is right (at its first wrong token both decodes emit the
  same wrong token, and the sequence is wrong whatever follows). One batched forward pass, the one the test loss
  needs anyway, gives the exact-sequence accuracy: no decoding at all.
- **Non-causal model** (earlier positions change as tokens are appended, so neither teacher forcing nor cached
  keys/values stand in for it): batched greedy decoding of the whole set at once, a sequence dropped from the batch
  at its first wrong token (it is wrong whatever follows), the loop ending when none is left.

Floating point: the logits of a length-``T`` forward pass are not bit-for-bit those of a length-``2L`` pass (the
kernels group sums differently), so the argmax could only differ on a tie within rounding (~1e-6); the tests
compare the predictions with ``greedy_reverse`` on random and partly trained models, causal and not.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from .analysis import (
    _device,
    _mask,
    greedy_generate,
    head_entropy_from_weights,
    head_reversal_scores,
    head_scores_from_weights,
    head_task_scores,
    pattern_scores_from_weights,
)
from .model import TinyTransformer

HEAD_SCORE_ROWS = 100  # head_reversal_scores is measured on the first 100 test sequences (as before)
TARGET_ACCURACY = 0.99  # the accuracy the app and the benchmarks wait for (see ``evaluation_due``)


@torch.no_grad()
def greedy_answer_correct(model: TinyTransformer, prompts: torch.Tensor, targets: torch.Tensor,
                          causal: bool = True) -> torch.Tensor:
    """(N,) bool: whether greedy generation from ``prompts`` (N, P) (as ``greedy_generate``) yields ``targets``
    (N, A).

    Batched over the whole set; a sequence leaves the batch at its first wrong token, and the loop stops when every
    sequence is wrong. Exact for any model, causal or not (see the module notes).
    """
    dev = _device(model)
    n, length = targets.shape
    targets = targets.to(dev)
    correct = torch.ones(n, dtype=torch.bool, device=dev)
    alive = torch.arange(n, device=dev)
    seq = prompts.to(dev)
    for p in range(length):
        logits, _ = model(seq, _mask(seq.shape[1], causal, dev))
        token = logits[:, -1, :].argmax(dim=-1)
        right = token == targets[alive, p]
        correct[alive[~right]] = False
        if not bool(right.any()):
            break
        alive, seq = alive[right], torch.cat([seq[right], token[right, None]], dim=1)
    return correct


@torch.no_grad()
def greedy_sequence_correct(model: TinyTransformer, inputs: torch.Tensor, targets: torch.Tensor,
                            causal: bool = True) -> torch.Tensor:
    """(N,) bool: whether greedy generation from ``inputs + SEP`` (as ``greedy_reverse``) yields ``targets``."""
    from .vocab import SEP

    sep = torch.full((inputs.shape[0], 1), SEP, dtype=torch.long, device=inputs.device)
    return greedy_answer_correct(model, torch.cat([inputs, sep], dim=1), targets, causal)


@torch.inference_mode()
def evaluate_task(model: TinyTransformer, task: str, test: torch.Tensor, train_subset: torch.Tensor, seq_len: int,
                  causal: bool = True, head_rows: int = HEAD_SCORE_ROWS) -> dict[str, Any]:
    """The figures of one evaluation of a ``task`` model, as the trainer reports them.

    ``test_loss`` (cross-entropy) and ``reversal_accuracy`` (per-token teacher-forced accuracy on the answer; the
    name is the reversal lesson's, the figure is any task's) on ``test``; ``sequence_accuracy`` /
    ``train_sequence_accuracy``: greedy exact-sequence accuracy on ``test`` / ``train_subset`` (NaN if it is
    empty); on the first ``head_rows`` test sequences: ``head_reversal_scores`` (the reversal pattern,
    ``alignment="predict"``), ``head_task_scores`` (the task's ideal pattern) and ``head_entropy`` (mean attention
    entropy per head, nats). One teacher-forced pass over test and train sequences together serves them all (plus,
    for a model without the causal mask, the batched early-stopping greedy decode).
    """
    from .tasks import ideal_pattern, prompt_length

    model.eval()
    dev = _device(model)
    n_test, L = len(test), seq_len
    first = prompt_length(task, L) - 1  # the first query that predicts an answer token
    data = torch.cat([test, train_subset]).to(dev)
    logits, weights = model(data[:, :-1], _mask(data.shape[1] - 1, causal, dev))
    ans, target = logits[:, first:, :], data[:, first + 1:]
    ans_test, target_test = ans[:n_test], target[:n_test]
    test_loss = float(F.cross_entropy(ans_test.reshape(-1, ans_test.shape[-1]), target_test.reshape(-1)))
    hits = ans.argmax(-1) == target
    token_acc = float(hits[:n_test].float().mean())
    if causal:
        seq_ok = hits.all(dim=1)
    else:
        seq_ok = greedy_answer_correct(model, data[:, :first + 1], target, causal=False)
    seq_acc = float(seq_ok[:n_test].float().mean())
    train_seq_acc = float(seq_ok[n_test:].float().mean()) if len(train_subset) else math.nan
    rows = min(head_rows, n_test)
    if rows == 0:
        raise ValueError("evaluate_task: the test set is empty")
    head_w = [w[:rows] for w in weights]
    return {"test_loss": test_loss, "reversal_accuracy": token_acc, "sequence_accuracy": seq_acc,
            "train_sequence_accuracy": train_seq_acc,
            "head_reversal_scores": head_scores_from_weights(head_w, seq_len),
            "head_task_scores": pattern_scores_from_weights(head_w, ideal_pattern(task, data[:rows], L)),
            "head_entropy": head_entropy_from_weights(head_w)}


def evaluate_reversal(model: TinyTransformer, test: torch.Tensor, train_subset: torch.Tensor, seq_len: int,
                      causal: bool = True, head_rows: int = HEAD_SCORE_ROWS) -> dict[str, Any]:
    """``evaluate_task`` for the reversal task (its figures under their historical names)."""
    return evaluate_task(model, "reversal", test, train_subset, seq_len, causal, head_rows)


@torch.no_grad()
def evaluate_task_reference(model: TinyTransformer, task: str, test: torch.Tensor, train_subset: torch.Tensor,
                            seq_len: int, causal: bool = True, head_rows: int = HEAD_SCORE_ROWS) -> dict[str, Any]:
    """``evaluate_task``'s figures the slow, literal way (the evaluation before the teacher-forced one): every test and
    train-subset sequence decoded one token at a time by ``greedy_generate``, the head scores from their own
    pass."""
    from .tasks import prompt_length

    model.eval()
    dev, L = _device(model), seq_len
    first = prompt_length(task, L) - 1
    test, train_subset = test.to(dev), train_subset.to(dev)
    logits, weights = model(test[:, :-1], _mask(test.shape[1] - 1, causal, dev))
    ans, target = logits[:, first:, :], test[:, first + 1:]
    test_loss = float(F.cross_entropy(ans.reshape(-1, ans.shape[-1]), target.reshape(-1)))
    token_acc = float((ans.argmax(-1) == target).float().mean())
    both = torch.cat([test, train_subset])
    generated = greedy_generate(model, both[:, :first + 1], both.shape[1] - first - 1, causal)
    gen, gen_train = generated[: len(test)], generated[len(test):]
    seq_acc = float((gen == target).all(dim=1).float().mean())
    train_seq_acc = (float((gen_train == train_subset[:, first + 1:]).all(dim=1).float().mean())
                     if len(train_subset) else math.nan)
    head_w = [w[:head_rows] for w in weights]
    return {"test_loss": test_loss, "reversal_accuracy": token_acc, "sequence_accuracy": seq_acc,
            "train_sequence_accuracy": train_seq_acc,
            "head_reversal_scores": head_reversal_scores(model, test[:head_rows], L, causal=causal),
            "head_task_scores": head_task_scores(model, task, test[:head_rows], L, causal=causal),
            "head_entropy": head_entropy_from_weights(head_w)}


def evaluate_reversal_reference(model: TinyTransformer, test: torch.Tensor, train_subset: torch.Tensor,
                                seq_len: int, causal: bool = True, head_rows: int = HEAD_SCORE_ROWS
                                ) -> dict[str, Any]:
    """``evaluate_task_reference`` for the reversal task."""
    return evaluate_task_reference(model, "reversal", test, train_subset, seq_len, causal, head_rows)


def evaluation_due(step: int, total_steps: int, eval_every: int, evals_per_doubling: int | None = 1, *,
                   since_last: int | None = None, batch_accuracy: float | None = None,
                   last_accuracy: float | None = None, target: float = TARGET_ACCURACY) -> bool:
    """Whether a run evaluates after ``step``: dense early, sparse later, always at the last step, and densely again
    while the training batches say the held-out accuracy may just have reached ``target``.

    ``evals_per_doubling=None``: every ``eval_every`` steps. Otherwise every ``eval_every`` steps up to
    ``2 * eval_every * evals_per_doubling``, then the spacing doubles each time the step count doubles, so each
    doubling of the run holds ``evals_per_doubling`` evaluations: with ``eval_every=3``, steps 3, 6, 12, 24, 48, 96,
    ... at 1 per doubling (the default), 3, 6, 9, 12, 18, 24, 36, 48, 72, ... at 2. A run of N steps evaluates
    ~``evals_per_doubling * log2(N)`` times,
    so evaluation's share of the wall time falls as the run grows. Step 0 is evaluated by the trainer itself.

    The trigger: also due when ``batch_accuracy`` (the last training batch's greedy exact-sequence accuracy, which
    the trainer passes for a causal model, read off its teacher-forced pass for free) is >= ``target`` while the
    latest evaluation (``last_accuracy``, ``since_last`` steps ago, at least ``eval_every``) is below it: so the step
    where the held-out accuracy reaches the target is seen within ``eval_every`` steps, not a whole sparse gap later.
    """
    if step >= total_steps:
        return True
    if step <= 0:
        return False
    if (batch_accuracy is not None and last_accuracy is not None and since_last is not None
            and since_last >= eval_every and batch_accuracy >= target and last_accuracy < target):
        return True
    if step % eval_every:
        return False
    if evals_per_doubling is None:
        return True
    octave = max(0, math.floor(math.log2(step / (eval_every * evals_per_doubling))))
    return step % (eval_every * 2 ** octave) == 0
