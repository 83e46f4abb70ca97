"""The C heap's padding, set once per process before Z3 works in it.

Every entry of the catalogue makes and drops a Z3 context, and Z3 frees and
allocates again in bursts. With glibc's default padding of 128 KiB, the top
of the heap is handed back to the kernel after a burst and faulted in again
by the next: over `gridproof prove --tier all --jobs 1`, a fifth of the
contexts took 7 ms to make instead of under 1 ms, and the run spent 0.65 s
in the kernel. A padding of 256 MiB keeps the top in the process (the peak
resident memory stays about 210 MB): 0.16 s in the kernel (docs/speed.md).
The padding reserves address space, not memory."""

from __future__ import annotations

import ctypes

M_TOP_PAD = -2  # glibc's mallopt parameter: bytes added to each request that grows the heap
TOP_PAD_BYTES = 256 << 20


def pad_heap_top() -> bool:
    """Set glibc's heap padding to TOP_PAD_BYTES; False where the C library is
    not glibc (the setting is then the platform's own, and only speed differs)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_TOP_PAD, TOP_PAD_BYTES))
