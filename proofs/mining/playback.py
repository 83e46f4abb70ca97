"""Playback: a mined counterexample as a small JSON document, and everything
that replays it: the same document drives the replay test, the report's drawing and, for the
baseline, a call into the real vLLM.

A document holds the theorem, the obligation, the variant it was mined from,
its inputs, and the expected outcome of the same inputs under every variant
(`fails`, `holds`, `rejected` by the configuration check, or `outside` the
hypotheses), plus the fix: the inputs changed the way a fixed variant demands,
with the outcomes expected then. Where the inputs describe a prefill (a
symbolic deployment, a prompt and per-step budgets), the document also carries
that prefill as the model runs it (`scenario`) and, for `baseline`, as the real
vLLM 0.33.0 split runs it (`real_vllm`). A case built from a geometry file also
carries the geometry and its figures.

Documents are named by a hash of their identity (theorem, obligation, variant,
inputs), so mining the same counterexample twice writes nothing new.
tests/regressions/test_regressions.py replays the whole corpus.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from models.errors import GridproofError
from models.files import parse_json
from models.geometry import DRAFT, RECURRENT, TARGET, Deployment, Geometry, Request, parse_geometry
from models.plan import Plan, plan
from models.prefill import Trace, run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from models.variants import VARIANTS
from proofs.catalog import CATALOGUE, Obligation
from proofs.catalog.base import deployment, indexed, split_params, symbolic_groups
from proofs.deployment.simulate import offload_restore
from proofs.faults.handwritten import in_effect, resolve
from proofs.mining.miner import FAILS, HOLDS, REJECTED, Found, View, has_deployment, outcome

FORMAT = "gridproof-regression/1"
FIX_VARIANT = "pr457-guarded"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO / "tests" / "regressions"


class PlaybackError(GridproofError):
    """A case that cannot be built or does not replay; the message is one line."""


class CaseTooLong(GridproofError):
    """A geometry whose prefill is too long to list in a case: bad input, exit status 2."""


# --- identity -----------------------------------------------------------------------------------


def identity(doc: dict) -> dict:
    return {k: doc[k] for k in ("theorem", "obligation", "variant", "inputs")}


def case_hash(doc: dict) -> str:
    text = json.dumps(identity(doc), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def file_name(doc: dict) -> str:
    variant = doc["variant"].replace(":", "-")
    geometry = f"--{doc['geometry']['name']}" if "geometry" in doc else ""
    return f"{doc['theorem']}--{variant}{geometry}--{case_hash(doc)}.json"


def obligation_of(doc: dict) -> Obligation:
    theorem = CATALOGUE[doc["theorem"]]
    for obligation in (theorem.trace_search, *theorem.obligations):
        if obligation is not None and obligation.name == doc["obligation"]:
            return obligation
    raise PlaybackError(f"{doc['theorem']}: no obligation named {doc['obligation']!r}")


def replay_outcome(doc: dict, variant: str, changes: dict | None = None) -> str:
    """The outcome of the document's inputs (with `changes`) under `variant`."""
    return outcome_under(variant, obligation_of(doc).formula, {**doc["inputs"], **(changes or {})})


def outcome_under(variant: str, formula, inputs: dict) -> str:
    """The outcome of `inputs` under the variant or mutant named `variant`."""
    with in_effect(variant) as chosen:
        return outcome(formula, chosen, inputs)


# --- building a document ----------------------------------------------------------------------


def kills(theorem: str) -> list[str]:
    """The mutants the manifest says must refute this theorem."""
    from proofs.run.runner import load_manifest

    expectation = load_manifest().get(theorem)
    return [v for v in (expectation.expected if expectation else {}) if v.startswith("mutant:")]


def expectations(obligation: Obligation, theorem: str, inputs: dict) -> dict[str, str]:
    variants = (*VARIANTS, *kills(theorem))
    return {v: outcome_under(v, obligation.formula, inputs) for v in variants}


