"""Checking before computing: the one validation layer of the command line and the window's forms (Qt-free).

Every numeric option has a documented range (``Limit``: the CLI's flag, the form's label, the bounds), and the
sizes of a training run must fit what this machine can hold: ``train_memory_mib`` estimates the memory of a run
(weights, gradients and Adam's two moments; the activations of one training batch and of one evaluation; the
recorded history, one set of probe maps per step) and ``check_train`` refuses a run whose estimate is above
``memory_budget_mib`` (half the memory free now, as the Lab's default limit; ``MEMORY_BUDGET_MIB`` in the
environment overrides it), naming the option and the largest value of it that fits. The bounds are sanity limits
far above what the app is for; memory is the limit that bites first on a real machine.

A refusal is a ``Refused`` (a ``ValueError``) whose text is one line naming the option: the CLI prints
``attention-playground COMMAND: reason`` and exits 2 (``app.common.entry``); a form shows it under its fields.
``flags=False`` names the options the way the window's forms label them; ``names`` (field -> word) names some
otherwise (``experiment --runs FILE``: the file's own keys). The library's own checks (``TrainConfig.validate``)
speak of fields (``d_model``, ``num_heads``), the words of a Python caller: where the command line has a flag for
them, the combination is checked here first, in the flags' words (``--d-model 6 must be divisible by --heads 4``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attention_core.scaling.results import ScalingConfig
    from attention_core.tiny.config import TrainConfig

MAX_SEED = 2**31 - 1
"""Seeds are 0 … 2³¹ − 1 everywhere (the form's spin box, numpy's and torch's generators)."""


class Refused(ValueError):
    """Bad input, said in one line that names the option; nothing was computed or written."""


@dataclass(frozen=True)
class Limit:
    """One option's documented range: ``flag`` on the command line, ``label`` in a form, ``lo`` … ``hi``
    (``lo_open``: ``lo`` itself excluded), an integer unless ``integer`` is False."""

    flag: str
    label: str
    lo: float
    hi: float
    integer: bool = True
    lo_open: bool = False
    note: str = ""

    def name(self, flags: bool = True) -> str:
        return self.flag if flags else self.label

    def text(self) -> str:
        """The range in words: "an integer from 1 to 64", "a positive number up to 1000"."""
        kind = "an integer" if self.integer else "a number"
        if self.lo_open and self.lo == 0:
            words = f"a positive {kind.split()[1]} up to {_num(self.hi)}"
        elif self.lo_open:
            words = f"{kind} above {_num(self.lo)} up to {_num(self.hi)}"
        else:
            words = f"{kind} from {_num(self.lo)} to {_num(self.hi)}"
        return words + (f" ({self.note})" if self.note else "")

    def check(self, value: Any, flags: bool = True, name: str | None = None) -> Any:
        """``value`` if it is in range, else ``Refused`` naming the option (``name``, else the flag or the label)
        and the range."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and self.integer:
            ok = float(value).is_integer()
        if ok:
            ok = (value > self.lo if self.lo_open else value >= self.lo) and value <= self.hi
        if not ok:
            raise Refused(f"{name or self.name(flags)} {value!r} is out of range: expected {self.text()}")
        return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _limits(*items: tuple[str, Limit]) -> dict[str, Limit]:
    return dict(items)


TRAIN_LIMITS = _limits(
    ("seq_len", Limit("--seq-len", "Sequence length", 1, 512, note="input tokens L")),
    ("vocab_size", Limit("--vocab-size", "Vocabulary", 3, 65_536)),
    ("d_model", Limit("--d-model", "d_model", 1, 4096)),
    ("num_heads", Limit("--heads", "Heads", 1, 64)),
    ("num_layers", Limit("--layers", "Layers", 1, 64)),
    ("batch_size", Limit("--batch-size", "Batch size", 1, 65_536)),
    ("lr", Limit("--lr", "Learning rate", 0, 10, integer=False, lo_open=True)),
    ("epochs", Limit("--epochs", "Epochs", 1, 1_000_000)),
    ("steps", Limit("--steps", "Steps", 1, 1_000_000)),
    ("seed", Limit("--seed", "Seed", 0, MAX_SEED)),
    ("attention_dropout", Limit("--attention-dropout", "Attention dropout", 0, 0.9, integer=False)),
)
"""``TrainConfig`` field -> its range (``train``, ``experiment``, the Training tab's form)."""

PROBE_LIMITS = _limits(
    ("trials", Limit("--trials", "Trials", 1, 10_000, note="one forward pass each")),
    ("seed", Limit("--seed", "Seed", 0, MAX_SEED)),
)
SCALE = Limit("--scale", "Scale", 0, 1000, integer=False, lo_open=True)
"""The multiplier of the scores (``export --scale``, the Playground's custom scale); beyond ~100 the softmax of any
non-trivial scores is one-hot already."""

BENCH_LIMITS = _limits(
    ("batch", Limit("--batch", "batch", 1, 64)),
    ("heads", Limit("--heads", "heads", 1, 64)),
    ("d", Limit("--d", "d", 1, 1024)),
    ("repeat", Limit("--repeat", "repeats", 1, 100)),
    ("min_n", Limit("--min-n", "n from", 1, 1 << 17)),
    ("max_n", Limit("--max-n", "n up to", 1, 1 << 17)),
    ("threads", Limit("--threads", "CPU threads", 0, 256, note="0 = the libraries' own settings")),
    ("memory_limit_mib", Limit("--memory-limit-mib", "memory limit", 0, 1 << 30, integer=False, lo_open=True)),
)
"""``ScalingConfig`` field -> its range (``bench``, the Lab's controls); ``threads`` 0 means None there."""

INSPECT_LIMITS = _limits(
    ("threads", Limit("--threads", "threads", 0, 256, note="0 = torch's own")),
    ("batch", Limit("--batch", "batch", 1, 256)),
    ("seq_len", Limit("--seq-len", "sequence length", 1, 100_000)),
    ("seed", Limit("--seed", "seed", 0, MAX_SEED)),
)


def check_options(values: dict[str, Any], limits: dict[str, Limit], flags: bool = True,
                  names: dict[str, str] | None = None) -> None:
    """Every value given (not None) within its limit; the first one out of range raises ``Refused``."""
    for key, value in values.items():
        if value is not None and key in limits:
            limits[key].check(value, flags, (names or {}).get(key))


def check_scale(scale: float, flags: bool = True) -> float:
    return float(SCALE.check(scale, flags))


def check_preset_name(name: str, flag: str = "--preset") -> str:
    """A preset's name: one of the library's (``PRESET_NAMES``) or ``random-N``, N a seed within the seeds' range,
    as the window's Random (seed…) dialog takes it (0 … 2³¹ − 1); else ``Refused`` naming ``flag``."""
    from attention_core.presets import PRESET_NAMES

    head, _, tail = str(name).partition("-")
    if head == "random" and tail.isdigit() and int(tail) > MAX_SEED:
        raise Refused(f"{flag} {name}: the seed {tail} is out of range: expected an integer from 0 to {MAX_SEED}")
    if name not in PRESET_NAMES and not (head == "random" and tail.isdigit()):
        raise Refused(f"{flag} {name}: unknown preset; choose one of {', '.join(PRESET_NAMES)} or random-N (N a "
                      f"seed from 0 to {MAX_SEED})")
    return name


def check_causal_fits(queries: int, keys: int, preset: str) -> None:
    """``--mask causal`` on a preset: the mask is square, so a cross-attention preset (fewer queries than keys) is
    refused naming both flags."""
    if queries != keys:
        raise Refused(f"--mask causal needs as many queries as keys: --preset {preset} has {queries} "
                      f"{'query' if queries == 1 else 'queries'} and {keys} keys (give --mask none)")


def check_device_name(value: str, flag: str = "--device") -> str:
    """``cpu``, ``cuda`` or ``cuda:N`` by their spelling alone (whether that GPU is there needs torch: see
    ``check_device``), so that a typo is refused before torch is imported."""
    name = str(value).strip().lower()
    if name in ("cpu", "cuda") or re.fullmatch(r"cuda:\d+", name):
        return name
    raise Refused(f"{flag} {value}: unknown device; expected cpu, cuda or cuda:N")


def check_device(value: str, flag: str = "--device") -> str:
    """``value`` spelt right (``check_device_name``) and there on this machine (a GPU: torch is imported to ask);
    the device's normal name (``cuda`` -> ``cuda:0``)."""
    name = check_device_name(value, flag)
    if name == "cpu":
        return name
    from attention_core.devices import available_devices, resolve_device

    try:
        return resolve_device(name)
    except ValueError:
        raise Refused(f"{flag} {value} is not available here (available: "
                      f"{', '.join(available_devices())})") from None


# ---------------------------------------------------------------- memory
def memory_budget_mib() -> float:
    """What a run may use: half the memory free now (``MemAvailable``), like the Lab's default limit;
    ``MEMORY_BUDGET_MIB`` in the environment overrides it (tests, a shared machine)."""
    given = os.environ.get("MEMORY_BUDGET_MIB")
    if given:
        try:
            return float(given)
        except ValueError:
            pass
    from attention_core.scaling.memory import available_mib

    return available_mib() / 2.0


def train_memory_mib(config: TrainConfig) -> float:
    """An upper estimate of the memory a training run of ``config`` needs, in MiB (float32 everywhere):
    parameters × 4 (weights, gradients, Adam's two moments); one training batch's activations, kept for the
    backward pass (per layer ~24 numbers per token and channel, ~5 per attention weight; the logits three times);
    one evaluation of the test and train-eval sets at once (forward only, attention maps kept for the head scores);
    the recorded history (the probe's maps at every step) and the data sets (int64 tokens)."""
    t, d, v = config.sequence_length, config.d_model, config.vocab_size
    h, n, b = config.num_heads, config.num_layers, config.batch_size
    params = 2 * v * d + t * d + n * (12 * d * d + 13 * d) + v
    train = n * (b * t * d * 24 + b * h * t * t * 5) + b * t * v * 3
    e = config.test_size + config.train_eval_size
    evaluation = n * (e * h * t * t * 2 + e * t * d * 8) + e * t * v * 2
    history = (config.total_steps + 1) * n * h * t * t
    data = (config.train_size + config.test_size) * t * 2  # int64 = two float32s
    return 4.0 * (4 * params + train + evaluation + history + data) / 2**20


SIZE_FIELDS = ("seq_len", "vocab_size", "d_model", "num_layers", "num_heads", "batch_size", "steps", "epochs")
"""The options a run's memory grows with, in the order a refusal looks for the one to blame."""


def _with(config: TrainConfig, field: str, value: Any) -> TrainConfig:
    changes: dict[str, Any] = {field: value}
    return replace(config, **changes)


def _largest_fitting(config: TrainConfig, field: str, budget: float) -> int:
    """The largest value of ``field`` (others as given) whose estimate fits ``budget``; 0 if none does."""
    lo, hi = int(TRAIN_LIMITS[field].lo), int(getattr(config, field))
    if train_memory_mib(_with(config, field, lo)) > budget:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if train_memory_mib(_with(config, field, mid)) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


TRAIN_FLAGS = {"device": "--device", "task": "--task", "positional": "--positional"}
"""The other ``TrainConfig`` fields ``train`` has a flag for (the sizes' are in ``TRAIN_LIMITS``)."""


def _namer(flags: bool, names: dict[str, str] | None) -> Callable[[str], str]:
    """A ``TrainConfig`` field -> the word a refusal names it by: ``names``'s, else its flag (``flags``) or its
    form label, else the field itself."""
    def name(field: str) -> str:
        if names and field in names:
            return names[field]
        if field in TRAIN_LIMITS:
            return TRAIN_LIMITS[field].name(flags)
        return TRAIN_FLAGS.get(field, field) if flags else field
    return name


def _check_combination(config: TrainConfig, name: Callable[[str], str]) -> None:
    """The combinations ``TrainConfig.validate`` refuses in the fields' words, said in ``name``'s: the heads'
    split of d_model, rotary's even head width, a task's distinct tokens; then the device (its spelling first: a
    typo is refused without importing torch)."""
    d, h, length, vocab, task = config.d_model, config.num_heads, config.seq_len, config.vocab_size, config.task
    if d % h:
        raise Refused(f"{name('d_model')} {d} must be divisible by {name('num_heads')} {h} (each head gets an equal "
                      f"share of d_model)")
    if config.positional == "rotary" and (d // h) % 2:
        raise Refused(f"{name('positional')} rotary needs an even head width: {name('d_model')} {d} / "
                      f"{name('num_heads')} {h} = {d // h}")
    if task == "induction" and length < 2:
        raise Refused(f"{name('task')} induction needs {name('seq_len')} 2 or more (got {length})")
    if task in ("induction", "sort") and length > vocab - 2:
        raise Refused(f"{name('task')} {task} draws {name('seq_len')} {length} distinct tokens: {name('vocab_size')} "
                      f"must be at least {length + 2} (got {vocab}; 2 tokens are reserved, PAD and SEP)")
    check_device(config.device, name("device"))


def check_train(config: TrainConfig, flags: bool = True, budget_mib: float | None = None,
                names: dict[str, str] | None = None) -> TrainConfig:
    """``config`` validated (``TrainConfig.validate``), every option in its range and the whole run within this
    machine's memory; else ``Refused`` with the reason (the option to make smaller and how far). ``flags``: the
    command line's words (the form's labels when False); ``names``: field -> word, where another is wanted."""
    values = {f: getattr(config, f) for f in TRAIN_LIMITS}
    if config.steps is not None:
        values.pop("epochs")
    name = _namer(flags, names)
    check_options(values, TRAIN_LIMITS, flags, {f: name(f) for f in TRAIN_LIMITS})
    if flags or names:  # the form keeps the library's words (its labels sit next to the fields)
        _check_combination(config, name)
    try:
        config.validate()
    except ValueError as exc:
        raise Refused(str(exc)) from None
    budget = memory_budget_mib() if budget_mib is None else budget_mib
    need = train_memory_mib(config)
    if need <= budget:
        return config
    from attention_core.tiny.config import TrainConfig

    default = TrainConfig()
    fields = [f for f in SIZE_FIELDS if getattr(config, f) is not None and not (f == "epochs" and config.steps)]
    fits = {f: _largest_fitting(config, f, budget) for f in fields}
    alone = [f for f in fields if fits[f]]  # options that bring the run within memory by themselves
    if alone:  # blame the one furthest above its default (what the user made big), then the one most over
        worst = max(alone, key=lambda f: (getattr(config, f) / (getattr(default, f) or 1),
                                          getattr(config, f) / fits[f]))
        hint = f"with the other options as given, {name(worst)} fits up to {fits[worst]}"
    else:  # no one option is enough: name the one whose default saves the most
        worst = min(fields, key=lambda f: train_memory_mib(_with(config, f, getattr(default, f) or 1)))
        hint = f"make {name(worst)} and the other sizes smaller"
    where = ("the budget MEMORY_BUDGET_MIB sets" if os.environ.get("MEMORY_BUDGET_MIB")
             else "this machine can spare now (half of what is free)")
    raise Refused(f"{name(worst)} {getattr(config, worst)}: this run needs ~{_gib(need)} of memory, more than "
                  f"the {_gib(budget)} {where}; {hint}")


# ---------------------------------------------------------------- the scaling lab
def check_bench(config: ScalingConfig, flags: bool = True, dtypes: bool = True) -> ScalingConfig:
    """A ``ScalingConfig`` with every option in range (threads None = 0) and at least one series that can run:
    a choice whose every (device, implementation) would be skipped (``dtype_refusal``) is refused, not run
    (``dtypes=False``: not yet, the devices still to be looked up)."""
    values = {f: getattr(config, f) for f in BENCH_LIMITS}
    values["threads"] = config.threads or 0
    check_options(values, BENCH_LIMITS, flags)
    from attention_core.scaling.results import DTYPES, IMPLEMENTATIONS

    for impl in config.impls:
        if impl not in IMPLEMENTATIONS:
            raise Refused(f"{'--impl' if flags else 'implementations'}: unknown implementation {impl!r}; choose "
                          f"from {', '.join(IMPLEMENTATIONS)}")
    if config.dtype not in DTYPES:
        raise Refused(f"{'--dtype' if flags else 'dtype'} {config.dtype!r} is not one of {', '.join(DTYPES)}")
    if config.max_n < config.min_n:
        raise Refused(f"{BENCH_LIMITS['max_n'].name(flags)} {config.max_n} is below "
                      f"{BENCH_LIMITS['min_n'].name(flags)} {config.min_n}")
    try:
        config.validate()
    except ValueError as exc:
        raise Refused(str(exc)) from None
    reasons = _all_refused(config.devices, config.impls, config.dtype) if dtypes else ""
    if reasons:
        raise Refused(f"{'--dtype' if flags else 'dtype'} {config.dtype}: nothing chosen can run it ({reasons})")
    return config


def _all_refused(devices: Iterable[str], impls: Iterable[str], dtype: str) -> str:
    """The reasons, joined, when every (device, implementation) would be skipped; "" when one can run."""
    from attention_core.scaling.results import dtype_refusal

    reasons = {dtype_refusal(d, i, dtype) for d in devices for i in impls}
    return "" if "" in reasons else "; ".join(sorted(reasons))
