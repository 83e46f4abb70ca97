"""docs/catalogue.md is generated from the catalogue and the manifest; a
theorem, hypothesis or expectation changed without regenerating it fails here."""

from __future__ import annotations

from proofs.catalog import CATALOGUE
from proofs.report.catalogue import PAGE, main, render


def test_checked_in_catalogue_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "run: python3 -m proofs.report.catalogue --write"


def test_page_names_every_theorem_with_its_expectations() -> None:
    page = render()
    for name in CATALOGUE:
        assert f"### `{name}`" in page
    # The headline, with its verdicts per variant and a mutant it must kill.
    headline = page[page.index("### `prefill-published-on-target-boundaries`") :]
    headline = headline[: headline.index("\n### ", 1)]
    assert "| baseline | REFUTED |" in headline and "| pr457-guarded | PROVED |" in headline
    assert "configuration accepted" in headline


def test_check_flags_a_stale_page(tmp_path, monkeypatch, capsys) -> None:
    stale, page = tmp_path / "catalogue.md", render()
    stale.write_text(page.replace("PROVED", "REFUTED", 1), encoding="utf-8")
    monkeypatch.setattr("proofs.report.catalogue.PAGE", stale)
    assert main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    stale.write_text(page, encoding="utf-8")
    assert main(["--check"]) == 0
