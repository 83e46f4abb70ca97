"""Worker processes for the commands that decide in parallel (`prove`,
`prove --confirm`, `mutate`), and what an interrupt does to them.

A Ctrl-C reaches every process of the terminal's group. The workers ignore
it, so that the parent alone stops: it cancels what has not started,
terminates the workers that are deciding, and `gridproof` says in one line
that it was interrupted. A worker left to the executor's own exit would be
waited for, or, when only the parent had the signal, waited for forever.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import signal
from collections.abc import Iterator

import z3

# Forked where the platform can: a spawned worker imports z3 and the models
# again before its first task. Z3 runs no thread of its own here, so a fork
# copies no lock held.
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


# The signals held back while a worker is forked.
HELD = {signal.SIGINT, signal.SIGTERM}


def context():
    return multiprocessing.get_context(START_METHOD)


def leave_interrupts_to_the_parent() -> None:
    """Run first in every worker process. SIGTERM, the parent's way to stop
    a worker, ends it: the handler a forked worker inherits would raise
    inside its task, which the pool reports and goes on."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    z3.set_param("ctrl_c", False)  # a spawned worker's Z3 would take the signal for itself
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Holds a Ctrl-C (and SIGTERM) back while workers are forked: the parent
    runs Python's at-fork handlers then, and an interrupt raised inside one is
    printed as ignored and lost, the run going on. It is delivered when the
    block ends. The child inherits the mask and keeps the signals held until
    `leave_interrupts_to_the_parent` has set its own handlers: a worker the
    parent terminates before that would otherwise run the parent's handler
    and print a traceback from multiprocessing's bootstrap."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)


@contextlib.contextmanager
def process_pool(jobs: int) -> Iterator[concurrent.futures.ProcessPoolExecutor]:
    """A pool of `jobs` worker processes that stops at once, workers
    terminated, when the block it serves raises (an interrupt included)."""
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=context(), initializer=leave_interrupts_to_the_parent
    )
    try:
        with interrupts_held():
            # A first task starts every worker (forked ones all at once).
            pool.submit(int).result()
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_children()
        raise
    pool.shutdown()


def stop_children() -> None:
    """Ends every worker this process started before it returns: each is asked to stop (SIGTERM), and one
    still alive a second later is killed. A worker forked a moment before holds SIGTERM back until it has
    set its handlers, which on a loaded machine can outlast the second; left to that, it outlived its
    parent."""
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(1)
        if child.is_alive():
            child.kill()
            child.join()
