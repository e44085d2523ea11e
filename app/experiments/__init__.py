"""Experiments: runs side by side. model/ is Qt-free, qt/ draws it, cli.py runs them headless."""
