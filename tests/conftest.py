"""Shared test set-up: Qt runs offscreen (no display in CI); hypothesis stays fast on 2 cores."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=40, deadline=None)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# the window fixtures (window, panel, finish_run) for every feature folder's GUI tests
pytest_plugins = ["window_fixtures"]


# The campaigns and other long tests first: with two workers (test.sh runs ``-n 2``) the rest fills in beside them
# instead of one long test finishing alone at the end.
FIRST = ("tests/test_interrupts.py", "tests/shell/test_close_campaign.py", "tests/shell/test_monkey.py",
         "tests/shell/test_currency_oracle.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        if path in FIRST:
            return FIRST.index(path)
        return len(FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)
