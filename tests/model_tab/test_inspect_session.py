"""The Model tab's Qt-free part: models found offline, the session (load, trace, cancel, refuse), and a real head as
Playground inputs whose five steps equal the model's own weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.model_tab.model.playground_head import MAX_TOKENS, playground_head, unique_names
from app.model_tab.model.session import InspectSession, own_example
from app.model_tab.model.sources import discover, hub_cache_dir
from attention_core import attention_steps, causal_mask
from tests.tolerance import assert_close


def loaded(path: Path, **kw) -> InspectSession:
    s = InspectSession(**kw)
    s.load(path)
    assert s.wait_idle(120)
    return s


# ---------------------------------------------------------------- sources
def test_models_are_found_offline_in_the_hub_cache_the_app_folder_and_the_recent_list(tmp_path):
    hub = tmp_path / "hf" / "hub"
    snap = hub / "models--openai-community--gpt2" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (hub / "models--broken--none" / "snapshots" / "x").mkdir(parents=True)  # no config.json: not listed
    own = tmp_path / "models"
    own.mkdir()
    (own / "reversal.safetensors").write_bytes(b"x")
    (own / "reversal.history.safetensors").write_bytes(b"x")  # a saved history, not a model
    run = own / "run1"
    run.mkdir()
    (run / "model.safetensors").write_bytes(b"x")
    (run / "config.json").write_text("{}")
    recent = tmp_path / "my-model"
    recent.mkdir()
    found = discover([own], [str(recent), str(tmp_path / "gone")], env={"HF_HOME": str(tmp_path / "hf")})
    assert [(s.label, s.kind) for s in found] == [("my-model", "recent"), ("reversal", "own"), ("run1", "own"),
                                                  ("openai-community/gpt2", "hub")]
    assert found[-1].path == snap and found[2].path == run
    assert hub_cache_dir({"HF_HUB_CACHE": "/x/y"}) == Path("/x/y")
    assert hub_cache_dir({}) == Path.home() / ".cache" / "huggingface" / "hub"


# ---------------------------------------------------------------- the session
def test_an_app_trained_model_opens_and_its_trace_is_current(own_model):
    s = loaded(own_model)
    assert s.load_state == "ready" and s.model is not None and s.model.family == "attention-playground"
    # its tokens are numbers: the session shows it a prompt it reads (L inputs then SEP) instead of English
    assert s.text == own_example(s.model) and s.trace is not None and s.trace.tokens[-1] == "SEP"
    assert s.shape == (2, 4) and s.trace.attentions.shape == (2, 4, len(s.trace), len(s.trace))
    assert "tokens traced" in s.status
    # the next-token list at the last position is the model's softmax, best first
    probs = s.trace.probabilities[-1]
    top = s.top_next()
    assert [i for _n, i, _p in top] == list(np.argsort(-probs, kind="stable")[:5])
    assert top[0][2] == pytest.approx(probs.max())
    s.hover(2)
    assert s.shown_position == 2 and s.top_next()[0][1] == int(np.argmax(s.trace.probabilities[2]))
    s.hover(99)  # outside the text: nothing hovered
    assert s.hovered is None
    s.set_text("3 7 2 SEP")
    assert s.wait_idle() and s.trace.tokens == ["3", "7", "2", "SEP"] and s.traced_text == "3 7 2 SEP"


def test_bad_text_and_bad_heads_are_refused_and_the_trace_is_kept(own_model):
    s = loaded(own_model)
    before = s.trace
    s.set_text("hello world")
    assert s.wait_idle()
    assert s.trace is before and "'hello' is not a token of this model" in s.error
    assert s.status.startswith("Could not trace the text")
    with pytest.raises(ValueError, match="no layer 2 head 0"):
        s.select_head(2, 0)
    s.select_head(1, 3)
    assert s.selected == (1, 3)


def test_a_failing_load_says_why_and_keeps_the_model(own_model, tmp_path):
    s = loaded(own_model)
    model = s.model
    (tmp_path / "pickle").mkdir()
    (tmp_path / "pickle" / "pytorch_model.bin").write_bytes(b"\x80\x04")
    s.load(tmp_path / "pickle")
    assert s.wait_idle()
    assert s.model is model and s.load_state == "ready"
    assert "no config.json" in s.error or "pickle" in s.error
    assert "The model shown before stays." in s.status
    fresh = loaded(tmp_path / "nothing-here")
    assert fresh.load_state == "error" and "no such file or folder" in fresh.error


def test_a_cancelled_load_is_dropped(own_model):
    s = InspectSession()
    s.load(own_model)
    s.cancel()
    assert s.load_state == "empty" and s.status.startswith("Cancelled")
    s.runner._threads[-1].join(60)  # the load finishes in its thread; its result must not land
    s.runner.pump()
    assert s.model is None and s.trace is None


# ---------------------------------------------------------------- a head in the Playground
def test_a_head_becomes_playground_inputs_whose_weights_are_the_models(own_model):
    s = loaded(own_model)
    head = s.head_for_playground(1, 2)
    t = s.trace
    assert head.mask == "causal" and head.note == ""
    assert head.scale == pytest.approx(1 / np.sqrt(t.info.d_head))
    assert head.title == f"{t.name} · layer 1 head 2 · '{s.traced_text}'"
    p = head.preset
    steps = attention_steps(p.q, p.k, p.v, mask=causal_mask(len(t)), scale=head.scale)
    assert_close(steps.weights, t.attentions[1, 2])
    assert len(set(p.query_tokens)) == len(p.query_tokens)  # distinct names, one per position


def fake_trace(n: int, d_head: int = 8, causal: bool = True):
    """A Trace built by hand (one layer, one head) whose attentions follow its own q, k and mask."""
    from attention_core.pretrained import ModelInfo, Trace

    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 1, n, d_head)).astype(np.float32) for _ in range(3))
    mask = causal_mask(n) if causal else None
    w = attention_steps(q[0, 0], k[0, 0], v[0, 0], mask=mask).weights.astype(np.float32)
    info = ModelInfo("gpt2", "gpt2", 1, 1, 1, d_head, d_head, 50, 0, 1024, "float32", 0)
    return Trace("fake", np.arange(n), [f"t{i % 7}" for i in range(n)], np.zeros((n, 50), np.float32),
                 w[None, None], info, q=q, k=k, v=v, scales=(1 / np.sqrt(d_head),), masks=(mask,))


def test_a_long_causal_text_is_cut_exactly_and_a_long_bidirectional_one_is_refused():
    t = fake_trace(40)
    head = playground_head(t, 0, 0, "a long text")
    p = head.preset
    assert p.q.shape == (MAX_TOKENS, 8) and "first 32 of 40 tokens" in head.note
    cut = attention_steps(p.q, p.k, p.v, mask=causal_mask(MAX_TOKENS), scale=head.scale).weights
    assert_close(cut, t.attentions[0, 0, :MAX_TOKENS, :MAX_TOKENS])  # exact: causal
    with pytest.raises(ValueError, match="reads every token"):
        playground_head(fake_trace(40, causal=False), 0, 0)
    with pytest.raises(ValueError, match="at most 128 columns"):
        playground_head(fake_trace(4, d_head=130), 0, 0)
    assert unique_names(["a", "␣b", "a", " "]) == ["a@0", "␣b", "a@2", "␣"]


def test_the_session_never_imports_torch_until_a_model_is_opened(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from app.model_tab.model.session import InspectSession; "
            "s = InspectSession(); s.refresh_sources(); sys.exit(1 if 'torch' in sys.modules else 0)")
    env_home = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert subprocess.run([sys.executable, "-c", code], env=env_home, cwd=Path(__file__).parents[2]).returncode == 0


def test_folders_of_one_name_are_told_apart_in_the_list(tmp_path):
    """Three folders named ``ind`` opened before read "ind — opened before" three times: each now says where."""
    folders = [tmp_path / run / "out" / "ind" for run in ("run-a", "run-b", "run-c")]
    for f in folders:
        f.mkdir(parents=True)
    (tmp_path / "solo").mkdir()
    env = {"HF_HUB_CACHE": str(tmp_path / "no-cache")}
    texts = [s.text for s in discover(recent=[*map(str, folders), str(tmp_path / "solo")], env=env)]
    assert texts == ["ind (…/run-a/out) — opened before", "ind (…/run-b/out) — opened before",
                     "ind (…/run-c/out) — opened before", "solo — opened before"]
