"""LoRA folded into a task vector reproduces the LoRA model; adapters train and leave no trace."""

from __future__ import annotations

import torch

from repro.core.adapters import adapter_finetune, adapter_sites, bottleneck_adapters, lora_finetune
from repro.core.evaluation import predict
from repro.profiles import FinetuneRecipe

RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=4, steps=5, weight_decay=0.0, eval_every=0)


def test_lora_task_vector_matches_lora_model(tiny_model, sent_examples):
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    tau, res = lora_finetune(tiny_model, {"sent": sent_examples}, RECIPE, rank=2, alpha=4, progress=False)
    assert res.trainable_count > 0 and tau
    assert all(".query." in n or ".value." in n for n in tau)
    # the model is untouched
    after = dict(tiny_model.named_parameters())
    assert set(after) == set(before) and all(torch.equal(after[n], before[n]) for n in before)
    # applying τ changes predictions (B was trained away from zero)
    own = {n: before[n] + v for n, v in tau.items()}
    assert any(float(v.abs().max()) > 0 for v in tau.values())
    a = predict(tiny_model, sent_examples, "sent").logits
    b = predict(tiny_model, sent_examples, "sent", overrides=own).logits
    assert not torch.equal(a, b)


def test_adapters_train_and_are_removed(tiny_model, sent_examples):
    assert len(adapter_sites(tiny_model, "houlsby")) == 2 * len(adapter_sites(tiny_model, "pfeiffer"))
    base = predict(tiny_model, sent_examples, "sent").logits
    with bottleneck_adapters(tiny_model, "pfeiffer", 4) as names:
        same = predict(tiny_model, sent_examples, "sent").logits
        assert torch.allclose(base, same, atol=1e-6)  # zero-init up-projection = identity
        adapter_finetune(tiny_model, {"sent": sent_examples}, RECIPE, names, progress=False)
        moved = predict(tiny_model, sent_examples, "sent").logits
        assert not torch.allclose(base, moved)
    assert not hasattr(tiny_model, "adapters")
    assert torch.equal(predict(tiny_model, sent_examples, "sent").logits, base)
