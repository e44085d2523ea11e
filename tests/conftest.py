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
# instead of one long test finishing alone at the end. loadfile hands out whole files in this order (see
# pytest_configure), the next to the first worker free: one half of the interrupt campaign on one worker, the close
# campaign then the other half on the other. Not both halves at once: their children leave a core idle at times
# (a window waiting for its signal, a reference run alone), which the in-process tests beside them fill.
FIRST = ("tests/test_interrupts_experiment_to_gui.py", "tests/shell/test_close_campaign.py",
         "tests/test_interrupts.py", "tests/shell/test_currency_oracle.py", "tests/shell/test_monkey.py")


def pytest_configure(config):
    """Keep the order below under ``--dist loadfile``: by default xdist re-sorts the files by their number of tests,
    most first, which put these one- and two-test files last, so the longest ran at the very end."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        if path in FIRST:
            return FIRST.index(path)
        return len(FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)
