"""Vectors: queries and keys as arrows. model is Qt-free, qt/ draws it."""
