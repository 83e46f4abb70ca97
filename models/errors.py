"""The one error every gridproof failure on bad input derives from, and the
helpers that keep its messages one readable line.

Its message is one line naming the file, field or flag and the problem; the
command line prints it after `gridproof: error:` and exits with status 2.
Engine code (models/) raises it too, so the base lives at the lowest layer.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GridproofError(ValueError):
    """Bad input or an impossible request: one line, exit status 2."""


def quoted(text: str, at_most: int = 80) -> str:
    """`text` quoted for an error message, cut to `at_most` characters: the message stays one readable line."""
    return repr(text) if len(text) <= at_most else f"{text[:at_most]!r}... ({len(text):,} characters)"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """The hint `; did you mean 'X'?` for the known name closest to a misspelt `name`, or nothing."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
