"""The Multi-head banner under grouped-query heads: it must not claim "exactly as many as one big head" nor that
each head takes its share of K's columns once K and V are narrower; the counts are checked by hand."""

from __future__ import annotations

from app.playground.model.playground import PlaygroundModel


def test_grouped_query_banner_counts_the_narrower_k_and_v():
    m = PlaygroundModel("cat-sat-mat")  # Q, K, V given, d_k = 4
    m.set_heads(2)
    m.set_kv_heads(1)
    text = m.heads_info
    assert "exactly as many as one big head" not in text
    assert "sharing 1 K/V head" in text and "multi-query" in text
    # W_Q and W_O 4x4, W_K and W_V 4x2 (K is 2 wide): 16 + 16 + 8 + 8 = 48, against 4 * 4 * 4 = 64
    assert "<b>48</b>" in text and "against 64" in text


def test_standard_heads_keep_the_old_banner():
    m = PlaygroundModel("cat-sat-mat")
    m.set_heads(2)
    text = m.heads_info
    assert "exactly as many as one big head" in text and "<b>64</b>" in text and "K/V head" not in text
