"""``TrainingSession`` is composed of named parts, each with one job, rather than a chain of base classes: its
history (``TrainingHistory``) and the step it shows (``PlaybackCursor``), its run (``TrainingRun``) and its
recorded tools (``RecordedTools``); its one base is the evented-model base every Qt-free model shares."""

from __future__ import annotations

import inspect

from app.common.evented import Evented
from app.common.runner import ThreadRunner
from app.training.model.cursor import PlaybackCursor
from app.training.model.history import TrainingHistory
from app.training.model.recorded import RecordedTools
from app.training.model.run import TrainingRun
from app.training.model.session import TrainingSession
from attention_core.tiny.config import TrainConfig


def test_the_session_has_one_base_the_evented_model():
    assert TrainingSession.__mro__ == (TrainingSession, Evented, object)


def test_each_part_is_its_own_class_in_its_own_module():
    s = TrainingSession(TrainConfig(steps=2), runner=ThreadRunner())
    parts = {"history": TrainingHistory, "cursor": PlaybackCursor, "run": TrainingRun, "tools": RecordedTools}
    for name, cls in parts.items():
        assert type(getattr(s, name)) is cls, name
        assert cls.__mro__ == (cls, object), f"{cls.__name__} is a base class chain"
    modules = {inspect.getmodule(cls).__name__ for cls in (TrainingRun, RecordedTools, TrainingSession)}
    assert len(modules) == 3


def test_the_parts_state_reads_through_the_session_as_before():
    """The documented surface reads the parts' state: the runner and keep_params are the run's, the probe, Try it
    and ablation the tools'."""
    runner = ThreadRunner()
    s = TrainingSession(TrainConfig(steps=2), runner=runner)
    assert s.runner is runner is s.run.runner
    s.keep_params = False
    assert s.run.keep_params is False
    assert s.try_sequence("1 2").error  # no model yet: an error result, kept by the tools
    assert s.try_it is s.tools.try_it
    assert (s.probe, s.probe_error, s.ablated, s.ablation) == (None, "", (), None)
