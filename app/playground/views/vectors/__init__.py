"""Vectors: queries and keys as arrows, dragged to edit. model.py is Qt-free, view.py and plot.py draw it."""
