"""The app's version, in one place: the window's About box, ``--version``, the bundle's name and ``app.__version__``
read it here (build.spec and the packaging test read this file as text)."""

__version__ = "0.1.0"
