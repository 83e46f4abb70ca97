"""Reading a file the user named: every way it can fail becomes one
`UnreadableFileError` line that names the file, never a traceback.

Every reader of a user's file (geometry TOML, result JSON) goes through
`read_user_text`, so binary, non-UTF-8, oversized or unopenable files are
refused the same way whichever command was given them.
"""

from __future__ import annotations

import json
from pathlib import Path

from models.errors import GridproofError

# Far above any geometry or result file (a `--tier all` result is about 1 MB), and a bound on what a
# mistaken path (a disk image, /dev/zero) can make the reader swallow.
MAX_BYTES = 64 * 1024 * 1024


class UnreadableFileError(GridproofError):
    """A named file that cannot be read as text."""


def read_user_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of `path`; `what` says in the error which kind of file was expected."""
    path = Path(path)
    try:
        kind = (
            "file" if path.is_file() else "directory" if path.is_dir() else "missing" if not path.exists() else "other"
        )
        if kind == "file":
            size = path.stat().st_size
            data = path.read_bytes() if size <= MAX_BYTES else b""
    except OSError as error:
        raise UnreadableFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except ValueError:  # an embedded NUL byte in the name itself
        raise UnreadableFileError(f"{str(path)!r}: not a usable file name") from None
    if kind != "file":
        problem = {"directory": "is a directory", "missing": "no such file", "other": "not a regular file"}[kind]
        raise UnreadableFileError(f"{path}: {problem} (expected {what})")
    if size > MAX_BYTES:
        raise UnreadableFileError(f"{path}: {size:,} bytes, too large for {what} (at most {MAX_BYTES:,})")
    if b"\0" in data[:8192]:
        raise UnreadableFileError(f"{path}: a binary file, not {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UnreadableFileError(
            f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}), expected {what}"
        ) from None


def parse_json(text: str, **options):
    """json.loads, where every way the text can fail is a ValueError with a
    message fit for a user: JSONDecodeError's own, or one of the two that
    json.loads raises otherwise (a RecursionError, int()'s ValueError)."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError("arrays or objects nested too deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError as error:
        if "integer string conversion" not in str(error):
            raise  # one of `options` refused a value: its own message
        raise ValueError("an integer with more than 4,300 digits") from None
