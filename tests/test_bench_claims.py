"""Claims and tables of the performance page (repro.bench.claims, repro.bench.views) on
hand-made bench rows."""

import pandas as pd
import pytest

from repro.bench import claims
from repro.bench.views import beside_paper, measured_pairs, official_notes, scaling_exponents
from repro.report.results import Results


def _row(name: str, ratio, ok, unit: str = "s", target=1.0) -> dict:
    return {"name": name, "ours": 1.0, "baseline": 2.0, "ratio": ratio, "target": target, "pass": ok, "unit": unit,
            "device": "cpu", "model": "m", "op": "<=", "official": "loop", "note": "n", "seconds": 1.5}


def _rows(talos_ok=True, fisher_ok=True, scores_ok=True) -> list[dict]:
    return [_row(claims.TALOS_TIME, 0.4, talos_ok), _row(claims.TALOS_MEMORY, 0.7, True, "GiB"),
            _row(claims.FISHER_TIME, 8.0, fisher_ok, target=5.0), _row(claims.FISHER_SCORES, 1e-7, scores_ok),
            _row("scaling exponent, graft step", None, None, "exponent", None)]


def _res() -> Results:
    return Results("performance", "smoke", params={})


def test_talos_claim_needs_both_ratios():
    c = claims.bench_talos(_res(), _rows())
    assert c["verdict"] == "holds" and c["ours"] == "0.40× time, 0.70× memory (m, cpu)"
    assert claims.bench_talos(_res(), _rows(talos_ok=False))["verdict"] == "does-not-hold"
    missing = claims.bench_talos(_res(), [])
    assert missing["verdict"] == "not-testable" and missing["ours"] == "not measured"


def test_calibration_claim_needs_speed_and_equal_scores():
    assert claims.bench_calibration(_res(), _rows())["verdict"] == "holds"
    assert claims.bench_calibration(_res(), _rows(scores_ok=False))["verdict"] == "does-not-hold"
    assert claims.bench_calibration(_res(), _rows(fisher_ok=False))["verdict"] == "does-not-hold"
    assert claims.bench_calibration(_res(), [])["verdict"] == "not-testable"


def test_result_rows_and_placeholder():
    rows = claims.bench_result_rows(_rows())
    assert [r["method"] for r in rows][:2] == [claims.TALOS_TIME, claims.TALOS_MEMORY]
    assert rows[0]["value"] == pytest.approx(0.4) and rows[0]["pass"] is True
    assert claims.bench_result_rows([])[0]["method"] == "no bench results"


def test_page_tables():
    rows = _rows()
    pairs = measured_pairs(rows)
    assert list(pairs.target[:3]) == ["<= 1", "<= 1", "<= 5"] and pairs.target.iloc[-1] == "report"
    assert list(official_notes(rows).columns) == ["pair", "official approach", "note"]
    printed = {("ViT-B/32", "TaLoS", "total_iter_time"): 0.44, ("ViT-L/14", "TaLoS", "peak_memory"): 0.6}
    side = beside_paper(rows, printed)
    assert side.loc[0, "ours"] == pytest.approx(0.4) and side.loc[0, "paper ViT-B/32"] == pytest.approx(0.44)
    assert side.loc[1, "paper ViT-L/14"] == pytest.approx(0.6) and pd.isna(side.loc[2, "ours"])
    assert list(scaling_exponents(rows).quantity) == ["scaling exponent, graft step"]
