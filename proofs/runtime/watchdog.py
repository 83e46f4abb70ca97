"""The wall-clock outer limit on Z3's checks.

The rlimit is the budget, and it bounds most checks; not all of them: Z3
does not count resources in every procedure, and a deletion check capped at
128,000 rlimit ran for minutes on a plausible model fault. One daemon thread
per process wakes every POLL_SECONDS and interrupts the Z3 context of a
check that has run past its deadline, or at once on a Ctrl-C
(proofs/runtime/interrupts.py); the check then answers unknown. A
Z3 `timeout` per check would do the same at the cost of a timer thread per
check (about 3 s of CPU over --tier all)."""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import z3

from proofs.runtime import interrupts

POLL_SECONDS = 0.5


class _Watchdog:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """A fresh state: also in a forked child (the catalogue's worker
        processes), which has no watchdog thread and may have been forked
        while the parent's held the lock."""
        self._lock = threading.Lock()
        self._watched: tuple[z3.Context, float] | None = None
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, context: z3.Context, deadline: float) -> Iterator[None]:
        """Within the block, `context` is interrupted once time.monotonic() passes `deadline`."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="gridproof-z3-watchdog", daemon=True)
                self._thread.start()
            self._watched = (context, deadline)
        try:
            yield
        finally:
            with self._lock:
                self._watched = None

    def _run(self) -> None:
        while True:
            wakeup = interrupts.wakeup_descriptor()
            if wakeup is None:
                time.sleep(POLL_SECONDS)
            else:
                select.select([wakeup], [], [], POLL_SECONDS)
            interrupted = interrupts.read_wakeup()
            # Under the lock: a check that has returned is unwatched first,
            # so only a running check is interrupted.
            with self._lock:
                if self._watched is not None and (interrupted or time.monotonic() >= self._watched[1]):
                    self._watched[0].interrupt()


WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset)
