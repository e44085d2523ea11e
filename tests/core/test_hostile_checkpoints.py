"""Hostile files handed to the loaders: a model saved by ``save_model_files`` (``NAME.safetensors`` + ``NAME.json``)
and its history written by ``save_history`` (``NAME.history.safetensors``), each mutated in more than 30 ways.

Every mutation that makes a file unusable must be refused by ``load_checkpoint`` / ``load_history`` *and* by
``TrainingSession.load`` with a ``CheckpointError`` whose message names the file and says why, and a session that
held a trained run keeps it (same history, same last step, same run state, no thread started). A pickle is never
unpickled (its ``__reduce__`` would write a marker file). The few damages that cannot be detected are listed in
``ACCEPTED`` with the reason, and the test checks they load exactly as documented.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from app.training.model.session import TrainingSession
from attention_core.tiny.checkpoint import CheckpointError, history_path, load_checkpoint, load_history
from attention_core.tiny.config import TrainConfig

CFG = TrainConfig(steps=4, train_size=64, test_size=16, train_eval_size=8, batch_size=16, eval_every=2,
                  d_model=16, num_heads=2, num_layers=1, seed=3)
SEED = 20240611
MARKER = "pickle-ran.marker"


# ---------------------------------------------------------------------------------------------- building blocks
def split(blob: bytes) -> tuple[dict, bytes]:
    """A safetensors blob -> (header dict, data bytes)."""
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def join(header: object, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def header_len(blob: bytes) -> int:
    return struct.unpack("<Q", blob[:8])[0]


def edit_meta(blob: bytes, change: Callable[[dict], None]) -> bytes:
    header, data = split(blob)
    change(header["__metadata__"])
    return join(header, data)


def edit_inner(key: str, change: Callable[[object], object]) -> Callable[[bytes], bytes]:
    """Change the JSON stored as a string under metadata ``key``."""
    def mutate(blob: bytes) -> bytes:
        def inner(meta: dict) -> None:
            meta[key] = json.dumps(change(json.loads(meta[key])))
        return edit_meta(blob, inner)
    return mutate


def first_float_tensor(header: dict) -> str:
    return next(k for k, v in header.items() if k != "__metadata__" and v["dtype"] in ("F32", "F64"))


def set_value(value: float) -> Callable[[bytes], bytes]:
    """Overwrite the first element of the first float tensor."""
    def mutate(blob: bytes) -> bytes:
        header, data = split(blob)
        info = header[first_float_tensor(header)]
        fmt = "<f" if info["dtype"] == "F32" else "<d"
        start = info["data_offsets"][0]
        return join(header, data[:start] + struct.pack(fmt, value) + data[start + struct.calcsize(fmt):])
    return mutate


def edit_tensor(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def mutate(blob: bytes) -> bytes:
        header, data = split(blob)
        change(header[first_float_tensor(header)])
        return join(header, data)
    return mutate


def flip(offset_of: Callable[[bytes, random.Random], int], bit_seed: int) -> Callable[[bytes], bytes]:
    def mutate(blob: bytes) -> bytes:
        rng = random.Random(SEED + bit_seed)
        off = offset_of(blob, rng)
        out = bytearray(blob)
        out[off] ^= 1 << rng.randrange(8)
        return bytes(out)
    return mutate


def in_length_prefix(blob: bytes, rng: random.Random) -> int:
    return rng.randrange(0, 5)  # the low bytes of the little-endian header length


STRUCTURAL = set(b'{}[]:,"')


def in_header_structure(blob: bytes, rng: random.Random) -> int:
    """A JSON structural character of the header (outside the escaped metadata strings)."""
    n = header_len(blob)
    raw = blob[8:8 + n]
    spots, in_string, escaped = [], False, False
    for i, c in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif c == ord("\\"):
                escaped = True
            elif c == ord('"'):
                in_string = False
                spots.append(i)
        elif c == ord('"'):
            in_string = True
            spots.append(i)
        elif c in STRUCTURAL:
            spots.append(i)
    return 8 + rng.choice(spots)


class Evil:
    def __reduce__(self):
        return (Path.write_text, (Path(os.environ["HOSTILE_MARKER"]), "unpickled!"))


@dataclass(frozen=True)
class Mutation:
    id: str
    mutate: Callable[[bytes], bytes] | None = None  # bytes -> bytes; None: ``special`` does the work
    special: str = ""
    session_only: bool = False  # only the app's loader can see it (the training config is not the model's)


def truncations() -> list[Mutation]:
    return [
        Mutation("truncated-to-4-bytes", lambda b: b[:4]),
        Mutation("truncated-after-length", lambda b: b[:8]),
        Mutation("truncated-mid-header", lambda b: b[:8 + header_len(b) // 2]),
        Mutation("truncated-after-header", lambda b: b[:8 + header_len(b)]),
        Mutation("truncated-mid-data", lambda b: b[:8 + header_len(b) + (len(b) - 8 - header_len(b)) // 2]),
        Mutation("truncated-last-byte", lambda b: b[:-1]),
        Mutation("one-byte-appended", lambda b: b + b"\x00"),
    ]


def common() -> list[Mutation]:
    big = 2 ** 31
    return [
        Mutation("empty", lambda b: b""),
        *truncations(),
        *[Mutation(f"bitflip-length-prefix-{i}", flip(in_length_prefix, i)) for i in range(3)],
        *[Mutation(f"bitflip-header-structure-{i}", flip(in_header_structure, 10 + i)) for i in range(4)],
        Mutation("random-bytes", lambda b: random.Random(SEED).randbytes(len(b))),
        Mutation("random-bytes-small-length", lambda b: struct.pack("<Q", 64)
                 + random.Random(SEED + 1).randbytes(200)),
        Mutation("header-length-2GB", lambda b: struct.pack("<Q", big) + b[8:]),
        Mutation("header-length-2GB-tiny-file", lambda b: struct.pack("<Q", big) + b"{}"),
        Mutation("header-not-json", lambda b: join_raw(b"this is not json at all!", split(b)[1])),
        Mutation("header-json-list", lambda b: join([1, 2, 3], split(b)[1])),
        Mutation("header-json-number", lambda b: join(42, split(b)[1])),
        Mutation("tensor-entry-is-a-string", lambda b: _tensor_entry_string(b)),
        Mutation("dtype-is-a-number", edit_tensor(lambda t: t.__setitem__("dtype", 7))),
        Mutation("dtype-unknown", edit_tensor(lambda t: t.__setitem__("dtype", "F128"))),
        Mutation("shape-is-a-string", edit_tensor(lambda t: t.__setitem__("shape", "16x16"))),
        Mutation("huge-declared-dimensions", edit_tensor(lambda t: t.__setitem__("shape", [2 ** 40, 2 ** 40]))),
        Mutation("data-offsets-past-end", edit_tensor(lambda t: t.__setitem__("data_offsets", [0, 2 ** 40]))),
        Mutation("metadata-is-a-list", lambda b: _meta_replaced(b, ["format"])),
        Mutation("metadata-missing", lambda b: _meta_replaced(b, None)),
        Mutation("metadata-missing-format", lambda b: edit_meta(b, lambda m: m.pop("format"))),
        Mutation("future-format-version", lambda b: edit_meta(b, lambda m: m.__setitem__("format_version", "2"))),
        Mutation("format-version-not-a-number",
                 lambda b: edit_meta(b, lambda m: m.__setitem__("format_version", "one"))),
        Mutation("foreign-format-name", lambda b: edit_meta(b, lambda m: m.__setitem__("format", "pytorch/zip"))),
        Mutation("nan-value", set_value(float("nan"))),
        Mutation("inf-value", set_value(float("inf"))),
        Mutation("minus-inf-value", set_value(float("-inf"))),
        Mutation("pickle-with-payload", lambda b: pickle.dumps({"state_dict": Evil()})),
        Mutation("path-is-a-folder", special="folder"),
        Mutation("unreadable-permissions", special="unreadable"),
    ]


def join_raw(raw: bytes, data: bytes) -> bytes:
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def _tensor_entry_string(blob: bytes) -> bytes:
    header, data = split(blob)
    header[first_float_tensor(header)] = "a tensor"
    return join(header, data)


def _meta_replaced(blob: bytes, value: object) -> bytes:
    header, data = split(blob)
    if value is None:
        header.pop("__metadata__")
    else:
        header["__metadata__"] = value
    return join(header, data)


MODEL_ONLY = [
    Mutation("metadata-missing-model-config", lambda b: edit_meta(b, lambda m: m.pop("model_config"))),
    Mutation("model-config-not-json", lambda b: edit_meta(b, lambda m: m.__setitem__("model_config", "{oops"))),
    Mutation("model-config-is-a-list", edit_inner("model_config", lambda c: [c])),
    Mutation("model-config-missing-vocab", edit_inner("model_config", lambda c: {k: v for k, v in c.items()
                                                                              if k != "vocab_size"})),
    Mutation("model-config-wrong-type", edit_inner("model_config", lambda c: {**c, "d_model": "sixteen"})),
    Mutation("model-config-negative-dims", edit_inner("model_config", lambda c: {**c, "d_model": -16})),
    Mutation("model-config-other-shape", edit_inner("model_config", lambda c: {**c, "d_model": 32})),
    Mutation("model-config-heads-do-not-divide", edit_inner("model_config", lambda c: {**c, "num_heads": 3})),
    Mutation("extra-not-json", lambda b: edit_meta(b, lambda m: m.__setitem__("extra", "[1,"))),
    Mutation("train-config-wrong-type", session_only=True, mutate=edit_inner("extra", lambda e: {
        **e, "train_config": {**e["train_config"], "lr": "fast"}})),
    Mutation("train-config-impossible", session_only=True, mutate=edit_inner("extra", lambda e: {
        **e, "train_config": {**e["train_config"], "batch_size": 0}})),
    Mutation("step-not-a-number", session_only=True, mutate=edit_inner("extra", lambda e: {**e, "step": "many"})),
    Mutation("tensor-renamed", lambda b: _rename_first(b)),
]

HISTORY_ONLY = [
    Mutation("metadata-missing-reports", lambda b: edit_meta(b, lambda m: m.pop("reports"))),
    Mutation("reports-not-json", lambda b: edit_meta(b, lambda m: m.__setitem__("reports", "[{"))),
    Mutation("reports-is-a-dict", edit_inner("reports", lambda r: {"0": r[0]})),
    Mutation("report-missing-loss", edit_inner("reports", lambda r: [{k: v for k, v in row.items() if k != "loss"}
                                                                     for row in r])),
    Mutation("report-layers-wrong-type", edit_inner("reports", lambda r: [{**row, "layers": "one"} for row in r])),
    Mutation("report-probe-wrong-type", edit_inner("reports", lambda r: [{**row, "probe": "3 4 5"} for row in r])),
    Mutation("report-more-layers-than-tensors", edit_inner("reports", lambda r: [{**row, "layers": 5} for row in r])),
    Mutation("report-names-missing-row", edit_inner("reports", lambda r: r + [dict(r[-1], step=999)])),
    # load_history reads these; TrainingSession.load refuses them (they would fail later, in Try it or a view)
    Mutation("param-tensor-renamed", session_only=True, mutate=lambda b: _rename(b, "00002/param/")),
    Mutation("param-tensor-reshaped", session_only=True, mutate=lambda b: _reshape(b, "00002/param/")),
    Mutation("attention-map-reshaped", session_only=True, mutate=lambda b: _reshape(b, "00001/probe_weights/")),
    Mutation("head-scores-reshaped", session_only=True,
             mutate=lambda b: _reshape(b, "00003/head_reversal_scores")),
    Mutation("probe-too-short", session_only=True,
             mutate=edit_inner("reports", lambda r: [{**row, "probe": row["probe"][:-1]} for row in r])),
]


def _rename(blob: bytes, prefix: str) -> bytes:
    header, data = split(blob)
    name = next(k for k in header if k.startswith(prefix))
    header[name + "x"] = header.pop(name)
    return join(header, data)


def _reshape(blob: bytes, prefix: str) -> bytes:
    """Same bytes, another shape: (a, b, ...) -> (a * b * ..., 1)."""
    header, data = split(blob)
    name = next(k for k in header if k.startswith(prefix) and len(header[k]["shape"]) >= 1)
    header[name]["shape"] = [int(np.prod(header[name]["shape"])), 1]
    return join(header, data)


def _rename_first(blob: bytes) -> bytes:
    header, data = split(blob)
    name = first_float_tensor(header)
    header[name + ".renamed"] = header.pop(name)
    return join(header, data)


MUTATIONS = {"model": common() + MODEL_ONLY, "history": common() + HISTORY_ONLY}
CASES = [pytest.param(kind, m, id=f"{kind}-{m.id}") for kind, ms in MUTATIONS.items() for m in ms]


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A finished run saved once: NAME.safetensors, NAME.json, NAME.history.safetensors, NAME.history.csv."""
    folder = tmp_path_factory.mktemp("good")
    s = TrainingSession(CFG)
    s.set_speed(None)
    try:
        assert s.start() and s.wait_idle(60) and s.run_state == "finished"
        return s.save(folder / "run.safetensors")
    finally:
        s.shutdown()


