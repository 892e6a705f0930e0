"""P1 §4.1: relative ECE reduction and the "< 5% accuracy cost" condition; model comparison on a workbench."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from repro.core.metrics import confidence_histogram, expected_calibration_error
from repro.data import TaskData
from repro.jobcall import ChapterJobs
from repro.p1.calibration import (EceTable, compare_models, confidence_fractions, ece_from_confidence,
                                  ece_reduction, ece_table, reduction_rows)
from repro.jobs import finetune_job, graft_job
from repro.profiles import FinetuneRecipe, get_profile

from conftest import SENTIMENT


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


def test_ece_from_confidence_matches_the_core_metric_and_its_histogram():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(3 * torch.randn(500, 3, generator=g), -1)
    probs[:5] = torch.tensor([0.3, 0.3, 0.4])  # an exact bin edge (0.4): the same bin in both
    labels = torch.randint(0, 3, (500,), generator=g)
    conf, top = probs.max(-1)
    correct = (top == labels).numpy()
    assert ece_from_confidence(conf.numpy(), correct) == pytest.approx(expected_calibration_error(probs, labels))
    assert [h["fraction"] for h in confidence_fractions(conf.numpy())] == pytest.approx(
        [h["fraction"] for h in confidence_histogram(probs)])
    with pytest.raises(ValueError, match="one shape"):
        ece_from_confidence(conf.numpy(), correct[:-1])


def _table() -> EceTable:
    t = EceTable()
    for s, (ft, gr, e_ft, e_gr) in zip((13, 21), ((0.80, 0.78, 0.10, 0.04), (0.82, 0.80, 0.12, 0.02))):
        t.runs += [{"task": "A", "method": "FT", "seed": s, "metric": "acc", "value": ft, "ece": e_ft,
                    "agreement": 1.0, "sparsity": 100.0},
                   {"task": "A", "method": "Graft", "seed": s, "metric": "acc", "value": gr, "ece": e_gr,
                    "agreement": 0.9, "sparsity": 0.01}]
        t.per_example[("A", s)] = {"conf_ft": np.full(4, 0.9), "conf_graft": np.full(4, 0.6)}
    return t


def test_ece_table_summary_rows_and_pooled_histogram():
    t = _table()
    summ = {r["method"]: r for r in t.summary()}
    assert summ["FT"]["ece"] == pytest.approx(0.11)
    assert summ["FT"]["ece_std"] == pytest.approx(np.std([0.10, 0.12], ddof=1))
    assert summ["Graft"]["n_seeds"] == 2 and summ["Graft"]["value"] == pytest.approx(0.79)
    rows = {(r["method"], r["metric"]): r for r in t.table_rows(16)}
    assert rows[("Graft", "ece")]["value"] == pytest.approx(3.0) and rows[("Graft", "ece")]["std"] > 0
    assert ("FT", "agreement") not in rows and rows[("Graft", "agreement")]["value"] == pytest.approx(90.0)
    red = t.reduction()[0]
    assert red["reduction"] == pytest.approx(1 - 0.03 / 0.11) and red["within_5pct"]
    hist = {(h["method"], h["bin_lo"]): h["fraction"] for h in t.hist()}
    assert hist[("FT", 0.8)] == 1.0 and hist[("Graft", 0.5)] == 1.0


def test_ece_table_scores_the_declared_ft_and_graft_of_each_seed(tmp_path, monkeypatch, sent_examples):
    import repro.workbench
    from repro.workbench import Workbench

    def fake_load_task(name, profile, seed=13, k=None, data_dir=None):
        return TaskData(SENTIMENT, train=list(sent_examples), dev=list(sent_examples[::2]), test=list(sent_examples))

    monkeypatch.setattr(repro.workbench, "load_task", fake_load_task)
    prof = get_profile("smoke").with_(p1_finetune=FinetuneRecipe(optimizer="sgd", lr=5e-2, batch_size=4, steps=4,
                                                                 eval_every=0), graft_steps=2)
    wb = Workbench(prof, artifacts_dir=tmp_path)
    fts = [finetune_job(prof, "p1_test", "sent", prof.p1_finetune, seed=s) for s in (13, 21)]
    specs = [*fts, *(graft_job(prof, "p1_test", "sent", ft, 0.05, seed=ft.kwargs["seed"]) for ft in fts)]
    jobs = ChapterJobs(wb, "p1_test", None, specs=specs)
    t = ece_table(jobs, jobs.select(kind="graft"))
    assert set(t.per_example) == {("sent", 13), ("sent", 21)} and set(jobs.obtained) == {s.id for s in specs}
    assert {(r["method"], r["seed"]) for r in t.runs} == {(m, s) for m in ("FT", "Graft") for s in (13, 21)}
    pe = t.per_example[("sent", 13)]
    assert len(pe["conf_ft"]) == len(pe["agree"]) == len(sent_examples)
    ft = next(r for r in t.runs if r["method"] == "FT" and r["seed"] == 13)
    assert ft["ece"] == pytest.approx(ece_from_confidence(pe["conf_ft"], pe["correct_ft"]), abs=1e-6)
