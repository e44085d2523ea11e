"""The Playground's views behind Steps, one folder each with the same file names: ``view.py`` (the Qt
widget), ``model.py`` (its Qt-free part, where it has one), ``__main__.py`` (the view alone, for development).
The tab builds each on first use from ``registry.py``."""
