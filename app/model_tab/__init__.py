"""The Model tab: open a real model (or one trained here) offline and see its heads on your text. The package is
named as its tab reads; its command is ``inspect`` (what it does). model/ is Qt-free (sources, session, a head as
Playground inputs), qt/ draws it, cli.py is ``inspect``."""
