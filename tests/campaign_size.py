"""How large the campaigns are in this run, and their seed.

The interrupt campaign (tests/test_interrupts*.py), the close campaign (tests/shell/test_close_campaign.py) and the
window monkey (tests/shell/test_monkey.py) were ~1,100 worker-seconds of a 14-17 minute suite. In a normal run
(``./test.sh``, ``pytest``) each runs a small count on a seed that changes every day, so successive runs still walk
new moments; the moments that failed before are drawn every time (each test says which). The full counts run with
``CAMPAIGNS=full``, which ``scripts/campaigns.sh`` sets and ``.ci/run`` runs after ``./test.sh``.

The seed is ``CAMPAIGN_SEED`` when set, else today's date as a number (20261207): a failure names it, and
``CAMPAIGN_SEED=<seed> pytest <file>`` (with ``CAMPAIGNS=full`` for the full count) replays it.
"""

from __future__ import annotations

import datetime as dt
import os

FULL = os.environ.get("CAMPAIGNS", "") == "full"
SEED = int(os.environ.get("CAMPAIGN_SEED") or dt.date.today().strftime("%Y%m%d"))


def size(small: int, full: int) -> int:
    """``full`` under ``CAMPAIGNS=full``, else ``small``."""
    return full if FULL else small


def replay(extra: str = "") -> str:
    """The line a failure prints: how to run this campaign again on the same seed and size."""
    return f"replay: CAMPAIGN_SEED={SEED}{' CAMPAIGNS=full' if FULL else ''}{' ' + extra if extra else ''} pytest ..."
