"""The departures registry (:mod:`repro.departures`): well formed, each record's fields name a real difference,
and it renders as the book page "Where this reproduction differs from the papers".  The papers' values and the
check of every one live in ``book/reference/paper_settings.csv`` and ``tests/test_paper_settings.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.departures import DEPARTURES, Departure, departure, departures_for, departures_markdown
from repro.paper_settings import check_settings, ours

ROOT = Path(__file__).resolve().parents[1]


def test_every_declared_field_names_a_setting_that_differs():
    """A departure's ``fields`` name rows of book/reference/paper_settings.csv (by their ``code``), and at least
    one such row really differs from ours: a record whose difference was fixed must be dropped."""
    checks = check_settings()
    by_code: dict[str, list] = {}
    for c in checks:
        by_code.setdefault(c.setting.code, []).append(c)
    for d in DEPARTURES:
        for path in d.fields:
            ours(path)  # raises on a typo
            if path in by_code:
                assert any(c.status != "equal" for c in by_code[path]), (
                    f"departure {d.key!r} declares {path}, which now equals every paper value: drop it")


def test_registry_is_well_formed_and_renders():
    keys = [d.key for d in DEPARTURES]
    assert len(keys) == len(set(keys)), "departure keys must be unique"
    known = {p.stem.split("_table")[0] for p in (ROOT / "book" / "reference").glob("*.csv")}
    assert known  # the printed tables are there
    for d in DEPARTURES:
        assert d.sections, f"{d.key}: name the tables / figures it touches"
        assert all(s.startswith(d.paper.lower() + "-") for s in d.sections), (d.key, d.sections)
        assert departure(d.key) is d and d in departures_for(d.sections[0])
    page = departures_markdown()
    for d in DEPARTURES:
        assert f"({d.key})=" in page and d.what in page
    with pytest.raises(KeyError, match="no departure"):
        departure("no-such-key")
    with pytest.raises(ValueError, match="paper must be"):
        Departure("x", "P3", ("p3-table1",), "w", "p", "o", "y")


def test_each_table_links_the_departures_that_touch_it():
    from repro.report.display import DEPARTURES_PAGE, departure_note

    for d in DEPARTURES:
        for section in d.sections:
            note = departure_note(section + "-subset")  # a sub-table counts under its table's base id
            assert note is not None and f'href="{DEPARTURES_PAGE}#{d.key}"' in note._repr_html_()
    touched = {s for d in DEPARTURES for s in d.sections}
    assert departure_note("p9-table1") is None and "p9-table1" not in touched


def test_the_page_groups_records_by_chapter():
    from repro.departures import CHAPTERS, chapters_of, departures_by_chapter

    page = departures_markdown()
    groups = departures_by_chapter()
    assert "p1_multitask_continual" in groups and "p2_structure_cost" in groups
    for nb, records in groups.items():
        assert f"## {CHAPTERS[nb][0] if nb in CHAPTERS else 'Other'}" in page
        assert all(nb in chapters_of(d) or nb == "other" for d in records)
    for d in DEPARTURES:
        assert page.count(f"({d.key})=") == 1  # in full once, linked from its other chapters
    touched_twice = next(d for d in DEPARTURES if len(chapters_of(d)) > 1)
    assert f"](#{touched_twice.key})" in page
    # chapter order: the P1 chapters before the P2 ones
    assert page.index(CHAPTERS["p1_localization"][0]) < page.index(CHAPTERS["p2_task_arithmetic"][0])
