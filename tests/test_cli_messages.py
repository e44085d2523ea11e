"""The command line's refusals as a user meets them: decided before torch is imported wherever no tensor is needed,
worded with the flag the user typed (not a library field: ``--d-model 6 … --heads 4``, not ``d_model (6)``), the
reason before argparse's usage block, options that would be silently ignored together refused naming both, and
``probe --checkpoint`` taking a run's folder as ``inspect --model`` does."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from cli_child import run_many as run_child

ROOT = Path(__file__).resolve().parents[1]

def run_many(argvs: list[list[str]], cwd: Path) -> dict:
    """The refusals with a memory budget large enough that only the flags' own ranges refuse."""
    return run_child(argvs, cwd, env={"MEMORY_BUDGET_MIB": "100000"})


def fake_checkpoint(path: Path, seq_len: int) -> Path:
    """A safetensors file that is only a header, with this app's format and a run's L in its metadata: what the
    command line reads before torch (no tensor needed to refuse a position)."""
    extra = json.dumps({"train_config": {"seq_len": seq_len}})
    header = json.dumps({"__metadata__": {"format": "attention-playground/tiny-transformer", "format_version": "1",
                                          "extra": extra}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    return path


def main_err(argv: list[str]) -> tuple[int, str]:
    """``app.cli.main`` in this process: exit code and stderr."""
    from app.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


# (argv, the one line expected to start the refusal, after "attention-playground CMD: ")
TORCH_FREE = [
    (["bench", "--out", "b.csv", "--heads", "0"], "--heads 0 is out of range: expected an integer from 1 to 64"),
    (["bench", "--out", "b.csv", "--repeat", "1000"], "--repeat 1000 is out of range"),
    (["bench", "--out", "b.csv", "--min-n", "64", "--max-n", "16"], "--max-n 16 is below --min-n 64"),
    (["bench", "--out", "b.csv", "--memory-limit-mib", "-5"], "--memory-limit-mib -5.0 is out of range"),
    (["bench", "--out", "b.csv", "--dtype", "float16"], "--dtype float16: nothing chosen can run it"),
    (["bench", "--out", "b.csv", "--devices", "gpu"], "--devices gpu: unknown device; expected cpu, cuda, cuda:N"),
    (["bench", "--out", "b.csv", "--devices", "all", "cpu"], "--devices all cpu: 'all' already means every"),
    (["bench", "--out", "b.csv", "--impl", "fused", "fused"], "--impl fused: named twice"),
    (["inspect", "--model", "empty", "--text", "3 SEP", "--out", "x.json"], "--model empty: no config.json"),
    (["inspect", "--model", "empty", "--text", "3 SEP", "--out", "x.json", "--device", "gpu"],
     "--device gpu: unknown device"),
    (["probe", "--checkpoint", "run", "--position", "9"],
     "--position 9 is out of range: expected an integer from 0 to 4 (the model reads 6 positions"),
    (["probe", "--checkpoint", "empty"], "--checkpoint empty: no model.safetensors in the folder"),
    (["probe", "--checkpoint", "notes.txt"], "--checkpoint notes.txt: not a safetensors file"),
    (["probe", "--preset", "cat-sat-mat", "--position", "5"],
     "--position 5 is out of range: expected an integer from 0 to 1 (--preset cat-sat-mat has 3 keys"),
    (["probe", "--preset", "it-animal-street", "--position", "0"],
     "--mask causal needs as many queries as keys: --preset it-animal-street has 1 query and 3 keys"),
    (["probe", "--preset", "nope", "--position", "0"], "--preset nope: unknown preset"),
    (["export", "--preset", "cat-sat-mat", "--view", "nope", "--out", "x.png"], "--view nope: unknown view"),
    (["export", "--preset", "it-animal-street", "--view", "weights", "--out", "x.png", "--mask", "causal"],
     "--mask causal needs as many queries as keys"),
    (["train", "--out", "r", "--d-model", "6", "--heads", "4"], "--d-model 6 must be divisible by --heads 4"),
    (["train", "--out", "r", "--positional", "rotary", "--d-model", "12", "--heads", "4"],
     "--positional rotary needs an even head width: --d-model 12 / --heads 4 = 3"),
    (["train", "--out", "r", "--task", "sort", "--seq-len", "20"],
     "--task sort draws --seq-len 20 distinct tokens: --vocab-size must be at least 22 (got 16"),
    (["train", "--out", "r", "--device", "gpu"], "--device gpu: unknown device; expected cpu, cuda or cuda:N"),
    (["experiment", "--preset", "tasks", "--out", "e", "--steps", "-3"],
     "--steps -3 is out of range: expected an integer from 1 to 1000000"),
    (["experiment", "--preset", "tasks", "--out", "e", "--device", "gpu"], "--device gpu: unknown device"),
    (["experiment", "--preset", "nope", "--out", "e"], "--preset nope: unknown preset"),
]


def test_refusals_name_the_flag_typed_and_import_no_torch(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "run").mkdir()
    fake_checkpoint(tmp_path / "run" / "model.safetensors", seq_len=3)
    (tmp_path / "notes.txt").write_text("not a model, long enough to be read as a header's length")
    out = run_many([argv for argv, _ in TORCH_FREE], tmp_path)
    for (argv, words), res in zip(TORCH_FREE, out["results"]):
        lines = [ln for ln in res["err"].splitlines() if ln.strip()]
        assert res["code"] == 2 and len(lines) == 1, (argv, res)
        assert lines[0].startswith(f"attention-playground {argv[0]}: {words}"), (argv, lines[0])
    assert not out["torch"], "a refusal that needs no tensor imported torch"


def test_argparse_says_the_reason_first_then_the_usage():
    code, err = main_err(["train", "--seed", "abc", "--out", "r"])
    lines = err.splitlines()
    assert code == 2 and lines[0] == "attention-playground train: error: argument --seed: invalid int value: 'abc'"
    assert lines[1].startswith("usage: attention-playground train")
    code, err = main_err(["inspect", "--model", "m", "--txt", "3"])  # unknown to the command: the command says so
    assert code == 2 and err.splitlines()[0] == "attention-playground inspect: error: unrecognized arguments: --txt 3"
    code, err = main_err(["bench"])
    assert err.splitlines()[0] == "attention-playground bench: error: the following arguments are required: --out"


@pytest.mark.parametrize(("argv", "words"), [
    (["train", "--out", "r", "--epochs", "1", "--steps", "5"],
     "attention-playground train: error: argument --steps: not allowed with argument --epochs"),
    (["inspect", "--model", "m", "--text", "3", "--out", "x.json", "--how", "mean"],
     "attention-playground inspect: --how applies to --ablate only"),
    (["inspect", "--model", "m", "--text", "3", "--out", "x.json", "--seq-len", "5"],
     "attention-playground inspect: --seq-len applies to --detect and --ablate only"),
    (["inspect", "--model", "m", "--text", "3", "--out", "x.json", "--seed", "5"],
     "attention-playground inspect: --seed applies to --detect and --ablate only"),
    (["inspect", "--model", "m", "--text", "3", "--detect", "induction", "--out", "x.json"],
     "attention-playground inspect: --text does not apply to --detect"),
    (["inspect", "--model", "m", "--detect", "induction", "--layer", "0", "--out", "x.json"],
     "attention-playground inspect: --layer does not apply to --detect"),
    (["inspect", "--model", "m", "--text", "3", "--ablate", "0.1", "--out", "x.json"],
     "attention-playground inspect: --out does not apply to --ablate"),
    (["inspect", "--model", "m", "--text", "3", "--ablate", "0.1", "--head", "1", "--layer", "0"],
     "attention-playground inspect: --layer does not apply to --ablate"),
    (["experiment", "--list", "--out", "e"],
     "attention-playground experiment: --list takes no other option (got --out)"),
    (["experiment", "--list", "--steps", "3"], "attention-playground experiment: --list takes no other option"),
    (["lessons", "--list", "--answers", "wrong"], "attention-playground lessons: --answers applies to --run only"),
    (["--self-test", "st", "train", "--out", "r"], "attention-playground: error: --self-test opens the window; it "
                                                   "takes no command (got train)"),
])
def test_options_ignored_together_are_refused_naming_both(argv, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = main_err(argv)
    assert code == 2 and err.splitlines()[0].startswith(words), err
    assert list(tmp_path.iterdir()) == []  # nothing ran: no run, no window's files


def test_a_runs_file_is_answered_in_its_own_words_and_the_flags_in_theirs(tmp_path):
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps({"base": {"steps": 3}, "runs": [{"seq_len": 1000}, {"seq_len": 4}]}))
    code, err = main_err(["experiment", "--runs", str(runs), "--out", str(tmp_path / "e")])
    assert code == 2 and "run 1: seq_len 1000 is out of range: expected an integer from 1 to 512" in err
    runs.write_text(json.dumps({"runs": [{"d_model": 30, "num_heads": 4}, {}]}))
    code, err = main_err(["experiment", "--runs", str(runs), "--out", str(tmp_path / "e")])
    assert code == 2 and "d_model" in err and "num_heads" in err and "--d-model" not in err, err
    code, err = main_err(["experiment", "--runs", str(runs), "--out", str(tmp_path / "e"), "--steps", "0"])
    assert err == "attention-playground experiment: --steps 0 is out of range: expected an integer from 1 to 1000000\n"


def test_the_window_form_keeps_its_own_words():
    """The Training tab's form (``flags=False``) shows the library's reason next to its fields, unchanged."""
    from app.common.validation import Refused, check_train
    from attention_core.tiny.config import TrainConfig

    with pytest.raises(Refused, match=r"^d_model \(30\) must be divisible by num_heads \(4\)"):
        check_train(TrainConfig(d_model=30, num_heads=4), flags=False, budget_mib=1e9)


def test_the_checkpoint_format_read_without_torch_is_the_librarys():
    from app.training.cli import CHECKPOINT_FORMAT
    from attention_core.tiny.checkpoint import FORMAT

    assert CHECKPOINT_FORMAT == FORMAT


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A run's folder as ``train --out`` writes it (model.safetensors, config.json, history.csv), trained here."""
    from app.training.cli import write_run_folder
    from attention_core import task_recipe, train_task

    trainer = train_task(task_recipe("reversal", steps=3, seq_len=4, cpu_threads=1))
    out = tmp_path_factory.mktemp("probe") / "run"
    out.mkdir()
    write_run_folder(out, trainer)
    return out


def test_probe_takes_the_run_folder_that_inspect_takes(run_folder, capsys):
    from app.cli import main

    assert main(["probe", "--checkpoint", str(run_folder), "--position", "2"]) == 0
    by_folder = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["probe", "--checkpoint", str(run_folder / "model.safetensors"), "--position", "2"]) == 0
    by_file = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert by_folder == by_file
    # the causal mask: nothing up to the position can change, whatever comes after it (exactly 0, by construction)
    assert by_folder["causal"] is True and by_folder["max_change_before"] == 0.0 and by_folder["position"] == 2
    code, err = main_err(["probe", "--checkpoint", str(run_folder), "--position", "7"])
    assert code == 2 and "--position 7 is out of range: expected an integer from 0 to 6" in err
