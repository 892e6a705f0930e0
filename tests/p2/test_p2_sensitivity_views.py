"""Tables and figures of the P2 sensitivity chapter (repro.p2.sensitivity.views) on hand-made inputs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from repro.core.evaluation import Predictions  # noqa: E402
from repro.core.masks import Mask  # noqa: E402
from repro.p2.sensitivity import runs as sensitivity  # noqa: E402
from repro.p2.sensitivity.runs import RANDOM_SOURCE  # noqa: E402
from repro.p2.sensitivity.views import (PRETRAINED, edit_examples, edit_summary_rows, overlap_summary,  # noqa: E402
                                        plot_iou_heatmap, plot_ratio_heatmap, selection_table)


def _ratios() -> pd.DataFrame:
    vals = {("A", "A"): 1.0, ("A", "B"): 0.9, ("B", "A"): 0.8, ("B", "B"): 0.96}
    rows = [{"source": s, "task": t, "ratio": v, "mean_abs": 0.1 if s == "A" else 0.2, "std": 0.3}
            for (s, t), v in vals.items()]
    return pd.DataFrame(rows + [{"source": RANDOM_SOURCE, "task": t, "ratio": 0.5, "mean_abs": 0.4, "std": 0.5}
                                for t in "AB"])


def test_edit_summary_rows_mean_min_diagonal_offdiagonal_random():
    rows = edit_summary_rows(_ratios(), "prune 10% least sensitive", "Fig. 1", 0.1, "m")
    values = [r["value"] for r in rows]
    assert values == pytest.approx([0.915, 0.8, 0.98, 0.85, 0.5])
    assert rows[-1]["method"] == "prune 10% random (reference)"
    assert all(r["sparsity"] == pytest.approx(10.0) and r["model"] == "m" for r in rows)
    assert "Fig. 1" in rows[0]["paper_text"]


def test_overlap_summary_off_diagonal_and_chance():
    iou = pd.DataFrame([{"a": a, "b": b, "iou": 1.0 if a == b else 0.4} for a in "AB" for b in "AB"])
    rows, miou, chance = overlap_summary(iou, 0.1)
    assert miou == pytest.approx(0.4)
    assert chance == pytest.approx(0.1 / 1.9)
    assert [r["paper_text"] for r in rows[:2]] == ["> 0.7", "0.3–0.5"]
    assert rows[2]["value"] == pytest.approx(chance)


def test_selection_table_one_row_per_source():
    t = selection_table(_ratios())
    assert list(t.index) == ["A", "B", RANDOM_SOURCE]
    assert t.loc["B", "mean |w| of selected"] == pytest.approx(0.2)


def test_heatmaps_draw_the_requested_grid():
    fig = plot_ratio_heatmap(_ratios(), ["A", "B", RANDOM_SOURCE], ["A", "B"], "t")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["A", "B", RANDOM_SOURCE]
    iou = pd.DataFrame([{"a": a, "b": b, "iou": 0.5} for a in "AB" for b in "AB"])
    fig2 = plot_iou_heatmap(iou, ["B", "A"], "t")
    assert [t.get_text() for t in fig2.axes[0].get_xticklabels()] == ["B", "A"]
    plt.close("all")


class _Spec:
    metric = "acc"


class _Model:
    specs = {"A": _Spec(), "B": _Spec()}


class _Workbench:
    """Stands in for the workbench: the unedited model is right on 4 of 5 examples; an edit makes it wrong on one
    more example per weight it changed."""

    model = _Model()
    pre = {"w": torch.arange(1.0, 21.0).reshape(4, 5), "v": torch.ones(10)}

    def predict(self, task, split, overrides, examples):
        n = len(examples)
        labels = torch.zeros(n, dtype=torch.long)
        right = torch.arange(n) % 5 != 0
        if overrides is not None:
            moved = int(sum(float((overrides[k] != self.pre[k]).sum()) for k in overrides))
            right[1:1 + moved] = False
        logits = torch.stack([right.float(), (~right).float()], dim=1)
        return Predictions(logits, labels)


def test_edit_examples_gives_edit_matrix_rows_and_the_per_example_correctness():
    wb = _Workbench()
    masks = {s: Mask.random({"w": (4, 5), "v": (10,)}, 3, seed=i) for i, s in enumerate(["A", "B", RANDOM_SOURCE])}
    sets = {"A": list(range(40)), "B": list(range(30))}
    for edit in ("prune", "perturb"):
        df, ex = edit_examples(wb, masks, sets, edit=edit, seed=1)
        pd.testing.assert_frame_equal(df, sensitivity.edit_matrix(wb, masks, sets, edit=edit, seed=1))
        assert set(ex) == {PRETRAINED, "A", "B", RANDOM_SOURCE} and len(ex["B"]["B"]) == 30
        assert ex[PRETRAINED]["A"].mean() == pytest.approx(0.8)
        for _, r in df.iterrows():
            assert r.ratio == pytest.approx(ex[r.source][r.task].mean() / ex[PRETRAINED][r.task].mean())
    with pytest.raises(ValueError, match="prune or perturb"):
        edit_examples(wb, masks, sets, edit="zero")