def explicit_cadence_fix(obligation: Obligation, inputs: dict) -> dict | None:
    """The fix for a deployment: the same deployment with an explicit
    --mamba-block-size equal to the lcm of the target-attention spans, the
    cadence pr457-guarded's check demands (baseline ignores it). For a
    prefill only: elsewhere an input may be pinned to the old cadence (a
    published position), and the expectations per variant say what fixes it."""
    if not is_prefill(obligation):
        return None
    spans = deployment(resolve(FIX_VARIANT), inputs).target_spans
    cadence = math.lcm(*spans)
    changes = {"explicit": True, "user_cadence": cadence}
    listed = " and ".join([", ".join(map(str, spans[:-1])), str(spans[-1])] if len(spans) > 1 else [str(spans[0])])
    return {
        "variant": FIX_VARIANT,
        "changes": changes,
        "why": (
            f"the same deployment with an explicit --mamba-block-size {cadence}, the lcm of the target-attention "
            f"spans {listed}: the cadence {FIX_VARIANT}'s check demands"
        ),
        "expected": {v: outcome_under(v, obligation.formula, {**inputs, **changes}) for v in VARIANTS},
    }


def case_document(found: Found, views: list[View], command: str) -> dict:
    """The document for one mined counterexample; replays it on the model
    (and the real vLLM where that applies) and raises PlaybackError if it
    does not fail there."""
    obligation = obligation_of({"theorem": found.theorem, "obligation": found.obligation})
    theorem = CATALOGUE[found.theorem]
    labels = {v.text: v.label for v in views}
    doc = {
        "format": FORMAT,
        "theorem": found.theorem,
        "obligation": found.obligation,
        "variant": found.variant,
        "statement": theorem.statement,
        "inputs": found.inputs,
        "class": [{"view": t, "label": labels.get(t, t), "holds": c} for t, c in found.cls.items()],
        "minimal": found.minimal,
        "explanation": found.explanation.to_json(),
        "mined_by": command,
    }
    return complete_document(doc, obligation)


def complete_document(doc: dict, obligation: Obligation) -> dict:
    """Add expectations, the fix, the prefill scenario and the real-vLLM
    replay to a document that has its identity and inputs."""
    inputs = doc["inputs"]
    doc["expected"] = expectations(obligation, doc["theorem"], inputs)
    if doc["expected"][doc["variant"]] != FAILS:
        raise PlaybackError(
            f"{doc['theorem']} / {doc['variant']}: the counterexample does not replay on the concrete model "
            f"(outcome {doc['expected'][doc['variant']]!r}, not 'fails'): {json.dumps(inputs, sort_keys=True)}"
        )
    fix = explicit_cadence_fix(obligation, inputs)
    if fix is not None:
        doc["fixes"] = [fix]
    else:
        doc["fixes"] = []
    if is_prefill(obligation):
        doc["scenario"] = scenario(obligation, doc["variant"], inputs)
        if not doc["scenario"]["trace"]["off_target"]:
            raise PlaybackError(
                f"{doc['theorem']} / {doc['variant']}: the trace obligation fails, but its steps run with ints "
                "publish nothing off the target boundaries: the formula and the model disagree. "
                f"Inputs: {json.dumps(inputs, sort_keys=True)}"
            )
        if doc["variant"] == "baseline":
            doc["real_vllm"] = real_vllm_section(doc)
    return doc


# --- the prefill a trace counterexample describes ---------------------------------------------

TRACE_INPUTS = ("prompt", "tokens", "budget0", "eagle_drop", "sched_block", "hash_block", "max_scheduled")


def is_prefill(obligation: Obligation) -> bool:
    names = {v.name for v in obligation.variables}
    return has_deployment(obligation) and set(TRACE_INPUTS) <= names


def budgets_of(inputs: dict) -> list[int]:
    return [inputs[f"budget{i}"] for i in range(len(inputs)) if f"budget{i}" in inputs]


