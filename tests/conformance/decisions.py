"""Which of the split's decisions a call takes, read off the model.

A recorded call pins the model only on the path it takes: a fault on a path
no recorded call takes passes `matches-recorded-vllm`. `decision` names the
path of one split call as a `decision_inputs.Target`: the stop that sets the
chunk's end (else the alignment, else none), whether an internal checkpoint
is exported, whether the chunk starts on the block grid, and which cache hits
moved its start. The table of a record, or of two (the first → the second):

    cd tests && python3 -m conformance.decisions [RECORD [RECORD]]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from conformance.decision_inputs import HITS, TARGETS, Target
from models.scheduler import SplitCall, SplitParams, chunk_end, internal_checkpoint, max_prefill_tokens
from models.variants import BASELINE
from proofs.catalog.recorded import FUNCTIONS, RECORDED, SPLIT_CALL, SPLIT_PARAMS

# The stops in the order chunk_end tries them (ChunkEnd.ends), after the aligned end.
STOPS = ("next boundary", "lcp", "hash tail", "junction")
DECIDERS = ("past prefill", "none", "aligned end", *STOPS[:-1], "junction exact", "junction floored")


def _aligned_end(p: SplitParams, call: SplitCall) -> int:
    """The end chunk_end clips with its stops: the requested end, aligned down
    to the grid short of the prefill's end (ChunkEnd does not keep it)."""
    end = call.start + call.requested
    aligned = end // p.block * p.block
    aligns = end < call.prefill_end and (aligned > call.start or p.block <= max_prefill_tokens(p))
    return aligned if aligns else end


def decision(p: SplitParams, call: SplitCall) -> Target:
    start = call.start
    if start >= call.prefill_end:
        decider = "past prefill"
    else:
        ends = chunk_end(BASELINE, p, call).ends
        previous = (_aligned_end(p, call), *ends[:-1])
        moved = [stop for stop, end, before in zip(STOPS, ends, previous, strict=True) if end != before]
        if moved and moved[-1] == "junction":
            exact = p.shared_prefix and call.junction <= call.prompt
            decider = "junction exact" if exact else "junction floored"
        elif moved:
            decider = moved[-1]
        else:
            decider = "aligned end" if previous[0] != start + call.requested else "none"
    hits = HITS[(call.local_hit > 0) + 2 * (call.external_hit > 0)]
    return Target(decider, bool(internal_checkpoint(p, call)), start % p.block == 0, hits)


def recorded_calls(path: Path = RECORDED) -> list[tuple[SplitParams, SplitCall]]:
    inputs = FUNCTIONS["split"].inputs
    calls = []
    for row in json.loads(path.read_text(encoding="utf-8"))["split"]["cases"]:
        x = dict(zip(inputs, row[: len(inputs)], strict=True))
        calls.append((SplitParams(**{f: x[f] for f in SPLIT_PARAMS}), SplitCall(**{f: x[f] for f in SPLIT_CALL})))
    return calls


def tally(calls) -> Counter:
    return Counter(decision(p, call) for p, call in calls)


def table(*counts: Counter) -> list[str]:
    """Markdown: a row per decider and internal checkpoint, a column per start; – where unreachable."""
    columns = [(on_grid, hits) for on_grid in (True, False) for hits in HITS]
    lines = [
        "| decider | internal | " + " | ".join(f"{'on' if g else 'off'} grid, {h}" for g, h in columns) + " |",
        "|---|---|" + "---:|" * len(columns),
    ]
    for decider in DECIDERS:
        for internal in (False, True):
            targets = [Target(decider, internal, g, h) for g, h in columns]
            if any(t in TARGETS for t in targets):
                cells = [" → ".join(str(c[t]) for c in counts) if t in TARGETS else "–" for t in targets]
                lines.append(f"| {decider} | {'yes' if internal else 'no'} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str]) -> int:
    counts = [tally(recorded_calls(Path(path))) for path in argv or [RECORDED]]
    print("\n".join(table(*counts)))
    for c in counts:
        outside = sum(n for t, n in c.items() if t not in TARGETS)
        print(
            f"{sum(c.values())} calls, fewest on a reachable path {min(c[t] for t in TARGETS)}, outside them {outside}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
