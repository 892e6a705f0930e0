"""Cached LoRA / adapter runs on a workbench (P1 Tables 6-7): budgets, caching, model left at θ_pre."""

from __future__ import annotations

import torch

from repro.p1.peft_baselines import adapter_applied, adapter_params, adapter_run, budget_pct, lora_params, lora_run
from repro.profiles import FinetuneRecipe

RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=3, weight_decay=0.0, eval_every=0)


def test_lora_and_adapter_runs_are_cached_and_leave_pre(tmp_path):
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    before = {n: p.detach().clone() for n, p in wb.model.named_parameters()}
    tau, meta = lora_run(wb, "SST-2", 1, RECIPE)
    assert tau and all(n in wb.pre for n in tau) and meta["train"]["trainable_count"] == lora_params(wb, 1)
    again, _ = lora_run(wb, "SST-2", 1, RECIPE)
    assert all(torch.equal(tau[n], again[n]) for n in tau)
    weights, meta = adapter_run(wb, "SST-2", "houlsby", 2, RECIPE)
    assert meta["train"]["trainable_count"] == adapter_params(wb, "houlsby", 2)
    base = wb.evaluate("SST-2")
    with adapter_applied(wb, "houlsby", 2, weights):
        inside = wb.predict("SST-2").logits
    assert torch.allclose(wb.predict("SST-2").logits, wb.predict("SST-2").logits)
    assert not hasattr(wb.model, "adapters") and base["acc"] == wb.evaluate("SST-2")["acc"]
    assert inside.shape[0] == len(wb.task("SST-2").test)
    after = dict(wb.model.named_parameters())
    assert all(torch.equal(after[n], v) for n, v in before.items())
    assert 0 < budget_pct(wb, lora_params(wb, 1)) < budget_pct(wb, lora_params(wb, 2))
