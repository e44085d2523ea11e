"""Device faults seen in the window (issue "Reliability campaign", item 6): CUDA made to fail by monkeypatching —
not available, failing during a computation or a training step, failing during device detection or the warm-up —
and each time the window says so next to the device control or on the status line, goes on on the CPU, and keeps
every number current and every edit."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import app.playground.model.state as state_module
from attention_core.steps import attention_steps

OOM = "CUDA out of memory. Tried to allocate 20.00 MiB"


def gpu_that_fails(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """attention_steps on any device but the CPU raises torch's out-of-memory error; returns the devices asked."""
    asked: list[str] = []

    def steps(q, k, v, *, mask=None, scale=None, device="cpu"):  # noqa: ANN001, ANN202
        asked.append(str(device))
        if str(device) != "cpu":
            raise torch.cuda.OutOfMemoryError(OOM)
        return attention_steps(q, k, v, mask=mask, scale=scale, device="cpu")

    monkeypatch.setattr(state_module, "attention_steps", steps)
    return asked


def test_a_gpu_failing_in_the_playground_falls_back_and_says_so(window, qtbot, monkeypatch) -> None:
    asked = gpu_that_fails(monkeypatch)
    m, c = window.playground, window.controls
    m.set_available_devices(["cpu", "cuda:0"])
    before = m.state.matrices["Q"].copy()
    window.edits.apply("Q[0,0]", lambda mm: mm.set_cell("Q", 0, 0, 2.5))
    window.edits.apply("device", lambda mm: mm.set_device("cuda:0"))
    assert "cuda:0" in asked  # the GPU was really tried
    assert m.device == "cpu" and c.device_combo.currentText() == "cpu"
    assert c.device_note.isVisibleTo(window) and "cuda:0 failed" in c.device_note.text()
    assert "out of memory" in c.device_note.text()
    # nothing lost: the edit before is still there and undoable, every map shows the CPU's numbers now
    assert m.state.matrices["Q"][0, 0] == 2.5
    for name, hm in window.pipeline.heatmaps.items():
        np.testing.assert_array_equal(hm.values(), getattr(m.result, name))
    while window.undo_stack.canUndo():
        window.undo_stack.undo()
    np.testing.assert_array_equal(m.state.matrices["Q"], before)
    # the user picking a device again clears the old failure's note
    window.edits.apply("device", lambda mm: mm.set_device("cpu"))
    assert not c.device_note.isVisibleTo(window)


def test_device_detection_failing_says_why_no_gpu_is_offered(window, qtbot, monkeypatch) -> None:
    import attention_core

    def broken() -> list[str]:
        raise RuntimeError("CUDA driver version is insufficient for CUDA runtime version")

    monkeypatch.setattr(attention_core, "available_devices", broken)
    window.start_device_detection()
    c = window.controls
    qtbot.waitUntil(lambda: c.device_note.isVisibleTo(window), timeout=5000)
    assert "looking for GPUs failed (CUDA driver version is insufficient" in c.device_note.text()
    assert [c.device_combo.itemText(i) for i in range(c.device_combo.count())] == ["cpu"]
    window.edits.apply("Q[1,1]", lambda mm: mm.set_cell("Q", 1, 1, -1.0))  # the playground goes on
    np.testing.assert_array_equal(window.pipeline.heatmaps["weights"].values(), window.playground.result.weights)


def test_a_session_saved_with_a_gpu_opens_on_the_cpu_with_a_note(window, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    from attention_core.devices import available_devices

    assert available_devices() == ["cpu"]
    window.edits.apply("Q[0,1]", lambda mm: mm.set_cell("Q", 0, 1, 1.25))
    path = tmp_path / "gpu.json"
    assert window.save_session_to(path)
    data = json.loads(path.read_text())
    data["state"]["device"] = "cuda:0"  # as if saved on a machine with a GPU
    path.write_text(json.dumps(data))
    assert window.open_session(path)
    m, c = window.playground, window.controls
    assert m.device == "cpu" and m.state.matrices["Q"][0, 1] == 1.25
    assert c.device_note.isVisibleTo(window) and "cuda:0 is not available here" in c.device_note.text()


def test_the_warm_up_failing_is_said_and_training_runs_on_the_cpu(qtbot, tmp_path, monkeypatch) -> None:
    from PySide6.QtCore import QSettings

    import app.training.qt.panel as panel_module
    from app import create_main_window

    def broken_warm_up() -> None:
        raise RuntimeError("CUDA error: initialization error")

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(panel_module, "_warm_up", broken_warm_up)
    w = create_main_window(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
                           warm_up_torch=True, confirm_on_close=False)
    qtbot.addWidget(w)
    w.show()
    panel = w.training_panel
    label = panel.run_controls.status_label
    qtbot.waitUntil(lambda: "warm-up failed" in label.text(), timeout=10000)
    assert "CUDA error: initialization error" in label.text() and "CPU" in label.text()
    assert [panel.form.device.itemText(i) for i in range(panel.form.device.count())] == ["cpu"]
    s = w.training
    s.set_speed(None)
    assert s.start()
    qtbot.waitUntil(lambda: s.run_state in ("finished", "error"), timeout=120000)
    assert s.run_state == "finished", s.status
    assert "warm-up failed" not in label.text()  # a run on the CPU started: the old note no longer describes it
    assert label.text() == s.status
    w.close()
