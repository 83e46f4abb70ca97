"""JUnit XML: one test case per theorem and variant, for CI test-report views. A case fails when its
verdict differs from the manifest, when it is UNKNOWN, VACUOUS or ERROR (never a success), or when an
ablation did not refute. Validates against the JUnit schema vendored in tests/schemas/."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from proofs.run.result import headline, is_ok, problems


def _text(entry: dict) -> str:
    lines = [
        f"verdict {entry['verdict']} (manifest: {entry['expected']}), rlimit {entry['rlimit']:,}, "
        f"{entry['seconds']:.3f} s",
    ]
    if entry.get("statement"):
        lines.append(f"statement: {entry['statement']}")
    if entry.get("hypotheses_used"):
        lines.append(f"hypotheses used: {', '.join(entry['hypotheses_used'])}")
    if entry.get("counterexample"):
        values = ", ".join(f"{k}={v}" for k, v in entry["counterexample"].items())
        lines.append(f"counterexample: {values}")
    if entry.get("reason"):
        lines.append(f"reason: {entry['reason']}")
    if entry.get("source"):
        lines.append(f"formula: {entry['source']}")
    lines.append(f"reproduce: {entry.get('reproduce', '')}")
    return "\n".join(lines)


def render_junit(result: dict) -> str:
    """The result as JUnit XML: one suite for the run, with its z3 version, model hash, rlimit and headline as
    properties, and a test case per entry, failing (typed by its verdict) where the entry is not ok."""
    entries = result["entries"]
    failures = sum(not is_ok(e) for e in entries)
    seconds = f"{float(result['seconds']):.3f}"
    tier = (result.get("selection") or {}).get("tier") or "ci"
    root = ET.Element(
        "testsuites", name="gridproof", tests=str(len(entries)), failures=str(failures), errors="0", time=seconds
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"gridproof prove (tier {tier})",
        tests=str(len(entries)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=seconds,
    )
    properties = ET.SubElement(suite, "properties")
    for name in ("z3_version", "model_hash", "rlimit"):
        ET.SubElement(properties, "property", name=name, value=str(result[name]))
    ET.SubElement(properties, "property", name="summary", value=headline(result))
    for entry in entries:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"gridproof.{entry.get('subject') or 'theorem'}.{entry['theorem']}",
            name=f"{entry['theorem']}[{entry['variant']}]",
            time=f"{float(entry['seconds']):.3f}",
        )
        if not is_ok(entry):
            failure = ET.SubElement(case, "failure", type=entry["verdict"], message="; ".join(problems(entry)))
            failure.text = _text(entry)
        out = ET.SubElement(case, "system-out")
        out.text = _text(entry)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
