"""The cost lab: attention's time and peak memory against sequence length (``measure``), the settings, results and
fits (``results``, no torch) and what a device reports of its memory (``memory``). Public names import from
``attention_core``."""
