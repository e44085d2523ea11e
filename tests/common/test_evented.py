"""The one way a model announces a change: declared events, one per name in order, then ``changed`` with all."""

from __future__ import annotations

from app.common.evented import Evented, ModelEvents, event


class _Events(ModelEvents):
    result = event()
    config = event(object)


class _Model(Evented):
    events: _Events

    def __init__(self) -> None:
        super().__init__()
        self.config = "first"


def _recorded(model: _Model) -> list[object]:
    log: list[object] = []
    model.events.result.connect(lambda: log.append("result"))
    model.events.config.connect(lambda c: log.append(("config", c)))
    model.events.status.connect(lambda t: log.append(("status", t)))
    model.events.changed.connect(lambda names: log.append(names))
    return log


def test_each_name_then_changed_with_all_of_them() -> None:
    m = _Model()
    log = _recorded(m)
    m._announce("result", "config")
    assert log == ["result", ("config", "first"), frozenset({"result", "config"})]


def test_a_payload_given_wins_over_the_attribute_and_nothing_is_emitted_for_no_names() -> None:
    m = _Model()
    log = _recorded(m)
    m._announce(config="passing")
    m._announce()
    assert log == [("config", "passing"), frozenset({"config"})]
    assert m.config == "first"


def test_status_carries_its_text_and_a_slot_without_arguments_still_connects() -> None:
    m = _Model()
    log = _recorded(m)
    bare: list[str] = []
    m.events.status.connect(lambda: bare.append("called"))
    m._set_status("ready")
    assert m.status == "ready"
    assert log == [("status", "ready"), frozenset({"status"})]
    assert bare == ["called"]


def test_the_events_annotation_is_the_declaration_and_a_wrong_one_is_refused() -> None:
    assert type(_Model().events) is _Events and _Model.Events is _Events
    try:
        class _Wrong(Evented):
            events: int
    except TypeError as exc:
        assert "ModelEvents subclass" in str(exc)
    else:
        raise AssertionError("an events annotation that is not a ModelEvents subclass was accepted")
