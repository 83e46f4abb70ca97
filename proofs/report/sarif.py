"""SARIF 2.1.0 for code-scanning views: a rule per theorem, a result per theorem and variant, located
at the line of the model source where the theorem's formula is written.

Result kinds: a failing entry (verdict not as the manifest says, or undecided) is `fail` at level
`error`; a proof, and a mutant refuted as required, is `pass`; a refutation of a real variant that the
manifest expects (a known defect, e.g. in vLLM 0.33.0) is `informational` at level `note`, carrying
its counterexample."""

from __future__ import annotations

import json
from importlib import metadata

from proofs.run.result import by_theorem, first_sentence, is_mutant, is_ok, problems, source_path_line

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _version() -> str:
    try:
        return metadata.version("gridproof")
    except metadata.PackageNotFoundError:
        return "0"


def _message(entry: dict) -> str:
    name = f"{entry['theorem']} / {entry['variant']}"
    if not is_ok(entry):
        text = f"{name}: {'; '.join(problems(entry))}."
    elif entry["verdict"] == "PROVED":
        text = f"{name}: PROVED for every geometry."
    else:
        text = f"{name}: REFUTED, as the manifest expects."
    if entry.get("counterexample"):
        text += " Counterexample: " + ", ".join(f"{k}={v}" for k, v in entry["counterexample"].items()) + "."
    if entry.get("reason") and entry["verdict"] != "PROVED":
        text += f" {entry['reason']}."
    return text + f" Reproduce: {entry.get('reproduce', '')}"


def _kind_level(entry: dict) -> tuple[str, str]:
    if not is_ok(entry):
        return "fail", "error"
    if entry["verdict"] == "REFUTED" and not is_mutant(entry["variant"]):
        return "informational", "note"
    return "pass", "none"


def render_sarif(result: dict) -> str:
    """The result as a SARIF 2.1.0 log: a rule per theorem and a result per entry, located at its formula's
    source line where known; the invocation's exit code is 1 when some entry is not ok."""
    groups = by_theorem(result["entries"])
    rules = []
    index = {}
    for i, (theorem, group) in enumerate(groups.items()):
        first = group[0]
        statement = first.get("statement") or theorem
        rule = {
            "id": theorem,
            "name": theorem,
            "shortDescription": {"text": first_sentence(statement)},
            "fullDescription": {"text": statement},
            "help": {"text": f"Reproduce one variant: gridproof prove --theorem {theorem} --variant VARIANT"},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": [t for t in (first.get("subject"), first.get("tier")) if t]},
        }
        rules.append(rule)
        index[theorem] = i
    results = []
    for entry in result["entries"]:
        kind, level = _kind_level(entry)
        item = {
            "ruleId": entry["theorem"],
            "ruleIndex": index[entry["theorem"]],
            "kind": kind,
            "level": level,
            "message": {"text": _message(entry)},
            "partialFingerprints": {"gridproofObligation/v1": f"{entry['theorem']}/{entry['variant']}"},
            "properties": {
                "variant": entry["variant"],
                "verdict": entry["verdict"],
                "expected": entry["expected"],
                "rlimit": entry["rlimit"],
                "seconds": entry["seconds"],
                "hypothesesUsed": entry.get("hypotheses_used", []),
                "counterexample": entry.get("counterexample"),
            },
        }
        location = source_path_line(entry)
        if location:
            path, line = location
            item["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": line},
                    }
                }
            ]
        results.append(item)
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gridproof",
                        "version": _version(),
                        "rules": rules,
                        "properties": {"z3Version": result["z3_version"], "modelHash": result["model_hash"]},
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "exitCode": 1 if any(not is_ok(e) for e in result["entries"]) else 0,
                    }
                ],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