def trace_split(variant: str, inputs: dict):
    """The symbolic deployment and split parameters, read with ints, exactly
    as the catalogue's trace formula builds them."""
    d = deployment(resolve(variant), inputs)
    p = split_params(inputs, block=d.split_block, eagle_spans=d.draft_spans, annotated=inputs["annotated"])
    return d, p


def trace_plan(variant: str, inputs: dict) -> Plan:
    """A plan whose split parameters are the trace formula's. Its geometry is
    the symbolic deployment's shape, for the request; run_prefill reads the
    split, the cadence and the request from the plan, nothing else."""
    d, p = trace_split(variant, inputs)
    x = inputs
    geometry = Geometry(
        name="symbolic deployment",
        deployment=Deployment(dcp_size=x["dcp"], block_size=x["page"], max_num_scheduled_tokens=x["max_scheduled"]),
        groups=symbolic_groups(x),
        request=Request(prompt_tokens=x["prompt"], output_tokens=x["tokens"] - x["prompt"]),
    )
    return Plan(
        variant=resolve(variant),
        geometry=geometry,
        cadence=d.cadence,
        split=p,
        target_spans=tuple(d.target_spans),
        accepted=True,
    )


def scenario(obligation: Obligation, variant: str, inputs: dict) -> dict:
    """What the inputs describe, run on the model with ints:

    - `prefill`: the request's whole prefill as models.prefill.run_prefill
      runs it, the per-step budgets repeating the last: every step, the
      published states, those off a target-attention boundary;
    - `trace`: the steps the theorem's trace obligation unrolls (one per
      budget, from a fresh request, none past the prefill's end), and the
      published states among them off a target boundary: the violation."""
    budgets = budgets_of(inputs)
    prompt, tokens = inputs["prompt"], inputs["tokens"]
    with in_effect(variant):
        prefill_plan = trace_plan(variant, inputs)
        run = run_prefill(prefill_plan, budgets, prompt_tokens=prompt, output_tokens=tokens - prompt)
        trace = run_prefill(
            prefill_plan, budgets, prompt_tokens=prompt, output_tokens=tokens - prompt, steps=len(budgets)
        )
    spans = list(prefill_plan.target_spans)
    return {
        "cadence": prefill_plan.cadence,
        "split_block": prefill_plan.split.block,
        "target_spans": spans,
        "prompt": prompt,
        "tokens": tokens,
        "budgets": budgets,
        "prefill": _steps_and_published(run, spans),
        "trace": _steps_and_published(trace, spans),
    }


def _steps_and_published(trace: Trace, spans: list[int]) -> dict:
    return {
        "steps": [[c.step, c.start, c.requested, c.end] for c in trace.every_chunk()],
        "published": list(trace.published),
        "off_target": [p for p in trace.published if any(p % s for s in spans)],
    }


def describe_scenario(s: dict) -> list[str]:
    """The scenario in two lines of words."""
    trace = s["trace"]
    ends = ", ".join(str(end) for _, _, _, end in trace["steps"])
    return [
        f"deployment: cadence {s['cadence']}, split grid {s['split_block']}, target spans {s['target_spans']}; "
        f"prompt {s['prompt']}, tokens {s['tokens']}, budgets {s['budgets']}",
        f"the theorem's steps end at {ends}, publish {trace['published']}, off target {trace['off_target']}; "
        f"the whole prefill publishes {_short(s['prefill']['published'])}, off target "
        f"{_short(s['prefill']['off_target'])}",
    ]


def _short(values: list[int]) -> str:
    if len(values) <= 8:
        return str(values)
    return (
        "["
        + ", ".join(map(str, values[:4]))
        + f", ... ({len(values) - 6} more) ..., "
        + ", ".join(map(str, values[-2:]))
        + "]"
    )


# --- the real vLLM 0.33.0 ---------------------------------------------------------------------

