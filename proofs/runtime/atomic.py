"""Files written whole or not at all, and report directories that never mix
two runs.

A file is written to a temporary file beside it and renamed over its name:
a reader sees the old file or the new one, and a write that fails (a full
disk, a kill) leaves the old one, never a truncated file. A directory of
files (`gridproof prove --report-dir`) is written into a fresh directory
beside it and put in its place at the end: exchanged with the old one in one
step where the system can (Linux's renameat2), else by two renames, between
which the name is briefly absent, never half old and half new."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import tempfile
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """`text` as the whole content of `path`, or `path` as it was (OSError).
    A link is written through (the file it names is replaced, not the link),
    and what is not a regular file (a terminal, a pipe, /dev/stdout) is
    written to as it is: renaming over it would replace the device."""
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        kind = None
    if kind is not None and not stat.S_ISREG(kind):
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return
    path = Path(os.path.realpath(path)) if os.path.islink(path) else path
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:32]}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fresh_directory_beside(target: Path, prefix: str) -> Path:
    """An empty directory in the target's parent (the same file system, so it
    can be renamed into the target's place), with the usual permissions."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=prefix))
    os.chmod(staging, 0o777 & ~_umask())
    return staging


def put_in_place(staging: Path, target: Path) -> None:
    """The directory `staging` under the name `target`, whose old directory
    (if any) is removed. `staging` is gone afterwards, or holds the old one
    to be removed by the caller if removing it failed."""
    if not os.path.lexists(target):
        try:
            os.rename(staging, target)
            return
        except OSError:
            if not os.path.lexists(target):
                raise  # not made meanwhile: the rename itself cannot be done
    if _exchange(staging, target):
        shutil.rmtree(staging, ignore_errors=True)
        return
    holder = Path(tempfile.mkdtemp(dir=target.parent, prefix=".gridproof-old-"))
    os.rename(target, holder / "previous")
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(holder / "previous", target)
        raise
    finally:
        shutil.rmtree(holder, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Exchanges two paths in one step (renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
