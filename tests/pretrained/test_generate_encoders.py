"""Encoders (BERT, RoBERTa, DistilBERT) cannot write one token at a time: they read the whole text at once and
predict the tokens behind a mask. ``generate``/``decoder`` refuse them with that reason (ValueError), the command
line exits 2 with it before any token (no file written), and the Model tab's Generate view turns Step and Run off
with the reason beside them (back on for a decoder)."""

from __future__ import annotations

import pytest
from qt_settle import settled

pytest.importorskip("transformers")

from app.cli import main  # noqa: E402
from attention_core import load_pretrained  # noqa: E402
from tests.pretrained.family_models import ENCODERS, build  # noqa: E402

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    return build(tmp_path_factory.mktemp("encoders"), ENCODERS)


def _reason(family: str) -> str:
    return rf"is an encoder \({family}\) that predicts masked tokens"


@pytest.mark.parametrize("name", ENCODERS)
def test_generate_and_decoder_refuse_an_encoder_naming_why(encoders, name):
    model = load_pretrained(encoders[name])
    for call in (lambda: model.generate(PROMPT), lambda: model.decoder(PROMPT, temperature=0.7),
                 lambda: model.generate(PROMPT, cache="window", window=4), lambda: model.generate("")):
        with pytest.raises(ValueError, match=_reason(model.spec.family)):
            call()


def test_a_decoder_is_not_refused(hf_models):
    from attention_core.pretrained.generate import cannot_generate

    assert cannot_generate(load_pretrained(hf_models["gpt2"])) == ""


@pytest.mark.parametrize("name", ENCODERS)
def test_the_command_line_refuses_an_encoder_with_exit_2(encoders, name, tmp_path, capsys):
    out = tmp_path / "g.json"
    code = main(["generate", "--model", str(encoders[name]), "--prompt", PROMPT, "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"attention-playground generate: --model {encoders[name].name} is an encoder"), err
    assert "predicts masked tokens" in err and not out.exists()


def _open_generate(window, qtbot, path):
    host = window.inspect
    tab = host.show()
    host.model.load(path)
    qtbot.waitUntil(lambda: host.model.trace is not None and not host.model.tracing
                    and host.model.model is not None and host.model.model.path == path, timeout=60_000)
    tab.views.setCurrentWidget(tab.generate)
    settled(qtbot)
    return tab.generate


def test_the_generate_view_says_why_beside_step_and_run(window, qtbot, encoders, hf_models):
    view = _open_generate(window, qtbot, encoders["bert"])
    reason = view.model.refusal
    assert "is an encoder (bert) that predicts masked tokens" in reason
    assert not view.step_button.isEnabled() and not view.run_button.isEnabled()
    assert "predicts masked tokens" in view.status_label.text()
    assert view.step_button.toolTip() == reason == view.run_button.toolTip()
    assert not view.model.run(3)  # a script's Run is refused in the same words, nothing made
    assert view.model.steps == [] and not view.model.running and view.model.status == reason
    view = _open_generate(window, qtbot, hf_models["gpt2"])  # a decoder: Step and Run come back
    assert view.model.refusal == "" and view.step_button.isEnabled() and view.run_button.isEnabled()
    assert "predicts masked tokens" not in view.status_label.text()
    view.step_button.click()
    qtbot.waitUntil(lambda: not view.model.running, timeout=60_000)
    assert len(view.model.steps) == 1
