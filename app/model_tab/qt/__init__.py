"""The Model tab's Qt views: sources and loading, the text and its tokens, the head grid, one head large, the
layer's flow, the next-token list."""
