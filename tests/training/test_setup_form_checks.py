"""The Training tab's set-up form checks with the CLI's layer (app/common/validation.py): the same ranges and the
same memory estimate, in the form's words."""

from __future__ import annotations


def test_the_form_refuses_a_run_this_machine_cannot_hold(qtbot, monkeypatch):
    from app.training.qt.setup import TrainingSetupForm

    form = TrainingSetupForm()
    qtbot.addWidget(form)
    assert form.config() is not None and form.error() == ""
    monkeypatch.setenv("MEMORY_BUDGET_MIB", "200")  # a small machine
    form.seq_len.setValue(16)
    form.length_unit.setCurrentText("steps")
    form.length.setValue(500_000)
    assert form.config() is None
    assert form.error().startswith("Steps 500000: this run needs ~") and "Steps fits up to" in form.error()
    assert "Cannot train: Steps 500000" in form.error_label.text()
    monkeypatch.setenv("MEMORY_BUDGET_MIB", "100000")
    form.length.setValue(500_001)  # any change re-checks
    assert form.config() is not None


def test_the_forms_spin_boxes_stay_inside_the_shared_ranges(qtbot):
    from app.common.validation import TRAIN_LIMITS
    from app.training.qt.setup import TrainingSetupForm

    form = TrainingSetupForm()
    qtbot.addWidget(form)
    for name, field in (("seq_len", "seq_len"), ("vocab_size", "vocab_size"), ("d_model", "d_model"),
                        ("num_heads", "num_heads"), ("num_layers", "num_layers"), ("batch_size", "batch_size"),
                        ("seed", "seed"), ("length", "steps")):
        spin = getattr(form, name)
        assert TRAIN_LIMITS[field].lo <= spin.minimum() and spin.maximum() <= TRAIN_LIMITS[field].hi, name
