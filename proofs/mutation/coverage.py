"""Whether a mutant's replaced text ran: an equivalence read on Z3 terms only
says something about the mutated expression if the reading evaluated it. A
branch the symbolic reading cannot take (an identity test such as `x is
True` on what is a Z3 Bool there) leaves the mutated text unread, and the
mutant would look equal to the original while it is not.

The tracer follows instructions (not lines), so a mutated operand of a line
that ran, but that was itself skipped (the other arm of a conditional
expression, a short-circuited `and`), does not count as run."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from proofs.faults.patch import Patch


@contextlib.contextmanager
def tracking(patch: Patch) -> Iterator[list[bool]]:
    """Within the block, records in the yielded one-element list whether an
    instruction compiled from the patch's replacing text was executed."""
    filename, first_line, first_column, last_line, end_column = patch.region()
    ran = [False]
    positions: dict[object, list] = {}

    def inside(position) -> bool:
        line, end_line, column, end = position
        if None in position:
            return False
        starts_after = (line, column) >= (first_line, first_column)
        ends_before = (end_line, end) <= (last_line, end_column)
        return starts_after and ends_before

    def per_instruction(frame, event, _arg):
        if event == "opcode" and not ran[0]:
            code = frame.f_code
            if code not in positions:
                positions[code] = list(code.co_positions())
            ran[0] = inside(positions[code][frame.f_lasti // 2])
        return per_instruction

    def on_call(frame, _event, _arg):
        if ran[0] or frame.f_code.co_filename != filename:
            return None
        frame.f_trace_lines = False
        frame.f_trace_opcodes = True
        return per_instruction

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield ran
    finally:
        sys.settrace(previous)
