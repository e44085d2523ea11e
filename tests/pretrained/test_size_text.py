"""One formatter of sizes in messages (``attention_core.pretrained.memory.size_text``): a long trace's "not kept"
message said "(0.0 GiB)" for maps of 5 MB; every size is now in the unit that fits."""

from __future__ import annotations

import pytest

from attention_core.pretrained.memory import size_text
from attention_core.pretrained.trace import LongTraceError, NotKept


@pytest.mark.parametrize("n, text", [(0, "0 B"), (812, "812 B"), (5_242_880, "5.24 MB"), (13_100_000, "13.1 MB"),
                                     (548_000_000, "548 MB"), (1.5e9, "1.5 GB"), (22e9, "22 GB"), (4.2e12, "4.2 TB")])
def test_size_text_writes_the_unit_that_fits(n, text):
    assert size_text(n) == text


def test_a_long_traces_message_gives_a_small_size_in_mb():
    kept = NotKept("attentions", (2, 2, 580, 580), "head_map(layer, head)", 580)  # 5.4 MB of float32
    with pytest.raises(LongTraceError) as err:
        kept[0]
    assert "(5.38 MB)" in str(err.value) and "GiB" not in str(err.value)
