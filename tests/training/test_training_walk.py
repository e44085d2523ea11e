"""A seeded random walk over every command of ``TrainingSession`` on the default ``ThreadRunner``.

200 actions (settings, speed, start/pause/resume/step/stop/reset, timeline, replay, probe, Try it, heads, save and
load) chosen by ``random.Random(seed)``; events are delivered with ``runner.pump()`` between actions, and some
actions wait a few milliseconds so they land while a run is training. After every action the session must be
consistent (see ``check``). The seed is printed in every failure; ``WALK_SEED=<n>`` replays another walk.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections import Counter
from dataclasses import replace

import pytest

from app.training.model.session import RUN_STATES, TrainingSession
from app.training.model.tools import SPEEDS
from attention_core.tiny.config import TrainConfig

SEED = int(os.environ.get("WALK_SEED", "20251123"))
ACTIONS = 200
BASE = TrainConfig(steps=8, train_size=256, test_size=64, train_eval_size=32, batch_size=32, eval_every=2,
                   d_model=16, num_heads=2, num_layers=1, seed=0)
OTHER_SHAPES = (replace(BASE, d_model=8), replace(BASE, num_layers=2), replace(BASE, seq_len=5, vocab_size=12))


def random_config(rng: random.Random) -> TrainConfig:
    cfg = rng.choice(OTHER_SHAPES) if rng.random() < 0.15 else BASE
    return replace(cfg, steps=rng.randint(8, 20), seed=rng.randint(0, 3)).validate()


def random_tokens(rng: random.Random, session: TrainingSession, valid: bool) -> str:
    cfg = session.model_config or BASE
    if valid:
        return " ".join(str(rng.randrange(2, cfg.vocab_size)) for _ in range(cfg.seq_len))
    return rng.choice(["", "1 2 3", "x y z", " ".join(["99"] * cfg.seq_len), " ".join(["2"] * (cfg.seq_len + 1)),
                       "-3 " * cfg.seq_len, "2.5 " * cfg.seq_len, "0 " * cfg.seq_len])


class Walk:
    def __init__(self, session: TrainingSession, rng: random.Random, folder) -> None:
        self.s, self.rng, self.folder = session, rng, folder
        self.counts: Counter[str] = Counter()
        self.log: list[str] = []
        self.saved: list = []
        self.ended: list[str] = []
        session.events.finished.connect(self.ended.append)

    def where(self) -> str:
        return f"WALK_SEED={SEED}; last actions: {self.log[-12:]}"

    # ------------------------------------------------------------------ actions
    def set_config(self) -> None:
        if self.rng.random() < 0.08:
            self.s.set_config(None, "d_model must be divisible by num_heads")
            self.log.append("set_config(None)")
        else:
            cfg = random_config(self.rng)
            self.s.set_config(cfg)
            self.log.append(f"set_config(steps={cfg.steps}, d={cfg.d_model}, L={cfg.num_layers}, "
                            f"seq={cfg.seq_len}, seed={cfg.seed})")

    def set_speed(self) -> None:
        speed = self.rng.choice([v for _, v in SPEEDS])
        self.s.set_speed(speed)
        self.log.append(f"set_speed({speed})")

    def start(self) -> None:
        if self.s.start_needs_choice():
            new_run = self.rng.choice([True, False, None])
            self.s.start(new_run=new_run)
            self.log.append(f"start(new_run={new_run}) [choice]")
            self.counts[f"start-choice-{new_run}"] += 1
        else:
            self.s.start()
            self.log.append("start()")

    def pause(self) -> None:
        self.s.pause()
        self.log.append("pause()")

    def resume(self) -> None:
        self.s.resume()
        self.log.append("resume()")

    def toggle_pause(self) -> None:
        self.s.toggle_pause()
        self.log.append("toggle_pause()")

    def step(self) -> None:
        self.s.step()
        self.log.append("step()")

    def stop(self) -> None:
        self.s.stop()
        self.log.append("stop()")

    def reset(self) -> None:
        self.s.reset()
        self.log.append("reset()")

    def seek(self) -> None:
        n = len(self.s.history)
        index = self.rng.choice([self.rng.randint(0, max(0, n - 1)), -5, n, n + 7, 10 ** 6])
        self.s.seek(index)
        self.log.append(f"seek({index}) of {n}")

    def go_live(self) -> None:
        self.s.go_live()
        self.log.append("go_live()")

    def replay(self) -> None:
        self.s.replay()
        self.log.append("replay()")

    def tick(self) -> None:
        now = time.perf_counter() + self.rng.choice([0.0, 0.3, 2.0, 60.0])
        self.s.tick(now)
        self.log.append("tick()")

    def set_probe(self) -> None:
        valid = self.rng.random() < 0.6
        text = random_tokens(self.rng, self.s, valid)
        ok = self.s.set_probe(text)
        self.log.append(f"set_probe({text!r})")
        if self.s.run_state == "building":  # refused: the model being built may have another shape
            assert ok is False and "being built" in self.s.probe_error, self.where()
        elif self.s.model_config is not None:
            assert ok is valid, f"set_probe({text!r}) returned {ok}; {self.s.probe_error}; {self.where()}"
            assert bool(self.s.probe_error) is not valid, self.where()

    def try_sequence(self) -> None:
        valid = self.rng.random() < 0.7
        text = random_tokens(self.rng, self.s, valid)
        t = self.s.try_sequence(text)
        self.log.append(f"try_sequence({text!r})")
        has_model = self.s.trainer is not None and self.s.shown_snapshot is not None
        assert (t.result is not None) is (valid and has_model), f"{t}; {self.where()}"
        if t.result is not None:
            assert t.step == self.s.shown_step, self.where()
            assert list(t.result.inputs) == [int(x) for x in text.split()], self.where()

    def toggle_head(self) -> None:
        cfg = self.s.model_config or BASE
        layer, head = self.rng.randrange(cfg.num_layers), self.rng.randrange(cfg.num_heads)
        ok = self.s.toggle_head(layer, head)
        self.log.append(f"toggle_head({layer}, {head}) -> {ok}")

    def restore_heads(self) -> None:
        self.s.restore_heads()
        self.log.append("restore_heads()")
        assert self.s.ablated == (), self.where()

    def save(self) -> None:
        latest = self.s.history.latest
        path = self.folder / f"walk{len(self.saved)}.safetensors"
        if latest is None or latest.params is None or self.s.model_config is None:
            with pytest.raises(RuntimeError):
                self.s.save(path)
            self.log.append("save() refused")
            return
        self.s.save(path)
        self.saved.append((path, latest.step))
        self.log.append(f"save({path.name}) at step {latest.step}")

    def load(self) -> None:
        if not self.saved:
            self.save()
            if not self.saved:
                return
        path, step = self.rng.choice(self.saved)
        self.s.load(path)
        self.log.append(f"load({path.name})")
        assert self.s.wait_idle(30), self.where()
        assert self.s.run_state == "loaded", f"{self.s.run_state}; {self.where()}"
        assert self.s.history.latest.step == step, self.where()

    # ------------------------------------------------------------------ invariants
    def check(self) -> None:
        s, where = self.s, self.where()
        assert isinstance(s.status, str) and s.status.strip(), where
        assert s.run_state in RUN_STATES, where
        assert s.run_state != "error", f"training failed: {s.last_error}; {where}"
        steps = [snap.step for snap in s.history]
        if steps:
            assert steps[0] == 0, f"history starts at {steps[0]}; {where}"
        assert all(a < b for a, b in zip(steps, steps[1:])), f"steps {steps}; {where}"
        assert all(snap.params is not None for snap in s.history), where
        assert 0 <= s.shown_index < max(1, len(s.history)), where
        t = s.try_it
        if t is not None and t.result is not None:
            assert t.step in steps, f"Try it at step {t.step}, recorded {steps}; {where}"
            assert f"step {t.step}" in t.caption, where
        if s.ablation is not None and not s.is_running:
            assert s.ablation.step == s.shown_step, (f"ablation at step {s.ablation.step}, shown step "
                                                     f"{s.shown_step}; {where}")
        if s.ablated:
            # a one-off notice (an action's outcome, e.g. "Saved …") wins over every state until the next change
            assert "switched off" in s.status or s._notice is not None, f"{s.status!r}; {where}"
        snap = s.shown_snapshot
        if snap is not None:
            assert all(not any(math.isnan(x) for x in w.ravel()) for w in snap.probe_weights), where


WEIGHTS = {
    "set_config": 6, "set_speed": 5, "start": 12, "pause": 6, "resume": 5, "toggle_pause": 4, "step": 8, "stop": 5,
    "reset": 4, "seek": 8, "go_live": 4, "replay": 4, "tick": 6, "set_probe": 5, "try_sequence": 7,
    "toggle_head": 6, "restore_heads": 3, "save": 4, "load": 4,
}


def test_random_walk_keeps_the_session_consistent(tmp_path):
    rng = random.Random(SEED)
    session = TrainingSession(BASE)
    walk = Walk(session, rng, tmp_path)
    names, weights = list(WEIGHTS), list(WEIGHTS.values())
    t0 = time.perf_counter()
    try:
        for _ in range(ACTIONS):
            name = rng.choices(names, weights)[0]
            try:
                getattr(walk, name)()
            except AssertionError:
                raise
            except Exception as exc:
                raise AssertionError(f"{name} raised {exc!r}; {walk.where()}") from exc
            walk.counts[name] += 1
            if rng.random() < 0.35:
                time.sleep(rng.choice([0.002, 0.005, 0.01, 0.03, 0.1, 0.3]))
            session.runner.pump()  # type: ignore[attr-defined]
            walk.check()
    finally:
        session.shutdown()
    took = time.perf_counter() - t0
    print(f"WALK_SEED={SEED}: {ACTIONS} actions in {took:.1f} s: {dict(walk.counts)}; runs ended: "
          f"{Counter(walk.ended)}")
    assert not [t for t in threading.enumerate() if t.name == "training-run" and t.is_alive()], walk.where()
    assert all(walk.counts[name] > 0 for name in WEIGHTS), f"{walk.counts}; {walk.where()}"
    assert {"finished", "stopped"} & set(walk.ended), f"no run finished or was stopped: {walk.ended}"
    assert sum(walk.counts[n] for n in WEIGHTS) == ACTIONS
