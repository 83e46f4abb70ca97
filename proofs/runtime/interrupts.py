"""Ctrl-C (or SIGTERM) in a `gridproof` process stops the run, soon and for good.

Left to themselves, Z3 and Python each lose an interrupt. A Z3 check takes
the signal for itself and answers unknown ("interrupted from keyboard"), and
the run goes on with an UNKNOWN verdict. Python raises KeyboardInterrupt
wherever the main thread is, and in a finaliser (Z3's terms are freed in
them all the time) the exception is printed as ignored and dropped.

So Z3 is told to leave the signal alone (its `ctrl_c` parameter), and an
interrupt a finaliser drops is not printed but sent again a moment later,
when the main thread has left the finaliser. A check that Z3 is running
when the interrupt comes is stopped by the watchdog (proofs/runtime/watchdog.py),
which reads the signal from Python's wakeup file descriptor: the handler
itself runs only once the check has returned.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import z3

# The signals that stop a run, and what `gridproof` says of each.
STOPPING = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}

# How long a dropped stop waits before it is sent again.
RESEND_SECONDS = 0.01

REQUESTED = threading.Event()
_received = signal.SIGINT  # the stopping signal that came, once REQUESTED is set
_wakeup: int | None = None  # the reading end of Python's signal wakeup pipe, once installed


def install() -> None:
    """In the main thread of the `gridproof` process, before any work."""
    global _wakeup
    z3.set_param("ctrl_c", False)
    for number in STOPPING:
        signal.signal(number, _on_stop)
    sys.unraisablehook = _sent_again_if_dropped
    if _wakeup is None:
        reading, writing = os.pipe()
        os.set_blocking(reading, False)
        os.set_blocking(writing, False)
        signal.set_wakeup_fd(writing, warn_on_full_buffer=False)
        _wakeup = reading


def _forget() -> None:
    """In a forked child: the parent's interrupt and wakeup pipe are the parent's."""
    global _wakeup
    REQUESTED.clear()
    _wakeup = None


os.register_at_fork(after_in_child=_forget)


def _record(number: int) -> None:
    global _received
    if not REQUESTED.is_set():
        _received = number
        REQUESTED.set()


def _on_stop(number, frame) -> None:
    _record(number)
    raise KeyboardInterrupt


def _sent_again_if_dropped(unraisable) -> None:
    """sys.unraisablehook: an exception a finaliser raised, which Python
    cannot raise further. A stop is sent again from another thread, so that
    the handler runs where the main thread is next; anything else is printed
    as Python prints it."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt) and REQUESTED.is_set():
        threading.Timer(RESEND_SECONDS, os.kill, (os.getpid(), _received)).start()
    else:
        sys.__unraisablehook__(unraisable)


def raise_if_requested() -> None:
    """Where a run may stop: raises the interrupt a finaliser dropped."""
    if REQUESTED.is_set():
        raise KeyboardInterrupt


def stopped_by() -> tuple[str, int]:
    """What to say of the stop, and the exit status: the shell's 128 + the signal."""
    return STOPPING[_received], 128 + _received


def wakeup_descriptor() -> int | None:
    """What the watchdog waits on beside its deadline: readable once a signal
    with a Python handler has arrived (None: `install` was not called)."""
    return _wakeup


def read_wakeup() -> bool:
    """Empties the wakeup pipe; True if a stopping signal was among its
    signals (then REQUESTED is set at once, before the handler runs)."""
    if _wakeup is None:
        return False
    try:
        signals = os.read(_wakeup, 512)
    except BlockingIOError:
        return False
    for number in signals:
        if number in STOPPING:
            _record(number)
    return REQUESTED.is_set()
