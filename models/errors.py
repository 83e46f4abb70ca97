"""The one error every gridproof failure on bad input derives from.

Its message is one line naming the file, field or flag and the problem; the
command line prints it after `gridproof: error:` and exits with status 2.
Engine code (models/) raises it too, so the base lives at the lowest layer.
"""

from __future__ import annotations


class GridproofError(ValueError):
    """Bad input or an impossible request: one line, exit status 2."""


def quoted(text: str, at_most: int = 80) -> str:
    """`text` quoted for an error message, cut to `at_most` characters: the message stays one readable line."""
    return repr(text) if len(text) <= at_most else f"{text[:at_most]!r}... ({len(text):,} characters)"