_REAL = None


def real_vllm_loaded() -> bool:
    """Whether real_vllm() has already been tried (and so returns at once)."""
    return _REAL is not None


def real_vllm():
    """(the real split, real_steps) from proofs/real_vllm, loading vLLM once; None where it is not
    installed (tests/install-conformance.sh installs it)."""
    global _REAL
    if _REAL is None:
        from proofs.real_vllm import VllmMissing, load_split, real_steps

        try:
            _REAL = (load_split(), real_steps)
        except VllmMissing as error:
            _REAL = (None, str(error))
    return _REAL if _REAL[0] is not None else None


def real_vllm_section(doc: dict) -> dict:
    """The prefill through vLLM 0.33.0's own `_mamba_block_aligned_split`:
    the steps it takes, which must equal the model's, and the published states
    off target. Replayed now when vLLM is installed; the regression test
    always replays it."""
    section = {
        "function": "vllm.v1.core.sched.scheduler.Scheduler._mamba_block_aligned_split (0.33.0)",
        "split": dataclasses.asdict(trace_split(doc["variant"], doc["inputs"])[1]),
        "expect": "the scenario's prefill and trace steps, and a state the trace publishes off a target boundary",
    }
    section["split"]["eagle_spans"] = list(section["split"]["eagle_spans"])
    return section


def check_real_vllm(doc: dict, real) -> list[int]:
    """Replay through the real split: the prefill (as the conformance tests
    drive it) and the trace's steps must be the model's, step for step, and a
    state the trace publishes must lie off a target boundary. Returns those
    off-target positions."""
    split, real_steps = real
    inputs, s = doc["inputs"], doc["scenario"]
    _, p = trace_split(doc["variant"], inputs)
    where = f"{doc['theorem']} / {doc['variant']}"
    prompt, tokens = inputs["prompt"], inputs["tokens"]
    prefill = [list(step) for step in real_steps(split, p, s["budgets"], prompt, tokens - prompt)]
    if prefill != s["prefill"]["steps"]:
        raise PlaybackError(
            f"{where}: the real vLLM split takes prefill steps {prefill}, the model {s['prefill']['steps']}: "
            "the model and vLLM 0.33.0 disagree"
        )
    prefill_plan = trace_plan(doc["variant"], inputs)
    trace = run_prefill(
        prefill_plan,
        s["budgets"],
        prompt_tokens=prompt,
        output_tokens=tokens - prompt,
        steps=len(s["budgets"]),
        split_function=split.split,
    )
    got = _steps_and_published(trace, s["target_spans"])
    if got["steps"] != s["trace"]["steps"]:
        raise PlaybackError(
            f"{where}: the real vLLM split takes trace steps {got['steps']}, the model {s['trace']['steps']}: "
            "the model and vLLM 0.33.0 disagree"
        )
    off = got["off_target"]
    if not off:
        raise PlaybackError(f"{where}: the real vLLM split publishes {got['published']}, all on the target boundaries")
    return off


# --- a case built from a geometry file --------------------------------------------------------


