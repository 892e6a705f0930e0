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
