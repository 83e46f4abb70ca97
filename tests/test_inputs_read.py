"""The recorded inputs of every proved obligation (proofs/records/inputs_read.py): an
input the catalogue fixes, which no hypothesis mentions, makes the proved
entry VACUOUS, naming it; the record covers every obligation it must."""

from proofs.catalog import CATALOGUE
from proofs.engine.solver import ERROR, PROVED, VACUOUS, Outcome
from proofs.faults.patch import Patch, applied
from proofs.records import inputs_read
from proofs.run.recording import proved_obligations
from proofs.run.runner import run_theorem

# The shared-prefix junction fixed off for every split theorem: no hypothesis mentions the flag, so the
# recorded edges of the domain still hold, and the proofs, over one value of it, still hold.
NO_SHARED_PREFIX = Patch("proofs.catalog.base", "split_params", 'shared_prefix=x["shared"],', "shared_prefix=False,")


def test_every_proved_obligation_has_its_inputs_recorded():
    record = inputs_read.recorded()
    count = 0
    for name, obligation, variant, _ in proved_obligations():
        names = record[name][obligation.name][variant]
        assert set(names) <= {v.name for v in obligation.variables}, f"{name} / {obligation.name}"
        count += 1
    assert count >= 90


def test_an_input_fixed_in_the_catalogue_makes_the_proved_entry_vacuous():
    theorem = CATALOGUE["split-bounds"]
    assert run_theorem(theorem, "baseline", PROVED).verdict == PROVED
    with applied(NO_SHARED_PREFIX):
        entry = run_theorem(theorem, "baseline", PROVED)
    assert entry.verdict == VACUOUS and not entry.ok
    assert "main: the proof no longer reads shared, as recorded" in entry.reason
    assert f"{inputs_read.RECORD_COMMAND} --theorem split-bounds" in entry.reason


def test_reading_more_than_recorded_passes_and_a_missing_record_is_an_error(monkeypatch):
    theorem = CATALOGUE["split-bounds"]
    (obligation,) = theorem.obligations
    recorded = inputs_read.recorded()[theorem.name][obligation.name]["baseline"]
    more = Outcome(PROVED, inputs_read=[*recorded, "another input"])
    assert inputs_read.fewer_than_recorded(theorem.name, "baseline", [(obligation, more)]) is None
    record = inputs_read.recorded()
    monkeypatch.setattr(inputs_read, "recorded", lambda: {k: v for k, v in record.items() if k != theorem.name})
    verdict, reason = inputs_read.fewer_than_recorded(theorem.name, "baseline", [(obligation, more)])
    assert verdict == ERROR and "no recorded inputs read for baseline" in reason
    assert inputs_read.RECORD_COMMAND in reason
