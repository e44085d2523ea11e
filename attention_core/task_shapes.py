"""The trainable tasks' names and sequence shapes, without torch (a settings form validates a config on every
keystroke; see ``train_config``). ``tasks`` builds the data and the ideal attention patterns on these shapes.

Every task is next-token prediction over one sequence of ``sequence_length(task, L)`` tokens for an input of
``L`` tokens: the first ``prompt_length(task, L)`` tokens are given, the rest (the *answer*) is scored and, at
evaluation, generated greedily. Under next-token training the model reads ``seq[:-1]`` and the query at position
``t`` predicts ``seq[t + 1]``, so the queries that predict the answer are ``prompt_length - 1 .. length - 2``.
"""

from __future__ import annotations

TASK_NAMES: tuple[str, ...] = ("reversal", "copy", "sort", "induction")
TASK_LAYOUTS = {
    "reversal": "x SEP reversed(x)",
    "copy": "x SEP x",
    "sort": "x SEP sorted(x) (x: distinct tokens)",
    "induction": "x x (x: distinct tokens, repeated with a period of L/2 to L)",
}
POSITIONAL_KINDS: tuple[str, ...] = ("learned", "sinusoidal", "rotary", "none")
MAX_ATTENTION_DROPOUT = 0.9


def check_task(task: str) -> str:
    if task not in TASK_NAMES:
        raise ValueError(f"unknown task {task!r}: choose one of {', '.join(TASK_NAMES)}")
    return task


def sequence_length(task: str, seq_len: int) -> int:
    """Tokens in one full example: 2L + 1 with a SEP in the middle, 2L for induction (the input repeated)."""
    return 2 * seq_len if check_task(task) == "induction" else 2 * seq_len + 1


def prompt_length(task: str, seq_len: int) -> int:
    """Tokens given before the scored answer: ``x SEP`` (L + 1); for induction the first L + 1 tokens (which hold
    at least one whole period and the repeat's first token: nothing says where a repeat starts)."""
    check_task(task)
    return seq_len + 1


def answer_length(task: str, seq_len: int) -> int:
    return sequence_length(task, seq_len) - prompt_length(task, seq_len)


def task_problems(task: str, seq_len: int, vocab_size: int) -> list[str]:
    """Why this task cannot be built at this size (empty when it can)."""
    if task not in TASK_NAMES:
        return [f"unknown task {task!r}: choose one of {', '.join(TASK_NAMES)}"]
    if task == "induction" and seq_len < 2:
        return [f"induction needs a sequence length >= 2 (got {seq_len})"]
    if task in ("induction", "sort"):
        if seq_len > vocab_size - 2:
            return [f"{task} draws {seq_len} distinct tokens: the vocabulary ({vocab_size}, of which 2 reserved) "
                    f"must hold at least {seq_len + 2}"]
    return []
