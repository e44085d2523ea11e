"""The second half of tests/test_interrupts.py's campaign (experiment … gui), in a file of its own so that
``--dist loadfile`` can run it on the other worker, beside the first half (its size and seed: that file's
docstring)."""

from __future__ import annotations

import pytest
from test_interrupts import COMMANDS, check_every_command_stops_cleanly


@pytest.mark.slow
def test_every_command_stops_cleanly_at_any_moment_experiment_to_gui():
    check_every_command_stops_cleanly(COMMANDS[6:])
