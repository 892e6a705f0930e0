"""P1 §5.2 / App. C.3: which entries grafting-continual trains, and which region it infers with."""

from __future__ import annotations

import pytest
import torch

from repro.p1.continual import continual_trainable, inference_region
from repro.core.masks import Mask

SHAPES = {"w": (6,)}


def _m(bits):
    return Mask({"w": torch.tensor(bits, dtype=torch.bool)}, SHAPES)


REGIONS = {"QNLI": _m([1, 1, 0, 0, 0, 0]), "AGNews": _m([0, 1, 1, 0, 0, 0]), "SST-2": _m([1, 0, 1, 1, 0, 0])}
SEQ = ["QNLI", "AGNews", "SST-2"]


def test_trainable_is_own_region_minus_previous():
    assert continual_trainable(REGIONS, SEQ, 0) == REGIONS["QNLI"]
    assert continual_trainable(REGIONS, SEQ, 1) == _m([0, 0, 1, 0, 0, 0])
    assert continual_trainable(REGIONS, SEQ, 2) == _m([0, 0, 0, 1, 0, 0])
    with pytest.raises(KeyError, match="regions exist for"):
        continual_trainable({"QNLI": REGIONS["QNLI"]}, SEQ, 1)


def test_inference_uses_union_up_to_the_task():
    assert inference_region(REGIONS, SEQ, "QNLI") == REGIONS["QNLI"]
    assert inference_region(REGIONS, SEQ, "AGNews") == _m([1, 1, 1, 0, 0, 0])
    assert inference_region(REGIONS, SEQ, "SST-2") == _m([1, 1, 1, 1, 0, 0])
    with pytest.raises(KeyError, match="not in the sequence"):
        inference_region(REGIONS, SEQ, "MNLI")


def test_trained_sets_are_disjoint_and_cover_the_union():
    parts = [continual_trainable(REGIONS, SEQ, n) for n in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert (parts[i] & parts[j]).count() == 0
    assert Mask.union(parts) == Mask.union(REGIONS.values())


def test_sequential_finetune_is_forget_free_with_regions(tmp_path):
    from repro.p1.continual import continual_overrides, sequential_finetune
    from repro.profiles import FinetuneRecipe
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    seq = ["QNLI", "SST-2"]
    recipe = FinetuneRecipe(optimizer="sgd", lr=1e-2, batch_size=4, steps=4, eval_every=2)
    shapes = wb.shapes("graftable")
    regions = {"QNLI": Mask.random(shapes, 200, seed=0), "SST-2": Mask.random(shapes, 200, seed=1)}
    naive = sequential_finetune(wb, seq, recipe)
    graft = sequential_finetune(wb, seq, recipe, regions=regions)
    assert len(naive) == len(graft) == 2
    # stage 1 shares the single-task caches (plain FT / graft re-training)
    assert all(torch.equal(naive[0][n], v) for n, v in wb.finetune("QNLI", recipe).items())
    # grafting-continual: stage-2 changes only γ_SST-2 \\ γ_QNLI, so QNLI's grafted model is unchanged
    only = continual_trainable(regions, seq, 1)
    for n in shapes:
        d = graft[1].get(n, torch.zeros(shapes[n])) - graft[0].get(n, torch.zeros(shapes[n]))
        assert not bool((d != 0)[~only.tensors[n]].any())
    a = continual_overrides(wb, graft[0], regions, seq, "QNLI")
    b = continual_overrides(wb, graft[1], regions, seq, "QNLI")
    assert all(torch.allclose(a[n], b[n]) for n in a)
    again = sequential_finetune(wb, seq, recipe, regions=regions)  # cached
    assert all(torch.equal(again[1][n], graft[1][n]) for n in graft[1])
