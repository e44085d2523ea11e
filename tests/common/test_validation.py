"""The one validation layer (app/common/validation.py): ranges that name the option, a run's memory against what
this machine can spare, the Lab's choices; shared by the CLI and the window's forms."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.common.validation import (
    BENCH_LIMITS,
    SCALE,
    TRAIN_LIMITS,
    Limit,
    Refused,
    check_bench,
    check_scale,
    check_train,
    train_memory_mib,
)
from attention_core.scaling.results import ScalingConfig
from attention_core.tiny.config import TrainConfig


def test_a_limit_names_the_option_and_the_range():
    lim = Limit("--threads", "CPU threads", 0, 256)
    assert lim.check(3) == 3 and lim.check(0) == 0 and lim.check(256) == 256
    for bad in (-1, 257, 10000, 2.5, float("nan"), True, "3"):
        with pytest.raises(Refused, match=r"--threads .* is out of range: expected an integer from 0 to 256"):
            lim.check(bad)
    with pytest.raises(Refused, match="^CPU threads 10000 is out of range"):
        lim.check(10000, flags=False)  # the form's words
    assert SCALE.text() == "a positive number up to 1000"
    for bad in (0, -1, 1e308, float("inf"), float("nan")):
        with pytest.raises(Refused, match="--scale"):
            check_scale(bad)
    assert check_scale(1e-3) == 1e-3


@pytest.mark.parametrize("field, value, flag", [
    ("seq_len", 100_000, "--seq-len"), ("vocab_size", 1_000_000_000, "--vocab-size"),
    ("num_layers", 100_000, "--layers"),
    ("seed", 10**23, "--seed"), ("seed", -1, "--seed"), ("steps", 0, "--steps"), ("lr", 0.0, "--lr"),
    ("attention_dropout", 0.95, "--attention-dropout"), ("batch_size", 0, "--batch-size"), ("num_heads", 65, "--heads"),
])
def test_train_options_out_of_range_are_refused_by_name(field, value, flag):
    with pytest.raises(Refused, match=f"^{flag} {value!r} is out of range"):
        check_train(replace(TrainConfig(), **{field: value}), budget_mib=1e12)


def test_the_gui_form_gets_the_same_refusal_in_its_own_words():
    with pytest.raises(Refused, match="^Layers 100 is out of range: expected an integer from 1 to 64"):
        check_train(TrainConfig(num_layers=100), flags=False)


def test_a_combination_the_core_refuses_is_refused_too():
    with pytest.raises(Refused, match="divisible"):
        check_train(TrainConfig(d_model=30, num_heads=4))


def test_memory_estimate_grows_as_the_run_does_and_the_defaults_are_small():
    base = train_memory_mib(TrainConfig())
    assert base < 50  # the default run: tens of MiB (mostly one evaluation of 600 sequences)
    assert train_memory_mib(TrainConfig(seq_len=200)) > 3.5 * train_memory_mib(TrainConfig(seq_len=100))  # ~L²
    assert train_memory_mib(TrainConfig(steps=100_000)) > train_memory_mib(TrainConfig(steps=1000))  # the history
    assert train_memory_mib(TrainConfig(num_layers=8)) > train_memory_mib(TrainConfig(num_layers=2))


def test_a_run_too_big_for_this_machine_names_the_option_and_what_fits():
    config = TrainConfig(seq_len=400)
    need = train_memory_mib(config)
    with pytest.raises(Refused) as info:
        check_train(config, budget_mib=need / 10)
    text = str(info.value)
    assert text.startswith("--seq-len 400: this run needs ~") and "fits up to" in text
    fits = int(text.rsplit(" ", 1)[1])
    assert train_memory_mib(replace(config, seq_len=fits)) <= need / 10 < train_memory_mib(
        replace(config, seq_len=fits + 1))
    assert check_train(replace(config, seq_len=fits), budget_mib=need / 10).seq_len == fits
    with pytest.raises(Refused, match="^--steps 1000000: .* fits up to"):
        check_train(TrainConfig(steps=1_000_000, seq_len=100), budget_mib=8192)


def test_the_budget_is_half_the_free_memory_or_the_environments(monkeypatch):
    from app.common import validation
    from attention_core.scaling.memory import available_mib

    monkeypatch.delenv("MEMORY_BUDGET_MIB", raising=False)
    assert validation.memory_budget_mib() == pytest.approx(available_mib() / 2, rel=0.2)
    monkeypatch.setenv("MEMORY_BUDGET_MIB", "12.5")
    assert validation.memory_budget_mib() == 12.5


def test_bench_choices_name_the_option():
    ok = ScalingConfig(devices=("cpu",), impls=("naive-numpy",), max_n=64)
    assert check_bench(ok) is ok
    cases = [(dict(threads=10000), "--threads 10000 is out of range: expected an integer from 0 to 256"),
             (dict(repeat=0), "--repeat 0"), (dict(max_n=8, min_n=16), "--max-n 8 is below --min-n 16"),
             (dict(impls=("magic",)), "--impl: unknown implementation 'magic'"),
             (dict(dtype="int8"), "--dtype 'int8' is not one of"),
             (dict(dtype="float16"), "--dtype float16: nothing chosen can run it")]
    for changes, words in cases:
        with pytest.raises(Refused, match=words.replace("(", r"\(")):
            check_bench(replace(ok, **changes))
    assert BENCH_LIMITS["threads"].hi == 256 and TRAIN_LIMITS["seed"].hi == 2**31 - 1


def test_the_lab_refuses_a_run_where_nothing_can_run():
    from app.lab.model import ScalingLab

    lab = ScalingLab(devices=["cpu"])
    lab.set_choice(dtype="float16")  # a choice may pass through it (the note says what will be skipped) …
    with pytest.raises(ValueError, match="nothing chosen can run it"):
        lab.start()  # … but not a run of nothing
    assert lab.run_state != "running"