@pytest.fixture(scope="module")
def holder(saved):
    """A session holding a trained (loaded) run, reused by every case: a refused load must leave it alone."""
    s = TrainingSession(None)
    s.load(saved)
    assert s.wait_idle(60) and s.run_state == "loaded" and len(s.history) == CFG.steps + 1
    yield s
    s.shutdown()


def copy_run(saved: Path, folder: Path) -> Path:
    for p in saved.parent.iterdir():
        shutil.copy(p, folder / p.name)
    return folder / saved.name


def session_state(s: TrainingSession) -> tuple:
    latest = s.history.latest
    return (len(s.history), latest.step if latest else None, s.run_state, s.trainer, s.loaded_from, s.status,
            s.is_alive)


# ---------------------------------------------------------------------------------------------- the tests
def test_there_are_at_least_30_mutations_of_each_kind():
    assert len(MUTATIONS["model"]) >= 30 and len(MUTATIONS["history"]) >= 30


@pytest.mark.parametrize(("kind", "mutation"), CASES)
def test_hostile_file_is_refused_and_the_session_keeps_its_run(kind, mutation, saved, holder, tmp_path,
                                                               monkeypatch):
    model = copy_run(saved, tmp_path)
    target = model if kind == "model" else history_path(model)
    marker = tmp_path / MARKER
    monkeypatch.setenv("HOSTILE_MARKER", str(marker))
    if mutation.special == "folder":
        target.unlink()
        target.mkdir()
    elif mutation.special == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("running as root: root reads a file whatever its permissions, so chmod 000 cannot make "
                        "it unreadable here")
        target.chmod(0)
    else:
        assert mutation.mutate is not None
        target.write_bytes(mutation.mutate(target.read_bytes()))

    loader = load_checkpoint if kind == "model" else load_history
    if mutation.session_only:  # the file reads; what it says does not fit the model, which only the app checks
        loader(target)
    else:
        with pytest.raises(CheckpointError) as direct:
            loader(target)
        message = str(direct.value)
        assert str(target) in message, message
        assert len(message) > len(str(target)) + 5, f"no reason given: {message!r}"

    before = session_state(holder)
    if kind == "history" and mutation.special == "folder":
        # ACCEPTED: a folder where the history belongs is no history file at all; the model loads alone with
        # the "history was not saved" note (load_session_files only reads NAME.history.safetensors if it is a
        # file), exactly like a model saved by the CLI. load_history itself refuses the folder (above).
        t = TrainingSession(None)
        try:
            t.load(model)
            assert t.wait_idle(60) and t.run_state == "loaded" and len(t.history) == 2
            assert "history was not saved" in t.status
        finally:
            t.shutdown()
    else:
        with pytest.raises(CheckpointError) as via_session:
            holder.load(model)
        message = str(via_session.value)
        assert str(model) in message or str(target) in message, message
        holder.runner.pump(0.05)
        assert session_state(holder) == before
    assert not marker.exists(), "a pickle was unpickled"


