"""The one error a pretrained model refuses bad input with.

A subclass of ``ValueError`` so callers that already catch ``ValueError`` (the CLI, the app's models) need nothing new;
every message names the file (or folder) and the reason, so a user can act on it without a traceback.
"""

from __future__ import annotations


class PretrainedError(ValueError):
    """A model folder, file or input text cannot be used; the message names the file and the reason."""
