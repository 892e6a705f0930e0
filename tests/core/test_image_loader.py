"""Image batches of the training and evaluation loops come from one DataLoader path (decoding and augmentation in
worker processes, pinned memory on CUDA); the result does not depend on the number of workers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from repro.core.evaluation import batches, predict
from repro.core.finetune import train
from repro.data import TaskSpec
from repro.data.tasks import ImageExample
from repro.models.clip import build_tiny_clip
from repro.profiles import FinetuneRecipe

SPEC = TaskSpec("tiny-images", ("cat", "dog", "car"), family="vision")


def _model():
    model = build_tiny_clip(seed=0)
    model.add_task(SPEC)
    for p in model.parameters():
        p.requires_grad_(False)
    return model.eval()


def _examples(tmp_path, n: int = 12) -> list[ImageExample]:
    """PIL images and image files (decoded in the workers), 40 px: the tiny model's 32 px transforms crop them."""
    rng = np.random.RandomState(0)
    out = []
    for i in range(n):
        img = Image.fromarray(rng.randint(0, 255, (40, 40, 3), dtype=np.uint8))
        if i % 2:
            path = tmp_path / f"{i}.png"
            img.save(path)
            img = str(path)
        out.append(ImageExample(img, i % 3))
    return out


@pytest.fixture
def spy_loader(monkeypatch):
    seen: list[int] = []
    real = torch.utils.data.DataLoader

    class Spy(real):
        def __init__(self, *a, **kw):
            seen.append(kw.get("num_workers", 0))
            super().__init__(*a, **kw)

    monkeypatch.setattr(torch.utils.data, "DataLoader", Spy)
    return seen


def test_workers_give_the_same_predictions_and_training(tmp_path, spy_loader):
    examples = _examples(tmp_path)
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=3, weight_decay=0.1, eval_every=0,
                            no_decay_bias_ln=False)
    runs = []
    for workers in (0, 2):
        model = _model()
        before = predict(model, examples, SPEC.name, batch_size=5, num_workers=workers)
        res = train(model, {SPEC.name: examples}, recipe, model.maskable_names(), seed=7, progress=False,
                    num_workers=workers)
        after = predict(model, examples, SPEC.name, batch_size=5, num_workers=workers)
        runs.append((before, [r["loss"] for r in res.history], model.param_dict(model.maskable_names()), after))
    assert 2 in spy_loader and 0 in spy_loader  # both ran through the DataLoader
    (b0, l0, p0, a0), (b2, l2, p2, a2) = runs
    assert torch.equal(b0.logits, b2.logits) and torch.equal(b0.labels, b2.labels)
    assert l0 == l2
    assert all(torch.equal(p0[n], p2[n]) for n in p0)
    assert torch.equal(a0.logits, a2.logits) and not torch.equal(a0.logits, b0.logits)


def test_training_batches_are_augmented_and_evaluation_batches_are_not(tmp_path):
    model = _model()
    examples = _examples(tmp_path, 4)
    plan = [(SPEC.name, examples)]
    evals = [b["pixel_values"] for _, b in batches(model, plan)]
    again = [b["pixel_values"] for _, b in batches(model, plan)]
    trains = [b["pixel_values"] for _, b in batches(model, plan, train=True, seed=1)]
    assert torch.equal(evals[0], again[0]) and not torch.equal(evals[0], trains[0])
    assert torch.equal(evals[0], model.tokenize(SPEC.name, examples)["pixel_values"])  # the same eval transform
    same = [b["pixel_values"] for _, b in batches(model, plan, train=True, seed=1)]
    assert torch.equal(trains[0], same[0])  # seeded per batch
