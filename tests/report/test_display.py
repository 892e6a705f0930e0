"""How results read (repro.report.display): the table style, glue, and the verdict box a claim displays as."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.report.display import ClaimView, fmt_signed, glue, style_table, verdict_box, verdicts
from repro.report.results import Results
from repro.report.verdicts import compare


def test_style_table_formats_each_kind_of_column():
    df = pd.DataFrame({"task": ["SST-2", "QNLI"], "sparsity": [0.01, 100.0], "acc": [0.9231, 0.5],
                       "ece": [12.345, 3.0], "params": [17088.0, 8500.0], "Δ acc": [1.234, -0.46],
                       "ci_low": [0.951, np.nan], "ci_high": [0.99, np.nan], "ratio": [0.97123, None]})
    out = style_table(df)
    assert list(out.columns) == ["task", "sparsity", "acc", "ece", "params", "Δ acc", "ratio", "95% CI"]
    assert out.loc[0].tolist() == ["SST-2", "0.01%", "92.3%", "12.3%", "17,088", "+1.2", "0.971", "[0.951, 0.990]"]
    assert out.loc[1].tolist() == ["QNLI", "100%", "50.0%", "3.0%", "8,500", "−0.5", "—", "—"]


def test_style_table_overrides_and_index():
    out = style_table([{"method": "Graft", "value": 0.5, "n": 12.0, "pair": True}], percent=["value"],
                      fractions=False, index=["method"])
    assert out.loc["Graft"].tolist() == ["0.5%", "12", "True"]


def test_glue_formats_and_returns_text():
    assert glue("x_pct", 0.9231, "fraction") == "92.3%"
    assert glue("x_delta", -2.0, "signed") == fmt_signed(-2.0) == "−2.0"
    assert fmt_signed(-0.04) == fmt_signed(0.0) == "±0.0"  # no negative zero
    with pytest.raises(ValueError, match="unknown"):
        glue("x", 1, "weird")


def test_claims_display_as_verdict_boxes():
    res = Results("p1_localization", "smoke")
    verdict, ev = compare(np.ones(40), np.ones(40), kind="ratio", margin=0.95)
    c = res.add_claim("p1-table2-recovery", "Graft recovers >95% of FT <b>", paper=">95%", ours="100%",
                      verdict=verdict, evidence=ev, note="3 tasks")
    assert isinstance(c, ClaimView) and isinstance(c, dict) and c["verdict"] == "holds"
    box = c._repr_html_()
    assert 'class="admonition tip verdict-box"' in box and "Verdict: holds" in box
    assert "n = 40 test examples · 1 seed · statistic 1.00, 95% CI [1.00, 1.00]" in box
    assert "&lt;b&gt;" in box and "<b>" not in box                 # text is escaped
    res.add_claim("p1-table2-size", "size", holds=None, note="not run")
    boxes = verdicts(res.claims, "p1-table2")
    assert len(boxes.claims) == 2 and 'class="admonition note verdict-box"' in boxes._repr_html_()
    assert "point comparison" not in verdict_box(c) and "not run" in verdict_box(res.claims[1])


def test_describe_reads_plans_and_recipes_without_reprs():
    from repro.profiles import FinetuneRecipe
    from repro.report.display import Rows, describe

    text = describe({"tasks": ("SST-2", "QNLI"), "n_eval": 64, "lr": 1e-07, "k": None})
    assert text == "tasks SST-2, QNLI; n_eval 64; lr 1e-07; k default"
    r = describe(FinetuneRecipe(optimizer="sgd", lr=0.05, steps=100))
    assert r.startswith("optimizer sgd; lr 0.05") and "FinetuneRecipe(" not in r
    rows = Results("p1_localization", "smoke").add_table("p1-table2", [dict(
        task="SST-2", method="FT", sparsity=None, metric="acc", value=90.0, std=None, paper=None)])
    assert isinstance(rows, Rows) and rows[0]["value"] == 90.0 and rows._ipython_display_() is None


def test_verdict_summary_lists_every_claim_once():
    from repro.report.display import VerdictSummary

    res = Results("p1_localization", "smoke")
    res.add_claim("p1-table2-recovery", "recovers", holds=True)
    res.add_claim("p1-table2-64shot", "beyond", holds=False, beyond_paper=True)
    out = VerdictSummary(res.claims)._repr_html_()
    assert out.count("<tr><td>") == 2 and "sd-bg-success" in out and "sd-bg-danger" in out
    assert "(beyond the paper)" in out and "no CI" in out


def test_graft_notice_is_one_plain_sentence_or_nothing():
    from repro.report.display import graft_notice

    fine = [{"degenerate": []}, {}, None]
    assert not graft_notice(fine) and graft_notice(fine)._repr_html_() is None
    same = {"degenerate": ["every graft step scored the same (1.5): the region was not learned"]}
    note = graft_notice([same, {"degenerate": []}, {"degenerate": ["empty graft region (no entry selected)"]}])
    text = repr(note)
    assert "in 1 of the 3 grafts" in text and "1 of the 3 grafts selected no parameter" in text
    assert "/" not in text.replace("train + dev", "") and "Warning" not in text  # no paths, no warning text
    assert note._repr_html_().startswith("<p") and text.endswith(".")


def test_one_number_formatting_family():
    """The formatters results, the claims page and the bench lines share (repro.report.display.fmt_*)."""
    from repro.report.display import fmt_float, fmt_index, fmt_short, fmt_sparsity, fmt_value

    assert fmt_value(92.34, "%") == "92.3%" and fmt_value(92.34, "%", std=0.5) == "92.3 ± 0.5 %"
    assert fmt_value(-1.25, "pp", signed=True) == "-1.2 pp" and fmt_value(0.01234, "s") == "0.0123 s"
    assert fmt_value(0.571, "") == "0.57" and fmt_value(None, "%") == fmt_value(float("nan"), "%") == "—"
    assert fmt_index(17088.0) == "17,088" and fmt_index(12) == "12" and fmt_index(None) == ""
    assert fmt_sparsity(0.01) == "0.01%" and fmt_sparsity(None) == "—" and fmt_sparsity(None, missing="") == ""
    assert fmt_short(None) == "-" and fmt_short(0.123456) == "0.1235" and fmt_short(3) == "3"
    assert fmt_float(0.97123) == "0.971" and fmt_float(None) == "—"
