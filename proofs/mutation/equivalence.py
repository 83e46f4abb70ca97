"""Is a mutant equivalent to the function it mutates? Decided by Z3.

Both functions are read through models/arith.py with fresh Z3 inputs shaped
as the catalogue's calls are (reach.py: which argument is an Int, which a
Bool, which a fixed value), once per engine variant. The domain: every
integer input non-negative, and every divisor the original divides by
non-zero (its definedness obligations). The mutant is equivalent if, on that
domain, its result equals the original's and it is defined wherever the
original is. A difference Z3 finds is replayed with ints before it is
reported; one that does not replay leaves the question open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import z3

from models import arith
from proofs.faults.patch import Patch, applied, compile_patched, live_function
from proofs.mutation.coverage import tracking
from proofs.mutation.operators import size_kind
from proofs.mutation.reach import BoolLeaf, Call, Fixed, IntLeaf, Record, Sequence_

EQUIVALENCE_RLIMIT = 5_000_000
FIRST_RLIMIT = 1_000_000  # the comparison before the catalogue runs (proofs/mutation/run.py)

EQUIVALENT, DIFFERS, UNDECIDED = "equivalent", "differs", "undecided"


@dataclass
class Equivalence:
    verdict: str  # EQUIVALENT, DIFFERS or UNDECIDED
    detail: str = ""
    witness: dict | None = None  # for DIFFERS: the inputs (variant and arguments) where they differ
    ran: bool = True  # for EQUIVALENT: whether the reading evaluated the mutated text (coverage.py)


def check(
    patch: Patch,
    calls: list[Call],
    rlimit: int = EQUIVALENCE_RLIMIT,
    callers: Sequence[tuple[str, list[Call]]] = (),
) -> Equivalence:
    """`callers`: for a private helper of its module (callers.py), each
    function that reads it and that function's calls. A helper that differs
    from the original only on inputs its callers never pass is equivalent
    when every caller, running the mutant, equals the original caller."""
    answer = _check_function(live_function(patch.module, patch.function), compile_patched(patch), calls, rlimit, patch)
    if answer.verdict == EQUIVALENT or not callers:
        return answer
    for name, caller_calls in callers:
        caller = live_function(patch.module, name)

        def running_the_mutant(*arguments, caller=caller, **keywords):
            with applied(patch):
                return caller(*arguments, **keywords)

        through = _check_function(caller, running_the_mutant, caller_calls, rlimit, patch)
        if through.verdict == UNDECIDED:
            # The helper differing alone decides nothing: its callers may never pass that input.
            return Equivalence(UNDECIDED, f"different alone ({answer.detail}); through {name}: {through.detail}")
        if through.verdict != EQUIVALENT:
            return through
    return Equivalence(
        EQUIVALENT,
        f"different alone ({answer.detail}), but equal in every caller: {', '.join(n for n, _ in callers)}",
    )


def _check_function(original, mutant, calls: list[Call], rlimit: int, patch: Patch) -> Equivalence:
    if not calls:
        return Equivalence(UNDECIDED, "no theorem reads the function with symbolic arguments, so none to compare on")
    ran = False
    for call in calls:
        answer = _check_call(original, mutant, call, rlimit, patch)
        if answer.verdict != EQUIVALENT:
            return answer
        ran = ran or answer.ran
    if not ran:
        return Equivalence(UNDECIDED, "the mutated text did not run in any reading with Z3 terms")
    variants = sorted({c.variant.name for c in calls})
    return Equivalence(EQUIVALENT, f"equal on {len(calls)} argument shapes ({', '.join(variants)})")


def _check_call(original, mutant, call: Call, rlimit: int, patch: Patch) -> Equivalence:
    read_as = dict(call.arguments).get("variant")
    where = f"for {read_as.value.name if isinstance(read_as, Fixed) else call.variant.name}"
    ctx = z3.Context()
    with arith.symbolic_context() as context:
        read = None
        for generalised in (True, False):
            leaves: dict[str, z3.ExprRef] = {}
            arguments = {name: _instantiate(s, name, leaves, generalised, ctx) for name, s in call.arguments}
            start = len(context.obligations)
            try:
                expected = original(**arguments)
            except Exception:  # this shape cannot be read; try the fixed values as captured
                continue
            defined = len(context.obligations)
            try:
                with tracking(patch) as ran:
                    got = mutant(**arguments)
            except Exception as error:  # the mutant fails where the original reads
                return Equivalence(DIFFERS, f"{where}: the mutant raises {type(error).__name__}: {error}")
            read = (leaves, arguments, expected, got, context.obligations[start:defined], context.obligations[defined:])
            break
        if read is None:
            return Equivalence(UNDECIDED, f"{where}: the original cannot be read with Z3 terms")
        leaves, arguments, expected, got, domain, mutant_domain = read
        difference = _differs(expected, got, ctx)
        if difference is True:
            return Equivalence(
                DIFFERS, f"{where}: the result's shape differs ({_describe(expected)} -> {_describe(got)})"
            )
        if difference is False and not mutant_domain:
            return Equivalence(EQUIVALENT, ran=ran[0])
        solver = z3.SimpleSolver(ctx=ctx)
        solver.set("rlimit", rlimit)
        solver.add(*context.definitions, *domain)
        solver.add(*(leaf >= 0 for leaf in leaves.values() if z3.is_int(leaf)))
        solver.add(z3.Or(_term(difference, ctx), z3.Not(z3.And(*mutant_domain, ctx))))
        answer = solver.check()
        if answer == z3.unsat:
            return Equivalence(EQUIVALENT, ran=ran[0])
        if answer == z3.unknown:
            return Equivalence(UNDECIDED, f"{where}: Z3 answered unknown ({solver.reason_unknown()})")
        # A witness with every size at least 1, where there is one: easier to read.
        solver.push()
        solver.add(*(leaf >= 1 for name, leaf in leaves.items() if z3.is_int(leaf) and _is_size(name)))
        if solver.check() != z3.sat:
            solver.pop()
            if solver.check() != z3.sat:  # sat a moment ago, undecided within what is left of the budget
                return Equivalence(UNDECIDED, f"{where}: Z3 found a difference it cannot show again within its budget")
        model = solver.model()
        values = {
            name: (
                z3.is_true(model.eval(leaf, model_completion=True))
                if z3.is_bool(leaf)
                else model.eval(leaf, model_completion=True).as_long()
            )
            for name, leaf in leaves.items()
        }
    return _replayed(original, mutant, call, values, where)


def _replayed(original, mutant, call: Call, values: dict, where: str) -> Equivalence:
    """The difference Z3 found, checked with ints."""
    arguments = {name: _concrete(s, name, values) for name, s in call.arguments}
    witness = {"variant": call.variant.name, **values}
    try:
        expected = original(**arguments)
    except Exception as error:
        return Equivalence(UNDECIDED, f"{where}: Z3's difference does not replay (the original raises {error!r})")
    try:
        got = mutant(**arguments)
    except Exception as error:
        return Equivalence(DIFFERS, f"{where}: the mutant raises {type(error).__name__} on {values}", witness)
    if got != expected:
        return Equivalence(DIFFERS, f"{where}: {_describe(expected)} -> {_describe(got)} on {values}", witness)
    return Equivalence(UNDECIDED, f"{where}: Z3's difference {values} does not replay with ints")


def _is_size(path: str) -> bool:
    """A size by its name; an element of a sequence of sizes (`target_spans[0]`) too."""
    name = path.rsplit(".", 1)[-1]
    if name.endswith("]"):
        name = name.split("[")[0].removesuffix("s")
    return size_kind(name) is not None


def _instantiate(s: object, path: str, leaves: dict, generalised: bool, ctx: z3.Context):
    if isinstance(s, IntLeaf) or (generalised and isinstance(s, Fixed) and type(s.value) is int):
        leaves[path] = z3.Int(path, ctx)
        return leaves[path]
    if isinstance(s, BoolLeaf) or (generalised and isinstance(s, Fixed) and type(s.value) is bool):
        leaves[path] = z3.Bool(path, ctx)
        return leaves[path]
    if isinstance(s, Record):
        return s.cls(**{name: _instantiate(f, f"{path}.{name}", leaves, generalised, ctx) for name, f in s.fields})
    if isinstance(s, Sequence_):
        return s.cls(_instantiate(item, f"{path}[{i}]", leaves, generalised, ctx) for i, item in enumerate(s.items))
    assert isinstance(s, Fixed)
    return s.value


def _concrete(s: object, path: str, values: dict):
    if path in values:
        return values[path]
    if isinstance(s, Record):
        return s.cls(**{name: _concrete(f, f"{path}.{name}", values) for name, f in s.fields})
    if isinstance(s, Sequence_):
        return s.cls(_concrete(item, f"{path}[{i}]", values) for i, item in enumerate(s.items))
    if isinstance(s, (IntLeaf, BoolLeaf)):
        raise KeyError(path)
    return s.value


def _differs(a: object, b: object, ctx: z3.Context):
    """A Z3 Bool (or Python bool) that holds where `a` and `b` differ; True
    when their shapes differ whatever the inputs."""
    scalar = (z3.ExprRef, int, bool)
    if isinstance(a, scalar) and isinstance(b, scalar):
        if not isinstance(a, z3.ExprRef) and not isinstance(b, z3.ExprRef):
            return a != b
        ta, tb = _term(a, ctx), _term(b, ctx)
        if ta.sort() != tb.sort():
            return True
        return z3.simplify(ta != tb)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            return True
        return _any((_differs(x, y, ctx) for x, y in zip(a, b, strict=True)), ctx)
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return _any((_differs(getattr(a, f.name), getattr(b, f.name), ctx) for f in dataclasses.fields(a)), ctx)
    if type(a) is not type(b):
        return True
    return a != b


def _any(parts, ctx: z3.Context) -> object:
    terms = []
    for part in parts:
        if part is True:
            return True
        if part is not False:
            terms.append(part)
    return z3.Or(*terms) if terms else False


def _term(x: object, ctx: z3.Context) -> z3.ExprRef:
    return arith.as_term(x, ctx)


def _describe(value: object) -> str:
    text = repr(value) if not isinstance(value, z3.ExprRef) else value.sexpr()
    return text if len(text) <= 120 else text[:117] + "..."
