"""The manifest's tiers: a theorem's costly variants can sit in the slow tier
while its refutations stay in the default run."""

import pytest

from proofs.run.runner import MANIFEST, ManifestError, load_manifest, plan_runs


def _selected(manifest, tier):
    return {(run.theorem.name, run.variant) for run in plan_runs(manifest, None, None, tier)}


def test_slow_variants_leave_the_default_run_and_only_those():
    manifest = load_manifest()
    ci, slow = _selected(manifest, "ci"), _selected(manifest, "slow")
    groups = "groups-published-on-target-boundaries"
    assert (groups, "pr457-guarded") in slow and (groups, "pr457-guarded") not in ci
    assert (groups, "mutant:two-target-groups-only") in ci and (groups, "baseline") in ci
    assert ci.isdisjoint(slow) and ci | slow == _selected(manifest, "all")
    # Every mutant is still refuted in the default run.
    killed = {variant for _, variant in ci if variant.startswith("mutant:")}
    assert killed == {variant for _, variant in _selected(manifest, "all") if variant.startswith("mutant:")}


def test_slow_must_name_variants_the_theorem_expects(tmp_path):
    text = MANIFEST.read_text(encoding="utf-8").replace('slow = ["pr457-guarded"]', 'slow = ["pr457-guardd"]')
    broken = tmp_path / "manifest.toml"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError, match="groups-published-on-target-boundaries: slow must list variants"):
        load_manifest(broken)


def test_theorems_with_slow_proofs_start_first_whatever_their_budget():
    from proofs.run.cache import Request
    from proofs.run.prove import _start_order

    small_but_slow = [Request("t", "baseline", "PROVED", 20_000_000, "slow", None)]
    large_and_quick = [Request("t", f"v{i}", "PROVED", 20_000_000, "ci", None) for i in range(5)]
    larger_and_quick = [Request("t", f"v{i}", "PROVED", 20_000_000, "ci", None) for i in range(6)]
    order = sorted([large_and_quick, small_but_slow, larger_and_quick], key=_start_order)
    assert order == [small_but_slow, larger_and_quick, large_and_quick]


def test_among_quick_theorems_more_cases_start_first():
    from proofs.run.cache import Request
    from proofs.run.prove import _start_order

    variants = [Request("t", "baseline", "PROVED", 20_000_000, "ci", None)]
    larger_budget = [Request("t", "baseline", "PROVED", 40_000_000, "ci", None)]
    # One obligation of four cases outweighs one with twice the budget and one case.
    order = sorted([(larger_budget, 1), (variants, 4)], key=lambda task: _start_order(*task))
    assert order == [(variants, 4), (larger_budget, 1)]