# ---------------------------------------------------------------------------------------------- documented accepts
def _flip_data(blob: bytes, rng: random.Random) -> int:
    start = 8 + header_len(blob)
    return rng.randrange(start, len(blob))


ACCEPTED_FLIPS = [pytest.param(kind, i, id=f"{kind}-bitflip-data-{i}") for kind in ("model", "history")
                  for i in range(3)]


@pytest.mark.parametrize(("kind", "i"), ACCEPTED_FLIPS)
def test_bit_flip_in_tensor_data_is_undetectable(kind, i, saved, tmp_path):
    """ACCEPTED: safetensors carries no checksum, so a flipped bit in the weights' bytes is a valid file whose one
    number differs. When that number is still finite (the case for these seeds: a flip cannot turn the small
    exponents of trained weights into the all-ones of NaN/inf) nothing can tell it from a trained value; the
    check here is that the loader then reads exactly one element differently and nothing else."""
    model = copy_run(saved, tmp_path)
    target = model if kind == "model" else history_path(model)
    good = target.read_bytes()
    target.write_bytes(flip(_flip_data, 100 + i)(good))

    def flat(values) -> np.ndarray:
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values])

    if kind == "model":
        a = load_checkpoint(saved)[0].state_dict()
        b = load_checkpoint(target)[0].state_dict()
        va, vb = flat(a[k] for k in sorted(a)), flat(b[k] for k in sorted(b))
    else:
        def tensors(entries) -> np.ndarray:
            out = []
            for r, _, params in entries:
                out += [r.head_reversal_scores, *r.probe_weights, *(params[k] for k in sorted(params or {}))]
            return flat(out)
        va, vb = tensors(load_history(history_path(saved))), tensors(load_history(target))
    assert va.shape == vb.shape
    assert np.isfinite(vb).all()
    assert int((va != vb).sum()) == 1


def test_damaged_json_beside_the_model_is_not_read(saved, tmp_path):
    """ACCEPTED: NAME.json is a copy of the metadata for people and other tools; loading reads the config from the
    safetensors file only, so a damaged JSON changes nothing about what loads."""
    model = copy_run(saved, tmp_path)
    model.with_suffix(".json").write_bytes(b"\x00{not json")
    m, meta = load_checkpoint(model)
    assert meta["extra"]["step"] == CFG.steps
    t = TrainingSession(None)
    try:
        t.load(model)
        assert t.wait_idle(60) and t.run_state == "loaded" and len(t.history) == CFG.steps + 1
    finally:
        t.shutdown()


def test_the_pickle_payload_is_live(tmp_path, monkeypatch):
    """The pickle case above proves something only if unpickling it would leave the marker: check that here."""
    marker = tmp_path / MARKER
    monkeypatch.setenv("HOSTILE_MARKER", str(marker))
    pickle.loads(pickle.dumps({"state_dict": Evil()}))  # noqa: S301 - our own payload, to prove it works
    assert marker.read_text() == "unpickled!"
