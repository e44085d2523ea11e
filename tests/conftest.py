"""Shared test set-up: Qt runs offscreen (no display in CI); hypothesis stays fast on 2 cores."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=40, deadline=None)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# the window fixtures (window, panel, finish_run) for every feature folder's GUI tests
pytest_plugins = ["window_fixtures"]
