"""What ``top_next`` predicts is said where it is read: an encoder's (BERT, RoBERTa, DistilBERT) are the
tokens *at* each position, which the inspect JSON called "top_next". Its JSON now names them ``top_at_position``, and
``prediction`` says "masked"; a decoder's stay ``top_next`` with "next". The first guess at a masked position is
transformers' argmax there."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from family_models import build, reference  # noqa: E402

from app.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build(tmp_path_factory.mktemp("enc"), ("bert",))["bert"]


def test_an_encoders_json_names_its_predictions_by_what_they_are(bert, hf_models, tmp_path, capsys):
    out = tmp_path / "bert.json"
    assert main(["inspect", "--model", str(bert), "--text", "The quick brown [MASK] jumps.", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["prediction"] == "masked" and "top_next" not in data
    top = data["top_at_position"]
    assert len(top) == len(data["ids"])
    ref = reference(bert, encoder=True)
    with torch.no_grad():
        logits = ref(torch.tensor([data["ids"]])).logits[0].numpy()
    mask = data["tokens"].index("[MASK]")
    assert top[mask][0][1] == int(np.argmax(logits[mask]))  # the token at the masked position, not the one after

    gpt2 = tmp_path / "gpt2.json"
    assert main(["inspect", "--model", str(hf_models["gpt2"]), "--text", "The quick brown fox", "--out",
                 str(gpt2)]) == 0
    decoder = json.loads(gpt2.read_text())
    assert decoder["prediction"] == "next" and "top_next" in decoder and "top_at_position" not in decoder
