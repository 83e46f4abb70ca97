"""Wall-clock budgets for `gridproof source`: per Z3 check and per function.

An rlimit bounds most checks, not all: Z3 does not count resources in every
procedure, and a nonlinear feasibility check of an edited `cdiv` ran for
seventeen minutes within its rlimit. So every check the source executor
makes goes through `check`, which runs it under the watchdog
(proofs/runtime/watchdog.py) with a deadline: the check's own budget, or what is
left of the function's, whichever comes first; it then answers unknown. The
watchdog also stops a running check at once on Ctrl-C or SIGTERM
(proofs/runtime/interrupts.py), which `check` then raises as the interrupt.

A function whose budget is spent stops where it is (`poll`, at every branch
the executor takes and every check): `OutOfTime` is raised, which no
`except Exception` of the executor or of the shipped code catches, and the
function's verdict is UNKNOWN, after a concrete search (search.py) that has
its own, separate budget. A loop of pure Python that never branches on a
symbolic value is stopped by an alarm a little past the deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
import time
from collections.abc import Iterator

import z3

from proofs.runtime import interrupts
from proofs.runtime.watchdog import WATCHDOG

CHECK_SECONDS = 20.0  # one Z3 check
FUNCTION_SECONDS = 120.0  # one function's exploration and decision, or the split theorems' together
ALARM_GRACE_SECONDS = 5.0  # past the deadline, before the alarm stops a loop that never polls


class OutOfTime(BaseException):  # noqa: N818 (an interrupt, not an error: BaseException like KeyboardInterrupt)
    """The function's wall-clock budget is spent. A BaseException, so that no
    `except Exception` (the executor's or the shipped code's) takes it for a
    result of the code."""


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("gridproof_source_deadline", default=None)
_limit: contextvars.ContextVar[float] = contextvars.ContextVar("gridproof_source_limit", default=FUNCTION_SECONDS)
_check_seconds: contextvars.ContextVar[float] = contextvars.ContextVar("gridproof_check_seconds", default=CHECK_SECONDS)


@contextlib.contextmanager
def configured(function_seconds: float | None = None, check_seconds: float | None = None) -> Iterator[None]:
    """Within the block, functions get `function_seconds` each and checks `check_seconds`."""
    tokens = []
    if function_seconds is not None:
        tokens.append((_limit, _limit.set(function_seconds)))
    if check_seconds is not None:
        tokens.append((_check_seconds, _check_seconds.set(check_seconds)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def function_seconds() -> float:
    return _limit.get()


@contextlib.contextmanager
def function_budget(seconds: float | None = None) -> Iterator[float]:
    """Within the block, one function's budget runs (nested blocks keep the
    outer deadline if it is sooner). Yields the budget in seconds."""
    limit = _limit.get() if seconds is None else seconds
    deadline = time.monotonic() + limit
    outer = _deadline.get()
    if outer is not None:
        deadline = min(deadline, outer)
    token = _deadline.set(deadline)
    try:
        with _alarm(deadline + ALARM_GRACE_SECONDS):
            yield limit
    finally:
        _deadline.reset(token)


def spent() -> bool:
    deadline = _deadline.get()
    return deadline is not None and time.monotonic() >= deadline


def poll() -> None:
    """Where a function's run stops: on an interrupt, or once its budget is spent."""
    interrupts.raise_if_requested()
    if spent():
        raise OutOfTime()


def check(solver: z3.Solver, *assumptions) -> z3.CheckSatResult:
    """`solver.check(*assumptions)` within the check's budget and the
    function's; unknown when either runs out, the interrupt raised when one
    came."""
    poll()
    deadline = time.monotonic() + _check_seconds.get()
    outer = _deadline.get()
    if outer is not None:
        deadline = min(deadline, outer)
    with WATCHDOG.watching(solver.ctx, deadline):
        answer = solver.check(*assumptions)
    interrupts.raise_if_requested()  # an unknown that was a Ctrl-C is no answer
    return answer


@contextlib.contextmanager
def _alarm(at: float) -> Iterator[None]:
    """A SIGALRM at `at` (monotonic) that raises OutOfTime in the main
    thread, for Python code that never reaches a poll; nothing elsewhere."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable:
        yield
        return
    previous_handler = signal.getsignal(signal.SIGALRM)
    previous_timer = signal.getitimer(signal.ITIMER_REAL)
    if previous_timer[0] > 0:  # someone else's alarm: leave it alone
        yield
        return

    def ring(_signum, _frame):
        raise OutOfTime()

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(at - time.monotonic(), 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
