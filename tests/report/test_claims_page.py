"""The Claims page (repro.report.claims_page): tallies per paper, beyond-paper claims apart, one row per claim."""

from __future__ import annotations

import json

import pytest

from repro.report.claims_page import (ClaimsPageError, ci_text, claims_page_markdown, fmt_float, is_exact, md_escape,
                                      one_line, tally)


def _claim(id, verdict, beyond=False, evidence=None, note="why"):
    holds = {"holds": True, "does-not-hold": False}.get(verdict)
    return {"id": id, "text": f"Claim {id}. More text.", "paper": ">95%", "ours": "96%", "holds": holds,
            "note": note, "verdict": verdict, "evidence": evidence, "beyond_paper": beyond}


EV = {"n_examples": 872, "seeds": 3, "statistic": 0.9712, "ci_low": 0.953, "ci_high": 0.9891, "margin": 0.95,
      "test": "paired bootstrap", "op": ">="}


def _results():
    return {
        "p1_localization": {"meta": {"params": {"seeds": [1, 2, 3], "tasks": ["SST-2", "QNLI"], "n_eval": 500}},
                            "claims": [_claim("p1-table2-recovery", "holds", evidence=EV),
                                       _claim("p1-table2-64shot", "does-not-hold", beyond=True),
                                       _claim("p1-fig2-learned", "inconclusive",
                                              evidence=dict(EV, ci_low=0.9))]},
        "p2_task_arithmetic": {"meta": {"params": {"seed": 13}},
                               "claims": [_claim("p2-table1-best", "not-testable"),
                                          _claim("p2-table2-best", "holds")]},
    }


def test_tallies_count_four_verdicts_and_keep_beyond_paper_apart():
    md = claims_page_markdown("cpu", _results(), ["p1_localization", "p2_task_arithmetic"], model="MiniLM")
    p1 = next(line for line in md.splitlines() if line.startswith("| P1"))
    p2 = next(line for line in md.splitlines() if line.startswith("| P2"))
    beyond = next(line for line in md.splitlines() if line.startswith("| beyond"))
    assert p1.split("|")[2:7] == [" 1 ", " 0 ", " 1 ", " 0 ", " 2 "]       # the beyond-paper claim is not counted
    assert p2.split("|")[2:7] == [" 1 ", " 0 ", " 0 ", " 1 ", " 2 "]
    assert beyond.split("|")[2:7] == [" 0 ", " 1 ", " 0 ", " 0 ", " 1 "]
    body = md.split("## Beyond the papers")
    assert "p1-table2-64shot" in body[1] and "p1-table2-64shot" not in body[0].split("## P1")[1]
    assert ci_text(EV) == "0.971 [0.953, 0.989] ≥ 0.950 · n 872 · 3 seeds"
    assert "{bdg-warning}`inconclusive`" in md and md_escape(ci_text(EV)) in md
    assert md.index("<!-- summary-start -->") < md.index("| P1") < md.index("<!-- summary-end -->")  # the intro
    assert "| 3 | 872 |" in md and "SST-2, QNLI" in md        # what was run: seeds, test size from the evidence


def test_duplicate_ids_across_notebooks_are_rejected():
    res = _results()
    res["p2_task_arithmetic"]["claims"].append(_claim("p1-table2-recovery", "holds"))
    with pytest.raises(ClaimsPageError, match="unique"):
        claims_page_markdown("cpu", res, list(res))


def test_rows_link_to_the_section_of_their_table(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "source": ["## Table 2 — fine-tuning vs a sparse graft\n"]},
                    {"cell_type": "markdown", "source": ["## Figs. 2–3: regions\n"]}]}
    (tmp_path / "p1_localization.ipynb").write_text(json.dumps(nb))
    md = claims_page_markdown("cpu", _results(), ["p1_localization"], executed_dir=tmp_path)
    assert 'href="executed/p1_localization.html#table-2-fine-tuning-vs-a-sparse-graft"' in md
    assert 'href="executed/p1_localization.html#figs-23-regions"' in md


def test_formatting_helpers():
    assert one_line("Grafts recover >95% of FT (Fig. 2). Second sentence.") == "Grafts recover >95% of FT (Fig. 2)."
    assert one_line("word " * 50, width=20).endswith("…") and len(one_line("word " * 50, width=20)) <= 22
    assert fmt_float(0.97123) == "0.971" and fmt_float(-20.04) == "-20.0" and fmt_float(1234.5) == "1234"
    assert ci_text(None) == "point rule, no CI"
    assert tally([_claim("p1-fig2-x", "holds"), {"holds": None}]) == {"holds": 1, "does-not-hold": 0,
                                                                       "inconclusive": 0, "not-testable": 1}


