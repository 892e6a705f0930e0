"""P1 §4.1: relative ECE reduction and the "< 5% accuracy cost" condition; model comparison on a workbench."""

from __future__ import annotations

import math

import pytest

from repro.p1.calibration import compare_models, ece_reduction, reduction_rows


def test_ece_reduction_and_condition():
    assert ece_reduction(0.10, 0.04) == pytest.approx(0.6)
    assert math.isnan(ece_reduction(0.0, 0.1))
    rows = [{"task": "A", "method": "FT", "value": 0.90, "ece": 0.10},
            {"task": "A", "method": "Graft", "value": 0.88, "ece": 0.02},
            {"task": "B", "method": "FT", "value": 0.80, "ece": 0.20},
            {"task": "B", "method": "Graft", "value": 0.70, "ece": 0.05}]
    out = {r["task"]: r for r in reduction_rows(rows)}
    assert out["A"]["reduction"] == pytest.approx(0.8) and out["A"]["within_5pct"]
    assert out["B"]["relative_drop"] == pytest.approx(0.125) and not out["B"]["within_5pct"]


def test_compare_models_rows_and_histograms(tmp_path):
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    wb.task("SST-2")
    rows, hist, preds = compare_models(wb, "SST-2", {"FT": None, "Graft": None})
    assert {r["method"] for r in rows} == {"FT", "Graft"} and all(r["agreement"] == 1.0 for r in rows)
    assert len(hist) == 20 and abs(sum(h["fraction"] for h in hist if h["method"] == "FT") - 1) < 1e-6
    with pytest.raises(KeyError, match="reference"):
        compare_models(wb, "SST-2", {"Graft": None})