def geometry_inputs(variant: str, geometry: Geometry, budgets: list[int], steps: int) -> dict:
    """The trace inputs that describe `geometry` under `variant`, any number
    of groups of each kind (proofs/catalog/base.py `symbolic_groups`): one
    symbolic group per distinct group shape, since groups of one shape
    resolve to the same spans, cadence and split grid (lcm, min and gcd over
    copies of one value are that value). At least two target groups, the
    catalogue's usual shape: a single shape is given twice. Recurrent groups
    on the first target group's page need no inputs of their own. The split
    parameters, cadence and target spans the plan derives are checked
    against the ones the symbolic deployment derives from these inputs."""
    targets = _distinct(geometry.of_kind(TARGET))
    drafts = _distinct(geometry.of_kind(DRAFT))
    if not targets:
        raise PlaybackError(f"{geometry.name}: a symbolic deployment needs a target-attention group; it has none")
    if len({g.eagle for g in drafts}) > 1:
        raise PlaybackError(
            f"{geometry.name}: a symbolic deployment's draft groups are all annotated as EAGLE or none are; "
            "this geometry mixes them"
        )
    d = geometry.deployment
    with in_effect(variant) as chosen:
        real_plan = plan(chosen, geometry)
    p = real_plan.split
    first = targets[0]
    if len(targets) == 1:
        targets = targets * 2
    recurrent_blocks = list(dict.fromkeys(g.block_size for g in geometry.of_kind(RECURRENT)))
    draft_spans = [g.span(d.dcp_size) for g in drafts] or [first.block_size]
    explicit = d.mamba_block_size is not None
    inputs = {
        "sched_block": p.sched_block,
        "hash_block": p.hash_block,
        "align": p.checkpoint_alignment or 1,
        "lookahead": p.lookahead,
        "max_scheduled": p.max_scheduled,
        "threshold": p.long_prefill_threshold,
        "eagle_drop": p.eagle_drop,
        "partial": p.partial_hits,
        "ckpt_blocks": p.checkpoint_blocks,
        "shared": p.shared_prefix,
        "prompt": geometry.request.prompt_tokens,
        "tokens": geometry.request.num_tokens,
        **{indexed("page", i): g.block_size for i, g in enumerate(targets, 1)},
        **{indexed("draft_block", i): span for i, span in enumerate(draft_spans, 1)},
        "dcp": d.dcp_size,
        "user_cadence": d.mamba_block_size if explicit else 1,
        "explicit": explicit,
        **{indexed("sharded", i): g.dcp_sharded for i, g in enumerate(targets, 1)},
        "annotated": bool(drafts) and drafts[0].eagle,
    }
    if recurrent_blocks != [first.block_size]:
        inputs.update({indexed("rblock", i): block for i, block in enumerate(recurrent_blocks, 1)})
    for i in range(steps):
        inputs[f"budget{i}"] = budgets[min(i, len(budgets) - 1)]
    symbolic, mapped = trace_split(variant, inputs)
    if dataclasses.replace(mapped, eagle_spans=p.eagle_spans, eagle_annotated=p.eagle_annotated) != p or (
        symbolic.cadence != real_plan.cadence or set(symbolic.target_spans) != set(real_plan.target_spans)
    ):
        raise PlaybackError(f"{geometry.name}: does not map onto the symbolic deployment for {variant}")
    return inputs


def _distinct(groups) -> list:
    """The groups' shapes, each once, in order (count aside)."""
    return list(dict.fromkeys(dataclasses.replace(g, count=1) for g in groups))


def geometry_figures(variant: str, geometry: Geometry, budgets: list[int]) -> dict:
    """The prefill of the geometry's request under `variant`: what it publishes,
    which of those lie on every target-attention boundary, and what a later
    identical request restores."""
    with in_effect(variant) as chosen:
        return _geometry_figures(plan(chosen, geometry), geometry, budgets)


def _geometry_figures(real_plan: Plan, geometry: Geometry, budgets: list[int]) -> dict:
    if not real_plan.accepted:
        return {"outcome": REJECTED, "cadence": real_plan.cadence, "target_spans": list(real_plan.target_spans)}
    trace = run_prefill(real_plan, budgets)
    if trace.repeat is not None:
        raise CaseTooLong(
            f"{geometry.label}: a prefill of {trace.steps:,} steps publishes "
            f"{trace.published.count:,} states; a regression case lists every one (use a shorter prompt_tokens)"
        )
    spans = real_plan.target_spans
    shared = [p for p in trace.published if all(p % s == 0 for s in spans)]
    request = geometry.request
    cached = cached_prefix(real_plan, trace, request.prompt_tokens, request.num_tokens)
    return {
        "outcome": HOLDS if len(shared) == trace.published.count else FAILS,
        "cadence": real_plan.cadence,
        "split_block": real_plan.split.block,
        "target_spans": list(spans),
        "published": list(trace.published),
        "published_on_every_target": shared,
        "first_shared": shared[0] if shared else None,
        # What a later identical request is restored (`simulate`'s reuse): the GPU prefix cache's lookup
        # (None where vLLM's own raises) and the offload connector's alone (None where it runs none).
        "restored": _gpu_restored(cached, request.num_tokens),
        "offload_restored": offload_restore(real_plan, cached, request.num_tokens)[0],
    }


