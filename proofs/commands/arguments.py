"""What every subcommand's command line shares: a parser whose errors are one
line and exit status 2, and the `type=` converters for its values.

A converter raises `argparse.ArgumentTypeError` with the problem in plain
words; argparse prefixes the flag (`--budget: ...`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from models.errors import GridproofError, quoted
from models.variants import BASELINE, VARIANTS
from proofs.faults.handwritten import resolve

DEFAULT_VARIANT = BASELINE.name
VARIANT_HELP = f"{', '.join(VARIANTS)} or mutant:NAME (default {DEFAULT_VARIANT})"


class UsageError(GridproofError):
    """Bad input from the command line: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, except that a bad command line raises UsageError (one line,
    exit 2, printed by `proofs.cli.main`) instead of printing the usage.

    A (sub)command may also read `--flag_name` as `--flag-name`
    (`underscores_as_dashes`, vLLM's spellings) and refuse every flag it does
    not know with `unknown_flag_hint` saying what it reads instead of
    argparse's "unrecognized arguments"."""

    def __init__(self, *args, underscores_as_dashes: bool = False, unknown_flag_hint: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.underscores_as_dashes = underscores_as_dashes
        self.unknown_flag_hint = unknown_flag_hint

    def error(self, message: str):
        raise UsageError(message.removeprefix("argument "))

    def parse_known_args(self, args=None, namespace=None):
        if self.underscores_as_dashes:
            args = [_dashes(a) for a in (sys.argv[1:] if args is None else args)]
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self.unknown_flag_hint:
            unknown = [a.partition("=")[0] for a in extras if a.startswith("-")] or extras
            self.error(
                f"unknown flag{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} ({self.unknown_flag_hint})"
            )
        return namespace, extras


class Once(argparse.Action):
    """A flag that takes one value and refuses a second: `--theorem a --theorem b` would otherwise decide b
    alone, and say nothing of a."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_{self.dest}_given", False):
            parser.error(f"{option_string}: given twice; it takes one value")
        setattr(namespace, f"_{self.dest}_given", True)
        setattr(namespace, self.dest, values)


def _dashes(argument: str) -> str:
    """`--flag_name[=value]` as `--flag-name[=value]`; anything else as it is."""
    if argument.startswith("--") and "_" in argument:
        name, equals, value = argument.partition("=")
        return name.replace("_", "-") + equals + value
    return argument


def _integer(text: str, kind: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind}, got {quoted(text, 40)}") from None


def positive_integer(text: str) -> int:
    value = _integer(text, "a positive integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_integer(text: str) -> int:
    value = _integer(text, "a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


# Z3 reads an rlimit and a random seed as 32-bit unsigned numbers and takes
# a larger one modulo 2^32, silently: an rlimit of 4,294,967,306 is one of 10.
Z3_UNSIGNED_MAX = 2**32 - 1


def z3_rlimit(text: str) -> int:
    """A Z3 resource budget: a positive integer Z3 can hold."""
    return _within_z3(positive_integer(text))


def z3_seed(text: str) -> int:
    """A Z3 random seed: a non-negative integer Z3 can hold."""
    return _within_z3(non_negative_integer(text))


def z3_seed_count(text: str) -> int:
    """K of the seeds 1..K: a positive integer, every seed one Z3 can hold."""
    return _within_z3(positive_integer(text))


def _within_z3(value: int) -> int:
    if value > Z3_UNSIGNED_MAX:
        raise argparse.ArgumentTypeError(f"must be at most {Z3_UNSIGNED_MAX:,} (Z3 holds it in 32 bits), got {value}")
    return value


def budgets(text: str) -> list[int]:
    """Tokens per step: one positive integer, or a comma-separated list of them."""
    parts = text.split(",")
    for position, part in enumerate(parts, 1):
        where = f" (budget {position} of {len(parts)} in {text!r})" if len(parts) > 1 else f" in {text!r}"
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer or a comma-separated list; {quoted(part, 40)} is not an integer{where}"
            ) from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"every budget must be a positive integer; got {value}{where}")
    return [int(part) for part in parts]


def percentage(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 50, got {quoted(text, 40)}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text!r}")
    return value


# A file name no longer than this, a whole path shorter than that (Linux's NAME_MAX and PATH_MAX).
NAME_MAX = 255
PATH_MAX = 4096


def path_text(text: str) -> str:
    """A path a file system can take: not empty (which Python reads as the
    current directory, and which then wrote there), no name in it longer
    than NAME_MAX bytes and the whole shorter than PATH_MAX (either gave a
    traceback of ENAMETOOLONG wherever the path was first used)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names nothing (write . for the current directory)")
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        raise argparse.ArgumentTypeError(f"{quoted(text, 40)} cannot be a file name") from None
    if b"\0" in encoded:
        raise argparse.ArgumentTypeError(f"{quoted(text, 40)} holds a NUL byte, which no file name holds")
    if len(encoded) >= PATH_MAX:
        raise argparse.ArgumentTypeError(f"a path of {len(encoded):,} bytes, longer than the {PATH_MAX - 1:,} allowed")
    for part in encoded.split(b"/"):
        if len(part) > NAME_MAX:
            name = os.fsdecode(part)
            raise argparse.ArgumentTypeError(
                f"the name {quoted(name, 40)} in the path is {len(part):,} bytes long, "
                f"longer than the {NAME_MAX} a file name can be"
            )
    return text


def path_name(text: str) -> Path:
    """path_text, as a Path."""
    return Path(path_text(text))


def variant_name(text: str) -> str:
    """An engine variant (models/variants.py) or a hand-written mutant:NAME
    (proofs/faults/handwritten.py)."""
    try:
        return resolve(text).name
    except GridproofError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def variant_names(text: str) -> str:
    """One or more variant names, comma-separated; checked, and passed on as given."""
    for name in text.split(","):
        variant_name(name)
    return text
