"""Ctrl-C (or SIGTERM) on a run: one line, exit status 130 (143), no worker left behind, and
no wait for the work in hand. A terminal's Ctrl-C reaches the whole process
group; `kill -INT` of the parent alone once left the workers of a parallel
run waiting for tasks and `gridproof` waiting for them, for ever."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

import pytest

from proofs import cli
from proofs.commands import simulate

pytestmark = pytest.mark.slow  # interrupted runs of every command

PROVE = ["prove", "--tier", "all", "--no-cache"]
# (arguments, whether the whole group has the signal or the parent alone, the signal)
RUNS = {
    "prove-terminal": ([*PROVE, "--jobs", "2"], True, signal.SIGINT),
    "prove-parent-only": ([*PROVE, "--jobs", "2"], False, signal.SIGINT),
    # A job's timeout in CI: the workers were left running when their parent died.
    "prove-terminated": ([*PROVE, "--jobs", "2"], False, signal.SIGTERM),
    # In one process the signal may land in a Z3 check, which once took it
    # for itself: that entry came out UNKNOWN and the run went on.
    "prove-in-process": ([*PROVE, "--jobs", "1"], False, signal.SIGINT),
    # Mutants are forked one by one: an interrupt landing in Python's
    # at-fork handlers was once printed as ignored, and the run went on.
    "mutate-parent-only": (["mutate", "--module", "deploy", "--jobs", "2"], False, signal.SIGINT),
}


def _interrupted(arguments: list[str], whole_group: bool, number: int) -> tuple[int, str, list[str]]:
    """Starts `gridproof ARGUMENTS` in a session of its own, interrupts it
    once its first mutant or entry is decided, and returns its exit status,
    its standard error and the processes of its session still alive."""
    run = subprocess.Popen(
        [sys.executable, "-m", "proofs.cli", *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines = []
    try:
        for line in run.stderr:
            lines.append(line)
            if line.startswith("["):
                break
        if whole_group:
            os.killpg(run.pid, number)
        else:
            run.send_signal(number)
        _, rest = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return run.returncode, "".join(lines) + rest, _left_in_session(run.pid)


def _left_in_session(session: int, grace: float = 10.0) -> list[str]:
    """The processes of the session still alive `grace` seconds after its leader ended, with their command
    lines: a worker killed as its parent exits may take a moment to go on a loaded machine, but one left
    running (as workers once were, for ever) is still there."""
    deadline = time.monotonic() + grace
    while True:
        left = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True).stdout.split()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return [
        subprocess.run(["ps", "-o", "pid=,cmd=", "-p", pid], capture_output=True, text=True).stdout.strip() or pid
        for pid in left
    ]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_an_interrupted_run_stops_with_one_line(run):
    arguments, whole_group, number = RUNS[run]
    status, stderr, left = _interrupted(arguments, whole_group, number)
    assert status == 128 + number, stderr
    assert "Traceback" not in stderr and "UNKNOWN" not in stderr, stderr
    assert stderr.splitlines()[-1] == ("gridproof: interrupted" if number == signal.SIGINT else "gridproof: terminated")
    assert left == []


def test_an_interrupt_inside_a_z3_call_is_an_interrupt(monkeypatch, capsys):
    """ctypes renames an interrupt that lands while it converts a call's
    arguments; any other ArgumentError is a fault and is raised."""

    def raising(error):
        def run(arguments):
            raise error

        return run

    monkeypatch.setattr(simulate, "run", raising(ctypes.ArgumentError("argument 1: KeyboardInterrupt: ")))
    assert cli.main(["simulate", "kimi-k3-tp16-dcp16"]) == 130
    assert capsys.readouterr().err == "gridproof: interrupted\n"

    monkeypatch.setattr(simulate, "run", raising(ctypes.ArgumentError("argument 1: TypeError: wrong")))
    with pytest.raises(ctypes.ArgumentError):
        cli.main(["simulate", "kimi-k3-tp16-dcp16"])


def test_an_interrupt_that_ctypes_wrapped_is_not_an_error_verdict(monkeypatch):
    """A broad `except Exception` that turns a fault into an ERROR verdict also
    catches ctypes.ArgumentError, which is how an interrupt landing in a Z3
    call's argument conversion arrives; once a stop is requested it is raised.
    `source` once finished its run so, to exit 1 on the ERROR it made."""
    from proofs.engine.solver import decide
    from proofs.runtime import interrupts

    def wrapped_interrupt(formula, variables, variant):
        raise ctypes.ArgumentError("argument 1: KeyboardInterrupt: ")

    assert decide(wrapped_interrupt, (), None).verdict == "ERROR"  # no stop requested: a fault
    monkeypatch.setattr(interrupts, "REQUESTED", interrupts.threading.Event())
    interrupts.REQUESTED.set()
    with pytest.raises(KeyboardInterrupt):
        decide(wrapped_interrupt, (), None)


def _holding_sigterm_back(started) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    started.set()
    time.sleep(60)


def test_a_worker_that_holds_sigterm_back_is_still_stopped():
    """A worker forked a moment before the interrupt holds SIGTERM back until its handlers are set; on a
    loaded machine that outlasted the second it was given, and it outlived its parent."""
    from proofs.runtime import workers

    context = workers.context()
    started = context.Event()
    worker = context.Process(target=_holding_sigterm_back, args=(started,), daemon=True)
    worker.start()
    assert started.wait(30)
    workers.stop_children()
    assert not worker.is_alive()
    assert worker.exitcode == -signal.SIGKILL