def _gpu_restored(cached, tokens: int) -> int | None:
    try:
        return gpu_hit(cached, tokens, tokens)
    except LookupFailure:
        return None


def geometry_to_json(geometry: Geometry) -> dict:
    return {
        "name": geometry.name,
        "description": geometry.description,
        "deployment": {k: v for k, v in dataclasses.asdict(geometry.deployment).items() if v is not None},
        "groups": [dataclasses.asdict(g) for g in geometry.groups],
        "request": dataclasses.asdict(geometry.request),
    }


def geometry_from_json(data: dict) -> Geometry:
    return parse_geometry(data, name=data["name"])


def geometry_case(theorem: str, variant: str, geometry: Geometry, budgets: list[int], command: str) -> dict:
    """The case a geometry file describes, for a prefill theorem."""
    chosen = CATALOGUE[theorem]
    obligation = chosen.trace_search
    if obligation is None or not is_prefill(obligation):
        raise PlaybackError(f"--geometry: {theorem} is not a property of a prefill (it has no trace search)")
    steps = sum(1 for v in obligation.variables if v.name.startswith("budget"))
    inputs = geometry_inputs(variant, geometry, budgets, steps)
    figures = {v: geometry_figures(v, geometry, budgets) for v in VARIANTS}
    if figures[variant]["outcome"] != FAILS:
        raise PlaybackError(f"{geometry.name}: {theorem} holds for {variant} with budgets {budgets}; nothing to record")
    doc = {
        "format": FORMAT,
        "theorem": theorem,
        "obligation": obligation.name,
        "variant": variant,
        "statement": chosen.statement,
        "inputs": inputs,
        "class": [],
        "minimal": "not minimised: the deployment, request and budgets of a real geometry",
        "explanation": {},
        "mined_by": command,
        "geometry": geometry_to_json(geometry),
        "geometry_budgets": budgets,
        "geometry_figures": figures,
    }
    return complete_document(doc, obligation)


# --- the corpus -------------------------------------------------------------------------------


@dataclass
class Written:
    path: Path
    new: bool
    note: str = ""


def dumps(value, indent: str = "", width: int = 100) -> str:
    """JSON with two-space indentation, but any list or object that fits on
    one line of `width` characters kept on it: small documents, easy diffs."""
    flat = json.dumps(value, separators=(", ", ": "))
    if len(indent) + len(flat) <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        rows, row = [], []
        for v in value:  # scalars: as many to a line as fit
            if row and len(inner) + len(", ".join([*row, json.dumps(v)])) + 1 > width:
                rows.append(row)
                row = []
            row.append(json.dumps(v))
        rows.append(row)
        return "[\n" + ",\n".join(inner + ", ".join(r) for r in rows) + "\n" + indent + "]"
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, inner, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [f"{inner}{dumps(v, inner, width)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def load_corpus(directory: Path) -> dict[Path, dict]:
    corpus = {}
    if directory.is_dir():
        for path in sorted(directory.glob("*.json")):
            try:
                doc = parse_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # not a case this project wrote
                continue
            if isinstance(doc, dict) and doc.get("format") == FORMAT:
                corpus[path] = doc
    return corpus


def same_class(a: dict, b: dict) -> bool:
    keys = ("theorem", "obligation", "variant")
    return (
        all(a.get(k) == b.get(k) for k in keys)
        and bool(a.get("class"))
        and [(c["view"], c["holds"]) for c in a["class"]] == [(c["view"], c["holds"]) for c in b.get("class", [])]
    )


def write_case(doc: dict, directory: Path) -> Written:
    """Write `doc` unless the corpus already holds it, or another
    representative of the same class under the same views."""
    path = directory / file_name(doc)
    if path.exists():
        return Written(path, False, "already in the corpus")
    for other_path, other in load_corpus(directory).items():
        if same_class(doc, other):
            return Written(other_path, False, "its class is already in the corpus")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(doc) + "\n", encoding="utf-8")
    except OSError as error:
        raise PlaybackError(f"--out: cannot write {path}: {error.strerror}") from None
    return Written(path, True)


