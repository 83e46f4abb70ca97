"""The `gridproof` command: the parser built from one module per subcommand
(proofs/commands/), and `main`, which turns bad input into one line and exit 2."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import os
import sys

from models.errors import GridproofError
from proofs.commands.arguments import Parser
from proofs.runtime import interrupts
from proofs.runtime.heap import pad_heap_top

# One module of proofs/commands/ each, registered in this order. A command
# line that names one imports only its module: every module imports what its
# command runs (mining, mutation, the real vLLM's loaders), and `prove` would
# otherwise pay for them all at each start.
COMMANDS = ("simulate", "prove", "report", "mine", "mutate", "source", "check", "review", "record")


def build_parser(command: str | None = None) -> Parser:
    """The parser of every command, or of `command` alone (one of COMMANDS)."""
    parser = Parser(
        prog="gridproof",
        description="Prove where a hybrid model's recurrent checkpoints land, for vLLM 0.33.0 and PR457.",
    )
    parser.add_argument("--version", action=_Version, help="show gridproof's version and its solvers', and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS if command is None else (command,):
        importlib.import_module(f"proofs.commands.{name}").add_parser(sub)
    return parser


class _Version(argparse.Action):
    """--version: gridproof's version and its solvers', as installed; read only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from importlib import metadata

        def version(package: str) -> str:
            try:
                return metadata.version(package)
            except metadata.PackageNotFoundError:
                return "not installed"

        solvers = f"z3-solver {version('z3-solver')}, cvc5 {version('cvc5')}"
        print(f"gridproof {version('gridproof')} ({solvers})")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (sys.argv[1:] when None) and return its exit status: the command's own, 2
    on a GridproofError (one line on stderr), 1 when the reader of stdout went away, the signal's status on
    Ctrl-C or SIGTERM. With `argv` None it runs as the command: it installs the interrupt handlers, guards
    stdout, and an interrupt ends the process at once."""
    pad_heap_top()
    as_the_command = argv is None
    if as_the_command:
        interrupts.install()
        if sys.stdout is not None:
            sys.stdout = _StandardOutput(sys.stdout)
    try:
        argv = sys.argv[1:] if argv is None else argv
        named = argv[0] if argv and argv[0] in COMMANDS else None
        args = build_parser(named).parse_args(argv)
        status = args.run(args)
        if sys.stdout is not None:
            sys.stdout.flush()  # a write that fails fails here, not in the interpreter's exit
        return status
    except GridproofError as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted(as_the_command)
    except ctypes.ArgumentError as error:
        # An interrupt that lands while ctypes converts the arguments of a Z3
        # call arrives as this error, the interrupt's name in its message.
        if ": KeyboardInterrupt" not in str(error):
            raise
        return _interrupted(as_the_command)
    except BrokenPipeError:
        # The reader went away (`gridproof prove --json | head`): stop quietly, and keep the interpreter
        # from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


class _StandardOutput:
    """The command's sys.stdout: a write that fails (a full disk) is one line
    and exit 2, as an unusable --report-dir is, not a traceback. A reader
    gone away (BrokenPipeError) is left to `main`."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    @staticmethod
    def _guarded(operation, *arguments):
        try:
            return operation(*arguments)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise GridproofError(f"cannot write the standard output: {error.strerror}") from None


def _interrupted(as_the_command: bool) -> int:
    """Ctrl-C or SIGTERM: one line, and the shell's status for the signal.
    The workers of a parallel run were stopped on the way here
    (proofs/runtime/workers.py). As the command, the process ends at once: the
    interrupt may have left objects half made, whose finalisers would print
    tracebacks at exit."""
    said, status = interrupts.stopped_by()
    start = "\r\033[K" if sys.stderr.isatty() else ""  # over any progress line
    print(f"{start}gridproof: {said}", file=sys.stderr)
    if as_the_command:
        from proofs.runtime import workers  # here: a command that starts none need not import multiprocessing

        workers.stop_children()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a full disk, a closed stream
                stream.flush()
        os._exit(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
