"""Post-hoc linearization (P2 Fig. 6) and output-gradient drift along training (P2 Fig. 7)."""

from __future__ import annotations

import pytest
import torch

from repro.p2.linear_regime import (SnapshotRecorder, gradient_drift, linearized_accuracy, snapshot_steps,
                                 train_with_snapshots)
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe

RECIPE = FinetuneRecipe(optimizer="adamw", lr=1e-2, batch_size=4, steps=6, weight_decay=0.0, eval_every=0)


def _pre(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_linearized_accuracy_matches_network_for_tiny_vector(tiny_model, sent_examples):
    pre = _pre(tiny_model)
    names = tiny_model.maskable_names()
    g = torch.Generator().manual_seed(0)
    tiny = {n: 1e-6 * torch.randn(pre[n].shape, generator=g) for n in names}
    out = linearized_accuracy(tiny_model, sent_examples, "sent", pre, tiny)
    assert out["agreement"] == 1.0 and out["ft"] == out["lin"]
    # a large vector: the Taylor expansion and the network disagree somewhere, but both are valid accuracies
    big = {n: 5.0 * torch.randn(pre[n].shape, generator=g) for n in names}
    out = linearized_accuracy(tiny_model, sent_examples, "sent", pre, big)
    assert 0.0 <= out["ft"] <= 1.0 and 0.0 <= out["lin"] <= 1.0
    # the model itself is untouched
    assert all(torch.equal(p, pre[n]) for n, p in tiny_model.named_parameters())


def test_snapshot_steps():
    assert snapshot_steps(100, 1) == [100]
    s = snapshot_steps(100, 5)
    assert s[0] == 1 and s[-1] == 100 and s == sorted(set(s))


def test_train_with_snapshots_restores_model_and_records(tiny_model, sent_examples):
    pre = _pre(tiny_model)
    names = tiny_model.maskable_names()
    shapes = {n: tuple(pre[n].shape) for n in names}
    mask = Mask.random(shapes, 50, seed=0)
    res, snaps = train_with_snapshots(tiny_model, {"sent": sent_examples}, RECIPE, mask, steps=[2, 6],
                                      stop_early=False)
    assert sorted(snaps) == [0, 2, 6] and res.trainable_count == 50
    assert all(torch.equal(p, pre[n]) for n, p in tiny_model.named_parameters())
    # entries outside the mask never move; entries inside do
    for n in mask.nonempty_names():
        m = mask.tensors[n]
        assert torch.equal(snaps[6][n][~m], pre[n][~m])
    moved = sum(int((snaps[6][n] != pre[n]).sum()) for n in snaps[6])
    assert 0 < moved <= 50


def test_early_stop_matches_the_full_run(tiny_model, sent_examples):
    names = tiny_model.maskable_names()
    _, full = train_with_snapshots(tiny_model, {"sent": sent_examples}, RECIPE, names, steps=[3], stop_early=False)
    res, short = train_with_snapshots(tiny_model, {"sent": sent_examples}, RECIPE, names, steps=[3])
    assert res is None and sorted(short) == [0, 3]
    assert all(torch.equal(full[3][n], short[3][n]) for n in names)
    assert all(not p.requires_grad and p.grad is None for p in tiny_model.parameters()) and not tiny_model.training


def test_gradient_drift_zero_at_start_and_grows(tiny_model, sent_examples):
    names = tiny_model.maskable_names()
    res, snaps = train_with_snapshots(tiny_model, {"sent": sent_examples}, RECIPE, names, steps=[1, 6])
    rows = gradient_drift(tiny_model, sent_examples[:4], "sent", snaps, names, chunk_size=2)
    by = {r["step"]: r for r in rows}
    assert by[0]["rel_change"] < 1e-12 and by[6]["rel_change"] > 0
    assert by[6]["rel_change"] >= by[1]["rel_change"] * 0.5  # grows (not strictly, but not collapsing)
    assert len(by[6]["rel_per_example"]) == 4  # each example's ratio, whose mean is rel_change
    assert sum(by[6]["rel_per_example"]) / 4 == pytest.approx(by[6]["rel_change"])


def test_gradient_drift_is_the_full_jacobian_ratio(tiny_model, sent_examples):
    """Fig. 7's ratio, streamed one output class at a time, equals E_x ‖J_i(x) − J_0(x)‖²_F / ‖J_0(x)‖²_F from the
    whole Jacobian built at once (autograd, one backward pass per example and class)."""
    names = tiny_model.maskable_names()
    _, snaps = train_with_snapshots(tiny_model, {"sent": sent_examples}, RECIPE, names, steps=[2, 5])
    ex = sent_examples[:3]
    rows = {r["step"]: r for r in gradient_drift(tiny_model, ex, "sent", snaps, names, chunk_size=2)}
    params = dict(tiny_model.named_parameters())
    base = {n: params[n].detach().clone() for n in names}

    def jacobian(x, at):
        with torch.no_grad():
            for n in names:
                params[n].copy_(at.get(n, base[n]))
        out = []
        for c in range(tiny_model.specs["sent"].num_labels):
            logit = tiny_model(tiny_model.tokenize("sent", [x]), "sent")[0, c]
            grads = torch.autograd.grad(logit, [params[n] for n in names])
            out.append(torch.cat([g.double().flatten() for g in grads]))
        return torch.stack(out)

    for n in names:
        params[n].requires_grad_(True)
    tiny_model.eval()
    try:
        for step in (2, 5):
            ratios = []
            for x in ex:
                j0, ji = jacobian(x, {}), jacobian(x, snaps[step])
                ratios.append(float((ji - j0).pow(2).sum() / j0.pow(2).sum()))
            assert rows[step]["rel_per_example"] == pytest.approx(ratios, rel=1e-4, abs=1e-12)
    finally:
        with torch.no_grad():
            for n in names:
                params[n].copy_(base[n])
                params[n].requires_grad_(False)


def test_recorder_copies():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2))

    m = M()
    rec = SnapshotRecorder([1], ["w"])
    rec(1, m)
    with torch.no_grad():
        m.w.add_(1)
    rec(2, m)
    assert list(rec.snapshots) == [1] and torch.equal(rec.snapshots[1]["w"], torch.zeros(2))


def test_drift_replay_is_the_zoo_run(tmp_path):
    """The checkpoints Fig. 7 replays are those of the zoo's own cached run (same final parameters)."""
    from repro.p2.linear_regime import drift_curve, zoo_trainable
    from repro.p2.methods import finetune_method, p2_recipe
    from repro.workbench import Workbench

    wb = Workbench("smoke", artifacts_dir=tmp_path)
    rec = p2_recipe(wb.profile)
    for method in ("ft", "lota"):
        tau = finetune_method(wb, "SST-2", method)
        _, snaps = train_with_snapshots(wb.model, {"SST-2": wb.task("SST-2").train}, rec,
                                        zoo_trainable(wb, "SST-2", method), [rec.steps], seed=wb.seed)
        for n, v in snaps[rec.steps].items():
            assert torch.equal(v - wb.pre[n], tau.get(n, torch.zeros_like(v)))
    ex = wb.task("SST-2").test[:2]
    rows = drift_curve(wb, "SST-2", "lota", [1, 2], ex)
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[0]["rel_change"] == 0.0
    assert drift_curve(wb, "SST-2", "lota", [1, 2], ex) == rows  # cached
    assert all(r["rel_change"] == 0.0 for r in drift_curve(wb, "SST-2", "linearized", [1, 2], ex))
