"""P1 §4.2 OOD label mapping: target labels onto the source task's label space."""

from __future__ import annotations

import pytest
import torch

from repro.data import Example, TaskSpec
from repro.p1.ood import label_mapping, map_examples

QNLI = TaskSpec("QNLI", ("entailment", "not_entailment"), pair=True, label_prompts=("a", "b"))
MNLI = TaskSpec("MNLI", ("entailment", "neutral", "contradiction"), pair=True, label_prompts=("a", "b", "c"))
SST2 = TaskSpec("SST-2", ("negative", "positive"), label_prompts=("a", "b"))
YELP = TaskSpec("Yelp", ("negative", "positive"), label_prompts=("a", "b"))


def test_nli_binarization_follows_the_paper():
    assert label_mapping(QNLI, MNLI) == {0: 0, 1: None, 2: 1}  # neutral dropped (P1 footnote 2)
    assert label_mapping(QNLI, MNLI, neutral="not_entailment") == {0: 0, 1: 1, 2: 1}
    ex = [Example("p", 0, "h"), Example("p", 1, "h"), Example("p", 2, "h")]
    out = map_examples(ex, label_mapping(QNLI, MNLI))
    assert [e.label for e in out] == [0, 1] and out[0].text_b == "h"
    with pytest.raises(ValueError, match="choose one of"):
        label_mapping(QNLI, MNLI, neutral="keep")


def test_sentiment_maps_by_name_and_mismatches_fail():
    assert label_mapping(SST2, YELP) == {0: 0, 1: 1}
    with pytest.raises(ValueError, match="counterpart"):
        label_mapping(SST2, MNLI)
    with pytest.raises(ValueError, match="same input format"):
        label_mapping(TaskSpec("X", ("entailment", "not_entailment"), label_prompts=("a", "b")), MNLI)


def test_ood_examples_use_source_label_space(tmp_path):
    from repro.p1.ood import ood_accuracy, ood_examples
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    ex = ood_examples(wb, "QNLI", "MNLI")
    mnli = wb.task("MNLI").test
    assert len(ex) == sum(e.label != 1 for e in mnli) and {e.label for e in ex} <= {0, 1}
    acc = ood_accuracy(wb, "QNLI", ["MNLI"])
    assert set(acc) == {"QNLI", "MNLI"} and all(0 <= v <= 1 for v in acc.values())


def test_wise_curve_endpoints(tmp_path):
    from repro.core.masks import Mask
    from repro.p1.ood import best_point, ood_accuracy, wise_curve
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    wb.task("QNLI")
    names = wb.names("graftable")
    tau = {n: 0.05 * torch.randn_like(wb.pre[n]) for n in names[:4]}
    rows = wise_curve(wb, "QNLI", ["MNLI"], tau, [0.0, 1.0], limit=16)
    assert [r["alpha"] for r in rows] == [0.0, 1.0]
    assert rows[0]["id"] == pytest.approx(ood_accuracy(wb, "QNLI", ["MNLI"], None, limit=16)["QNLI"])
    assert rows[1]["MNLI"] == pytest.approx(ood_accuracy(wb, "QNLI", ["MNLI"], wb.overrides(tau), limit=16)["MNLI"])
    empty = Mask.empty(wb.shapes("graftable"))
    g = wise_curve(wb, "QNLI", ["MNLI"], tau, [1.0], mask=empty, label="WiSE-Graft", limit=16)
    assert g[0]["id"] == pytest.approx(rows[0]["id"])  # empty graft = θ_pre
    assert best_point(rows)["ood"] == max(r["ood"] for r in rows)


def test_wise_rows_are_the_means_of_the_per_example_results():
    import numpy as np

    from repro.p1.ood import wise_rows

    correct = {0.0: {"QNLI": np.array([1, 0, 0, 0]), "MNLI": np.array([1, 1, 0, 0]), "SNLI": np.array([0, 0])},
               1.0: {"QNLI": np.array([1, 1, 1, 0]), "MNLI": np.array([1, 1, 1, 1]), "SNLI": np.array([1, 0])}}
    rows = wise_rows(correct, "QNLI", ["MNLI", "SNLI"], label="WiSE-Graft")
    assert [r["alpha"] for r in rows] == [0.0, 1.0] and rows[1]["method"] == "WiSE-Graft"
    assert rows[0]["id"] == 0.25 and rows[1]["ood"] == pytest.approx(0.75)  # mean of the targets' accuracies
