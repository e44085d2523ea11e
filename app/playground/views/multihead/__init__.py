"""Multi-head: the split into heads, each head's weights, the concatenation and W_O."""
