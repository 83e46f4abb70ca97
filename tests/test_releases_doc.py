"""docs/releases.md's table is generated (proofs/report/releases.py): a model change that moves a
release's answer without regenerating it fails here."""

from proofs.report.releases import PAGE, main, page


def test_checked_in_release_page_is_current() -> None:
    current = PAGE.read_text(encoding="utf-8")
    assert current == page(current), "run: python3 -m proofs.report.releases --write"


def test_the_table_shows_the_default_block_moving_to_a_multiple_of_64() -> None:
    granite = next(line for line in PAGE.read_text(encoding="utf-8").splitlines() if "granite-4.0-h | defaults" in line)
    cells = [c.strip() for c in granite.strip("|").split("|")]
    assert cells[2] == "528" and cells[5] == "576"


def test_check_flags_a_stale_page(tmp_path, monkeypatch, capsys) -> None:
    stale = tmp_path / "releases.md"
    stale.write_text(PAGE.read_text(encoding="utf-8").replace("| 576 |", "| 575 |", 1), encoding="utf-8")
    monkeypatch.setattr("proofs.report.releases.PAGE", stale)
    assert main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
