"""The Cause view's model (``session.cause``, Qt-free): its numbers are the library's (``logit_lens``,
``attribute``, ``patch``, ``knockout``, each tested against transformers in tests/pretrained/), refusals keep the old
value and say why, the patch sweep runs off the calling thread and Cancel keeps what it measured, and every result
follows the text (a result made for the old text is gone, its caption with it)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerance import assert_close

TEXT = "Mary and John went to the store. John gave a drink to"
CORRUPTED = "Mary and John went to the store. Mary gave a drink to"


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    """A tiny random GPT-2 (2 layers × 4 heads) saved by transformers with the BPE tokenizer tests/pretrained uses."""
    pytest.importorskip("transformers")
    import torch
    import transformers as T

    from tests.pretrained.conftest import _configs, _redraw, train_tokenizer

    torch.manual_seed(0)
    model = T.AutoModelForCausalLM.from_config(_configs()["gpt2"])
    _redraw(model, 0)
    folder = tmp_path_factory.mktemp("cause") / "gpt2"
    model.save_pretrained(folder, safe_serialization=True)
    train_tokenizer().save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture
def session(gpt2_folder):
    from app.model_tab.model.session import InspectSession

    s = InspectSession()
    s.set_text(TEXT)
    s.load(gpt2_folder)
    assert s.wait_idle(120) and s.trace is not None
    s.cause.set_shown(True)
    assert s.cause.wait_idle(120)
    yield s
    s.shutdown()


def test_lens_and_attribution_equal_the_library_at_the_last_position(session):
    c, m = session.cause, session.model
    lens = m.logit_lens(TEXT)
    assert c.lens.labels == lens.labels and c.lens.position == len(session.trace) - 1
    assert_close(c.lens.logits, lens.logits, ulps=64)
    assert c.lens_curve()[0] == lens.top[-1][0][1]  # no target picked: the model's own top prediction
    top = int(lens.top[-1][0][0])
    a = m.attribute(TEXT, target=top)
    assert_close(c.attribution.heads, a.heads, ulps=64)
    assert c.attribution.actual == pytest.approx(a.actual, rel=1e-5)
    assert "position" in c.lens_caption() and "“Mary and John" in c.lens_caption()
    assert f"{a.total:+.4f}" in c.attribution_caption()


def test_a_target_of_two_tokens_is_refused_and_the_old_one_kept(session):
    c = session.cause
    assert c.set_lens_target(" John")
    name, probs, ranks = c.lens_curve()
    assert name == " John"
    assert_close(probs, session.model.logit_lens(TEXT).probs_of(" John"), ulps=64)
    assert not c.set_lens_target("John gave")
    assert "not one" in c.lens_error and c.lens_target == " John"
    assert not c.set_attr_tokens(" John", "Mary gave a")
    assert c.attr_error and c.attr_target == "" and c.attr_foil == ""


def test_the_lens_follows_the_hovered_position_and_a_new_text(session):
    c = session.cause
    session.hover(3)
    assert c.wait_idle(60)
    assert c.lens.position == 3
    assert_close(c.lens.logits, session.model.logit_lens(TEXT, position=3).logits, ulps=64)
    session.set_text("The quick brown fox")
    assert c.lens is None and c.attribution is None  # the old text's numbers are gone at once
    assert session.wait_idle(60) and c.wait_idle(60)
    assert c.lens.tokens == tuple(session.trace.tokens)
    assert "“The quick brown fox”" in c.lens_caption()


def test_patch_runs_off_thread_equals_the_library_and_a_new_text_clears_it(session):
    c = session.cause
    assert not c.set_corrupted("Mary and John")
    assert "tokens" in c.patch_error and c.corrupted == ""
    assert c.set_corrupted(CORRUPTED)
    assert not c.set_corrupted(CORRUPTED + " and more") and c.corrupted == CORRUPTED  # the old one kept
    assert c.set_patch_tokens(" Mary", " John")
    assert not c.set_patch_tokens("Mary gave", "") and (c.patch_target, c.patch_foil) == (" Mary", " John")
    c.set_sweep("heads")
    assert c.start_patch()
    assert c.patch_running  # returned at once: the sweep runs on the runner's thread
    assert c.wait_idle(120) and not c.patch_running
    ref = session.model.patch(TEXT, CORRUPTED, target=" Mary", foil=" John", sweep="heads")
    np.testing.assert_array_equal(c.patching.values, ref.values)
    assert c.patching.clean == ref.clean and "heads" in c.patch_caption()
    session.set_text(CORRUPTED + " the")
    assert c.patching is None and "changed" in c.patch_caption()


def test_cancel_keeps_what_was_measured(session, monkeypatch):
    import attention_core.pretrained.cause.patching as patching

    c = session.cause
    monkeypatch.setattr(patching, "PATCH_BATCH_BYTES", 1)  # one cell per batch: many chances to cancel
    assert c.set_corrupted(CORRUPTED)
    c.set_sweep("resid")
    assert c.start_patch()
    c.cancel_patch()  # before the sweep's first batch: its ~26 one-cell batches are not all run
    assert c.wait_idle(120)
    assert c.patching is not None and not c.patching.completed
    assert np.isnan(c.patching.values).any()


def test_knockout_equals_the_library_and_bad_cells_are_refused(session):
    c = session.cause
    n = len(session.trace)
    assert c.set_knockout(f"{n - 1}→0, {n - 1}→1", "1")
    assert c.wait_idle(60)
    ref = session.model.knockout(TEXT, [(n - 1, 0), (n - 1, 1)], layers=[1])
    assert c.knockout.kl == pytest.approx(ref.kl, rel=1e-9, abs=1e-12)
    np.testing.assert_array_equal(c.knockout.after, ref.after)
    assert not c.set_knockout("3→99", "1")
    assert "outside" in c.knock_error and c.knock_edges == f"{n - 1}→0, {n - 1}→1"
    assert not c.set_knockout("1→0", "7")
    assert "layers 0 to 1" in c.knock_error
    assert f"KL(before ‖ after) = {ref.kl:.4g}" in c.knockout_caption()


def test_a_flurry_of_hovers_runs_one_lens_at_a_time_and_ends_on_the_last(session):
    """Hovering across the strip asked for a lens and an attribution per token, each on its own thread (on GPT-2
    ~0.1 s apiece): now a kind runs once at a time and the newest request starts when it ends."""
    c, runner = session.cause, session.runner
    started = []
    start = runner.start

    def counting(*args):
        started.append(1)
        return start(*args)

    runner.start = counting
    n = len(session.trace)
    for p in range(n):
        session.hover(p)  # nothing delivered in between: every run so far is still under way or undelivered
    assert len(started) == 2  # the first position's lens and attribution; the rest wait
    assert c.wait_idle(60)
    assert len(started) == 4  # then once more each, for the last position
    assert c.lens.position == n - 1 and c.attribution.position == n - 1
    assert_close(c.lens.logits, session.model.logit_lens(TEXT, position=n - 1).logits, ulps=64)


def test_hovering_away_and_back_before_the_lens_arrives_ends_on_the_last(session):
    """The lens for the last position was shown; hover 2 then leave before its run ends: the lens asked for 2
    arrived and stayed, though the pointer had left (the shown lens matched the last position, so nothing reran)."""
    c = session.cause
    session.hover(2)
    session.hover(None)
    assert c.wait_idle(60)
    assert c.lens.position == len(session.trace) - 1 and c.attribution.position == len(session.trace) - 1


def test_captions_say_the_numbers_keep_the_heads_switched_off_in_detect_on(session):
    """The Detect view's heads off apply to the trace, not to the lens, attribution, patch or knockout (the library
    runs the whole model): the captions said only the model's name, as if those heads were off there too."""
    c = session.cause
    session.heads.set_off([(1, 2)])
    assert session.wait_idle(60) and c.wait_idle(60)
    assert "with every head on (1 head off: 1.2 in the Detect view, not here)" in c.lens_caption()
    assert "with every head on" in c.attribution_caption()
