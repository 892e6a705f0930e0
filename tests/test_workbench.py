"""The Workbench caches fine-tuned task vectors and graft regions and keeps the model at θ_pre."""

from __future__ import annotations

import torch

from repro.workbench import Workbench


def test_finetune_and_graft_are_cached(tmp_path):
    wb = Workbench("smoke", artifacts_dir=tmp_path)
    pre = {n: p.detach().clone() for n, p in wb.model.named_parameters()}
    vec = wb.finetune("SST-2")
    assert vec and all(n in wb.pre for n in vec)
    files = sorted(tmp_path.rglob("*.safetensors"))
    again = wb.finetune("SST-2")
    assert sorted(tmp_path.rglob("*.safetensors")) == files  # cache hit: nothing new written
    assert all(torch.equal(vec[n], again[n]) for n in vec)
    assert all(torch.equal(p, pre[n]) for n, p in wb.model.named_parameters() if n in pre)  # model stays at θ_pre
    ft = wb.evaluate("SST-2", overrides=wb.overrides(vec))
    mask, meta = wb.graft("SST-2", vec, base=0.01)
    assert meta["count"] == mask.count() and 0 < meta["density"] <= 1
    mask2, _ = wb.graft("SST-2", vec, base=0.01)
    assert mask2 == mask
    graft = wb.evaluate("SST-2", overrides=wb.overrides(vec, mask=mask))
    assert 0 <= graft["acc"] <= 1 and 0 <= ft["acc"] <= 1
