"""Ctrl-C in a `gridproof` process stops the run, soon and for good.

Left to themselves, Z3 and Python each lose an interrupt. A Z3 check takes
the signal for itself and answers unknown ("interrupted from keyboard"), and
the run goes on with an UNKNOWN verdict. Python raises KeyboardInterrupt
wherever the main thread is, and in a finaliser (Z3's terms are freed in
them all the time) the exception is printed as ignored and dropped.

So Z3 is told to leave the signal alone (its `ctrl_c` parameter), the
interrupt is recorded as well as raised, and the places where a run may
stop (a check returning, a progress line) raise it again if it was dropped.
A check that Z3 is running when the interrupt comes is stopped by the
watchdog (proofs/watchdog.py), which reads the signal from Python's wakeup
file descriptor: the handler itself runs only once the check has returned.
"""

from __future__ import annotations

import os
import signal
import threading

import z3

REQUESTED = threading.Event()
_wakeup: int | None = None  # the reading end of Python's signal wakeup pipe, once installed


def install() -> None:
    """In the main thread of the `gridproof` process, before any work."""
    global _wakeup
    z3.set_param("ctrl_c", False)
    signal.signal(signal.SIGINT, _on_interrupt)
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


def _on_interrupt(signum, frame) -> None:
    REQUESTED.set()
    raise KeyboardInterrupt


def raise_if_requested() -> None:
    """Where a run may stop: raises the interrupt a finaliser dropped."""
    if REQUESTED.is_set():
        raise KeyboardInterrupt


def wakeup_descriptor() -> int | None:
    """What the watchdog waits on beside its deadline: readable once a signal
    with a Python handler has arrived (None: `install` was not called)."""
    return _wakeup


def read_wakeup() -> bool:
    """Empties the wakeup pipe; True if an interrupt was among its signals
    (then REQUESTED is set at once, before the handler runs)."""
    if _wakeup is None:
        return False
    try:
        signals = os.read(_wakeup, 512)
    except BlockingIOError:
        return False
    if signal.SIGINT in signals:
        REQUESTED.set()
        return True
    return False