# --- a readable standalone test ---------------------------------------------------------------


def render_pytest(docs: list[dict]) -> str:
    """Cases as one standalone pytest module a reviewer can paste: each case a
    test function with its inputs, the outcome under every variant, and the fix."""
    lines = [
        '"""Regression tests mined by gridproof: each case fails for the variant it was mined from."""',
        "",
        "from proofs.catalog import CATALOGUE",
        "from proofs.mining.playback import outcome_under",
    ]
    for doc in docs:
        lines += ["", "", *_test_function(doc)]
    return "\n".join(lines) + "\n"


def _test_function(doc: dict) -> list[str]:
    name = f"test_{doc['theorem']}_{doc['variant']}_{case_hash(doc)}".replace("-", "_").replace(":", "_")
    doc_lines = [f"{doc['theorem']} fails for {doc['variant']}.", "", *_wrap(doc["statement"])]
    if doc.get("class"):
        labels = ", ".join(f"{c['label']}: {'yes' if c['holds'] else 'no'}" for c in doc["class"])
        doc_lines += ["", *_wrap(f"Class: {labels}.")]
    if doc.get("explanation", {}).get("free"):
        doc_lines += [
            "",
            *_wrap("Free (the failure stays as it varies alone): " + ", ".join(doc["explanation"]["free"])),
        ]
    if "scenario" in doc:
        doc_lines += ["", *(w for line in describe_scenario(doc["scenario"]) for w in _wrap(line))]
    doc_lines += ["", f"Mined by: {doc['mined_by']}"]
    lines = [f"def {name}():", f'    """{doc_lines[0]}']
    lines += [f"    {line}".rstrip() for line in doc_lines[1:]]
    lines += ['    """', "    inputs = {"]
    lines += [f"        {k!r}: {v!r}," for k, v in doc["inputs"].items()]
    lines += [
        "    }",
        f"    obligation = {_obligation_expr(doc)}",
        "",
        "    def run(variant, **changes):",
        "        return outcome_under(variant, obligation.formula, {**inputs, **changes})",
        "",
    ]
    for variant, expected in doc["expected"].items():
        note = "  # mined here" if variant == doc["variant"] else ""
        lines.append(f"    assert run({variant!r}) == {expected!r}{note}")
    for fix in doc.get("fixes", []):
        changes = ", ".join(f"{k}={v!r}" for k, v in fix["changes"].items())
        lines += [f"    # {line}" for line in _wrap("The fix: " + fix["why"] + ".")]
        for variant, expected in fix["expected"].items():
            lines.append(f"    assert run({variant!r}, {changes}) == {expected!r}")
    return lines


def _obligation_expr(doc: dict) -> str:
    theorem = CATALOGUE[doc["theorem"]]
    if theorem.trace_search is not None and theorem.trace_search.name == doc["obligation"]:
        return f"CATALOGUE[{doc['theorem']!r}].trace_search"
    index = [o.name for o in theorem.obligations].index(doc["obligation"])
    return f"CATALOGUE[{doc['theorem']!r}].obligations[{index}]"


def _wrap(text: str, width: int = 96) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines
