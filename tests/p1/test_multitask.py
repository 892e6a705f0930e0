"""P1 §5.1: Eq. 5, asymmetric overlap rows, unions, and the joint graft optimization (Fig. 8d)."""

from __future__ import annotations

import math

import pytest
import torch

from repro.core.finetune import train
from repro.core.grafting import learn_joint_graft
from repro.core.masks import Mask
from repro.core.taskvec import TaskVector
from repro.p1.multitask import overlap_rows, relative_gain, union_regions
from repro.profiles import FinetuneRecipe, GraftRecipe


def _masks():
    shapes = {"a": (4,), "b": (2, 3)}
    g1 = Mask({"a": torch.tensor([1, 1, 0, 0]), "b": torch.zeros(2, 3)}, shapes)
    g2 = Mask({"a": torch.tensor([0, 1, 1, 1]), "b": torch.tensor([[1, 0, 0], [0, 0, 0]])}, shapes)
    return g1, g2


def test_relative_gain_eq5():
    assert relative_gain(0.8, 0.5, 0.9) == pytest.approx(0.75)
    assert relative_gain(0.5, 0.5, 0.9) == 0.0 and relative_gain(0.9, 0.5, 0.9) == 1.0
    assert math.isnan(relative_gain(0.7, 0.6, 0.6))


def test_overlap_rows_are_asymmetric_and_unions_cover():
    g1, g2 = _masks()
    rows = {(r["row"], r["col"]): r["overlap"] for r in overlap_rows({"x": g1, "y": g2})}
    assert rows[("x", "x")] == 1.0 and rows[("y", "y")] == 1.0
    assert rows[("x", "y")] == pytest.approx(1 / 4)  # |γx ∩ γy| / |γy|
    assert rows[("y", "x")] == pytest.approx(1 / 2)  # |γy ∩ γx| / |γx|
    u = union_regions({"x": g1, "y": g2}, {"xy": ["x", "y"]})["xy"]
    assert u.count() == 5 and (u & g1) == g1 and (u & g2) == g2
    with pytest.raises(KeyError, match="regions exist for"):
        union_regions({"x": g1}, {"bad": ["x", "z"]})


def test_joint_graft_starts_from_union_and_never_scores_worse(tiny_model, sent_examples, topic_examples):
    names = tiny_model.graftable_names()
    pre = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    train(tiny_model, {"sent": sent_examples, "topic": topic_examples},
          FinetuneRecipe(optimizer="adamw", lr=3e-3, batch_size=4, steps=20, weight_decay=0.0, eval_every=0),
          names, progress=False)
    ft = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    with torch.no_grad():
        for n, p in tiny_model.named_parameters():
            p.copy_(pre[n])
    delta = TaskVector.from_models(pre, ft, names).tensors
    union = Mask.top_fraction({n: d.abs() for n, d in delta.items()}, 0.05)
    data = {"sent": sent_examples, "topic": topic_examples}
    res = learn_joint_graft(tiny_model, ["sent", "topic"], delta, data, data, union,
                            GraftRecipe(steps=3, batch_size=4), progress=False)
    hist = res.history
    assert hist[0]["step"] == 0 and hist[0]["count"] == union.count() and len(hist) == 4
    assert max(h["score"] for h in hist) == pytest.approx(hist[res.best_step]["score"])
    assert hist[res.best_step]["score"] >= hist[0]["score"]
    assert all(torch.equal(p, pre[n]) for n, p in tiny_model.named_parameters())  # model left at θ_pre
    with pytest.raises(KeyError, match="no training data"):
        learn_joint_graft(tiny_model, ["sent", "nope"], delta, data, data, union, GraftRecipe(steps=1),
                          progress=False)


def test_region_sizes():
    from repro.p1.multitask import region_sizes

    shapes = {"w": (10,)}
    regions = {"B": Mask.random(shapes, 3, seed=0), "A": Mask.random(shapes, 5, seed=1)}
    rows = region_sizes(regions, {"A": {"best_step": 2}, "B": {}})
    assert [(r["task"], r["region size"], r["density %"], r["best step"]) for r in rows] == [
        ("B", 3, 30.0, None), ("A", 5, 50.0, 2)]
