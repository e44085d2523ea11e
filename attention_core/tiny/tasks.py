"""The trainable tasks, one registry (``TASKS``): reversal (lesson 2.3), copy, sort and induction.

Each task gives its data generator (seeded, vectorised), the positions that are scored (``task_shapes``) and the
*ideal attention pattern* a head that solves it shows: for each query that predicts an answer token, the key(s) it
should look at. 0 = PAD, 1 = SEP; real tokens are 2 .. vocab_size - 1.

Ideal patterns are stated for the query that *predicts* a token (next-token training: the query at position t
predicts seq[t + 1]). Reversal: query L + p (on SEP for p = 0) predicts x[L-1-p], key L-1-p (the anti-diagonal).
Copy: query L + p predicts x[p], key p (the diagonal offset by L; by L + 1 from the predicted token). Sort: query
L + p predicts the p-th smallest token, the key holding it in x (sort draws distinct tokens). Induction: a
random sequence of distinct tokens repeated (``x x``) with a period m drawn per example in [ceil(L/2), L] (so
``x x`` itself when m = L), cut to 2L tokens; the query at t predicts seq[t + 1] = seq[t + 1 - m]: the token after
the previous occurrence of the current token, key t + 1 - m (or the one after any earlier occurrence: they hold the
same token) — the induction-head pattern. As the period varies, no fixed positional offset finds it: a head must
look up the previous occurrence by content (a previous-token head in layer 1, an induction head in layer 2).

The names and shapes (``TASK_NAMES``, ``sequence_length``, ``prompt_length``, ``task_problems``) need no torch:
a settings form validates a config on every keystroke. torch loads when data or a pattern is first built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .vocab import SEP

if TYPE_CHECKING:
    import torch

TASK_NAMES: tuple[str, ...] = ("reversal", "copy", "sort", "induction")
TASK_LAYOUTS = {
    "reversal": "x SEP reversed(x)",
    "copy": "x SEP x",
    "sort": "x SEP sorted(x) (x: distinct tokens)",
    "induction": "x x (x: distinct tokens, repeated with a period of L/2 to L)",
}
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


def _generator(seed: int | None) -> torch.Generator:
    import torch

    gen = torch.Generator()
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


def _check_sizes(task: str, num_samples: int, seq_len: int, vocab_size: int) -> None:
    if num_samples < 0 or seq_len < 1:
        raise ValueError(f"num_samples ({num_samples}) must be >= 0 and seq_len ({seq_len}) >= 1")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be >= 3 (0 = PAD, 1 = SEP, then real tokens), got {vocab_size}")
    problems = task_problems(task, seq_len, vocab_size)
    if problems:
        raise ValueError("; ".join(problems))


def _answer(task: str, x: torch.Tensor) -> torch.Tensor:
    """The tokens after the prompt for inputs x (N, L)."""
    if task == "reversal":
        return x.flip(1)
    if task == "copy":
        return x.clone()
    if task == "sort":
        return x.sort(dim=1).values
    return x[:, 1:].clone()  # induction: the repeat after its first token


def assemble(task: str, x: torch.Tensor) -> torch.Tensor:
    """Full sequences (N, T) from inputs x (N, L)."""
    import torch

    check_task(task)
    if task == "induction":
        return torch.cat([x, x], dim=1)  # period L; ``generate_task_data`` draws shorter periods too
    sep = torch.full((x.shape[0], 1), SEP, dtype=torch.long, device=x.device)
    return torch.cat([x, sep, _answer(task, x)], dim=1)


def generate_task_data(task: str, num_samples: int, seq_len: int, vocab_size: int, seed: int | None = None
                       ) -> torch.Tensor:
    """LongTensor (num_samples, sequence_length(task, seq_len)) of ``task``'s examples, tokens in [2, vocab_size)
    (induction: each input's tokens distinct, so "the previous occurrence" of a token is one position)."""
    import torch

    _check_sizes(task, num_samples, seq_len, vocab_size)
    gen = _generator(seed)
    if task in ("induction", "sort"):  # distinct tokens: one position holds each, as the ideal patterns say
        order = torch.rand((num_samples, vocab_size - 2), generator=gen).argsort(dim=1)
        x = order[:, :seq_len] + 2
    if task == "sort":
        return assemble(task, x)
    if task == "induction":
        lo = max(1, (seq_len + 1) // 2)
        period = torch.randint(lo, seq_len + 1, (num_samples, 1), generator=gen)
        return torch.gather(x, 1, torch.arange(2 * seq_len)[None, :] % period)
    x = torch.randint(2, vocab_size, (num_samples, seq_len), generator=gen, dtype=torch.long)
    return assemble(task, x)


def generate_reversal_data(num_samples: int, seq_len: int, vocab_size: int, seed: int | None = None
                           ) -> torch.Tensor:
    """LongTensor (num_samples, 2*seq_len+1): tokens in [2, vocab_size), SEP at position seq_len, then the
    input reversed. Vectorised (the lesson's Python loop costs over a second for 5000 samples)."""
    return generate_task_data("reversal", num_samples, seq_len, vocab_size, seed)


def make_task_example(task: str, tokens: list[int] | torch.Tensor) -> torch.Tensor:
    """One full sequence from an input of L tokens (each >= 2). Induction: the L tokens are distinct (period L:
    ``x x``) or already repeat with a period m (the first m distinct, then token t = token t - m), which the
    sequence continues to 2L tokens."""
    import torch

    t = torch.as_tensor(tokens, dtype=torch.long).reshape(-1)
    if t.numel() == 0 or bool((t < 2).any()):
        raise ValueError(f"input tokens must be non-empty and >= 2 (0 = PAD, 1 = SEP): {t.tolist()}")
    if check_task(task) == "induction":
        values = t.tolist()
        period = next((i for i, v in enumerate(values) if v in values[:i]), len(values))
        if period < 1 or len(values) < 2 or any(values[i] != values[i - period] for i in range(period, len(values))):
            raise ValueError(f"induction: give at least 2 tokens, distinct or repeating with one period "
                             f"(got {values})")
        return torch.as_tensor([values[i % period] for i in range(2 * len(values))], dtype=torch.long)
    return assemble(task, t[None])[0]


def make_reversal_example(tokens: list[int] | torch.Tensor) -> torch.Tensor:
    """One full sequence (2*L+1,) from an input of L tokens (each must be >= 2)."""
    return make_task_example("reversal", tokens)


def ideal_pattern(task: str, data: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(N, T-1, T-1) bool for full sequences ``data`` (N, T): True where a head that solves ``task`` puts its
    highest weight (row = query in the model's input ``seq[:-1]``, column = key). Rows of the queries that predict
    no answer token are all False. One sequence (T,) gives (T-1, T-1)."""
    import torch

    single = data.dim() == 1
    seqs = data[None] if single else data
    n, length = seqs.shape
    L = seq_len
    if length != sequence_length(task, L):
        raise ValueError(f"{task}: sequences of length {sequence_length(task, L)} expected for seq_len {L}, "
                         f"got {length}")
    out = torch.zeros((n, length - 1, length - 1), dtype=torch.bool, device=seqs.device)
    first = prompt_length(task, L) - 1  # the first query that predicts an answer token
    queries = torch.arange(first, length - 1, device=seqs.device)
    p = queries - first
    if task == "sort":
        target = seqs[:, first + 1:]  # (N, A): the p-th smallest token
        out[:, first:, :L] = target[:, :, None] == seqs[:, None, :L]
    elif task == "induction":  # the key after each earlier occurrence of the query's token
        for q in queries.tolist():
            out[:, q, 1:q + 1] = seqs[:, :q] == seqs[:, q:q + 1]
    else:
        keys = {"reversal": L - 1 - p, "copy": p}[task]
        out[:, queries, keys] = True
    return out[0] if single else out


@dataclass(frozen=True)
class Task:
    """One entry of the registry: a task's name, layout and the functions above bound to it."""

    name: str
    layout: str

    def generate(self, num_samples: int, seq_len: int, vocab_size: int, seed: int | None = None) -> torch.Tensor:
        return generate_task_data(self.name, num_samples, seq_len, vocab_size, seed)

    def example(self, tokens: list[int] | torch.Tensor) -> torch.Tensor:
        return make_task_example(self.name, tokens)

    def ideal(self, data: torch.Tensor, seq_len: int) -> torch.Tensor:
        return ideal_pattern(self.name, data, seq_len)

    def sequence_length(self, seq_len: int) -> int:
        return sequence_length(self.name, seq_len)

    def scored_queries(self, seq_len: int) -> range:
        """The query positions (in the model's input ``seq[:-1]``) whose predictions are scored: the answer's."""
        return range(prompt_length(self.name, seq_len) - 1, sequence_length(self.name, seq_len) - 1)


TASKS: dict[str, Task] = {name: Task(name, TASK_LAYOUTS[name]) for name in TASK_NAMES}