def test_exact_evidence_is_shown_without_a_ci_and_kept_out_of_the_test_size():
    exact = {"n_examples": 9, "seeds": 3, "statistic": 0.0089, "ci_low": 0.0089, "ci_high": 0.0089, "margin": 0.01,
             "test": "exact size of the largest learned region; no sampling", "op": "<="}
    assert is_exact(exact) and not is_exact(EV) and not is_exact(None)
    assert not is_exact(dict(exact, test="paired bootstrap"))  # a degenerate bootstrap CI is still a CI
    assert ci_text(exact) == "0.00890 exact ≤ 0.0100 · n 9 · 3 seeds"
    res = _results()
    res["p1_localization"]["claims"].append(_claim("p1-table2-size", "holds", evidence=exact))
    md = claims_page_markdown("cpu", res, list(res))
    row = next(line for line in md.splitlines() if "p1-table2-size" in line and "dropdown" in line)
    assert "CI " not in row.split("paper")[1] and "no sampling error, so no CI" in md
    assert "| 3 | 872 |" in md  # the 9 regions are not mistaken for test examples


def _data(task, kind):
    return {"task": task, "kind": kind, "source": "vader-amazon" if kind == "real" else "generated",
            "title": "t", "licence": "l", "label_rule": "r"}


def test_verdicts_are_tallied_by_the_data_that_decided_them():
    from repro.report.claims_page import data_line, data_of, data_tally

    real = dict(_claim("p1-table2-recovery", "holds", evidence=EV), data=[_data("CR", "real"), _data("SST-2", "generated")])
    gen = dict(_claim("p1-table2-agreement", "does-not-hold"), data=[_data("SST-2", "generated")])
    gen2 = dict(_claim("p1-table2-size", "holds"), data=[_data("QNLI", "generated")])
    cost = dict(_claim("p1-table1-cost", "holds"), data=[])
    old = _claim("p1-fig2-learned", "inconclusive", evidence=dict(EV, ci_low=0.9))  # written before data existed
    assert [data_of(c) for c in (real, gen, cost, old)] == ["real", "generated", "none", "none"]
    t = data_tally([real, gen, gen2, cost, old])
    assert t["real"]["holds"] == 1 and t["generated"] == {"holds": 1, "does-not-hold": 1, "inconclusive": 0,
                                                          "not-testable": 0}
    assert t["none"]["holds"] == 1 and t["none"]["inconclusive"] == 1
    assert data_line(t) == ("real data: 1 hold · generated data only: 1 hold, 1 do not hold · no task data: 1 hold, "
                            "1 inconclusive")
    md = claims_page_markdown("cpu", {"p1_localization": {"claims": [real, gen, gen2, cost]}}, ["p1_localization"])
    rows = [line for line in md.splitlines() if line.startswith("| P1 · grafting (ICML 2023) · ")]
    assert rows == ["| P1 · grafting (ICML 2023) · real data | 1 | 0 | 0 | 0 | 1 |",
                    "| P1 · grafting (ICML 2023) · generated data only | 1 | 1 | 0 | 0 | 2 |",
                    "| P1 · grafting (ICML 2023) · no task data | 1 | 0 | 0 | 0 | 1 |"]
    assert "**Data.** CR: real (vader-amazon); SST-2: generated (generated)" in md
    assert "**Data.** no task decides this claim (code or cost)" in md


def test_a_pooled_claim_shows_its_per_task_verdicts():
    per = {"SST-2": {"verdict": "holds", "statistic": 0.99, "ci_low": 0.97, "ci_high": 1.0},
           "QNLI": {"verdict": "does-not-hold", "statistic": 0.5, "ci_low": 0.45, "ci_high": 0.55}}
    c = dict(_claim("p1-table2-recovery", "does-not-hold", evidence=dict(EV, ci_low=0.5, ci_high=0.55,
                                                                         statistic=0.52, per_task=per)))
    md = claims_page_markdown("cpu", {"p1_localization": {"claims": [c]}}, ["p1_localization"])
    line = next(line for line in md.splitlines() if line.startswith("**Per task.**"))
    assert "SST-2: holds, 0.990 \\[0.970, 1.00\\]" in line and "QNLI: does not hold, 0.500" in line
