"""Tiles: FlashAttention's tiled pass over the Playground's Q, K, V. model.py is Qt-free, view.py and grid.py draw
it, figure.py renders its final state for a file."""
