"""P1 grafting: the manual gradient equals autograd through frac; learned grafts; baselines."""

from __future__ import annotations

import torch

from repro.core.evaluation import evaluate, forward
from repro.core.finetune import train
from repro.core.grafting import (graft_fraction, graft_gradient, grafted_params, learn_graft, movement_mask, random_mask,
                                 zero_outside_params)
from repro.core.masks import Mask
from repro.core.taskvec import TaskVector
from repro.profiles import FinetuneRecipe, GraftRecipe


def _finetuned_delta(model, examples):
    names = model.graftable_names()
    pre = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, {"sent": examples}, FinetuneRecipe(optimizer="adamw", lr=3e-3, batch_size=8, steps=30,
                                                    weight_decay=0.0, eval_every=0), names, progress=False)
    ft = {n: p.detach().clone() for n, p in model.named_parameters()}
    with torch.no_grad():  # the model must hold θ_pre for grafting
        for n, p in model.named_parameters():
            p.copy_(pre[n])
    return TaskVector.from_models(pre, ft, names).tensors, ft


def test_graft_gradient_equals_autograd_through_frac(tiny_model, sent_examples):
    delta, _ = _finetuned_delta(tiny_model, sent_examples)
    tiny_model.eval()
    base = movement_mask(delta, 0.05)
    gen = torch.Generator().manual_seed(0)
    S = {n: torch.rand(d.shape, generator=gen) for n, d in delta.items()}
    # autograd: L(θ_pre + frac(S) ⊙ Δ) differentiated w.r.t. S directly (one batch = all examples)
    S_leaf = {n: s.clone().requires_grad_(True) for n, s in S.items()}
    frac = graft_fraction(S_leaf, base, 10.0)
    own = dict(tiny_model.named_parameters())
    theta = {n: own[n].detach() + frac[n] * delta[n] for n in delta}
    batch = tiny_model.tokenize("sent", sent_examples)
    loss = torch.nn.functional.cross_entropy(forward(tiny_model, batch, "sent", theta), batch["labels"])
    auto = torch.autograd.grad(loss, list(S_leaf.values()))
    # manual (P1 Eq. 4 as coded): (1-2γ) ⊙ mean(∂L/∂θ ⊙ Δ) ⊙ σ'(S-b)
    G = graft_gradient(tiny_model, "sent", sent_examples, delta, graft_fraction(S, base, 10.0),
                       batch_size=len(sent_examples))
    for (n, s), a in zip(S.items(), auto):
        g = base.tensors[n].float()
        sig = torch.sigmoid(s - 10.0)
        manual = (1 - 2 * g) * G[n] * sig * (1 - sig)
        assert torch.allclose(manual, a, rtol=1e-4, atol=1e-12), n


def test_learned_graft_reports_sparsity_and_recovers(tiny_model, sent_examples):
    delta, ft = _finetuned_delta(tiny_model, sent_examples)
    ft_acc = evaluate(tiny_model, sent_examples, "sent", overrides={n: ft[n] for n in delta})["acc"]
    res = learn_graft(tiny_model, "sent", delta, sent_examples, sent_examples, base=0.05,
                      recipe=GraftRecipe(lr=1e7, steps=3, batch_size=4), progress=False)
    assert len(res.history) == 3 and 0 < res.density <= 1
    assert all(0 <= h["density"] <= 1 for h in res.history)
    full = Mask.full(Mask.shapes_of(delta))
    assert evaluate(tiny_model, sent_examples, "sent", grafted_params(tiny_model, delta, full))["acc"] == ft_acc
    empty = grafted_params(tiny_model, delta, Mask.empty(Mask.shapes_of(delta)))
    own = dict(tiny_model.named_parameters())
    assert all(torch.equal(empty[n], own[n]) for n in delta)


def test_baseline_regions(tiny_model, sent_examples):
    delta, ft = _finetuned_delta(tiny_model, sent_examples)
    mv = movement_mask(delta, 0.1)
    total = sum(d.numel() for d in delta.values())
    assert mv.count() == int(0.1 * total)
    thresh = min(float(delta[n].abs()[mv.tensors[n]].min()) for n in mv.nonempty_names())
    outside = torch.cat([delta[n].abs()[~mv.tensors[n]] for n in delta])
    assert float(outside.max()) <= thresh
    rnd = random_mask(delta, mv.count(), seed=3)
    assert rnd.count() == mv.count()
    zo = zero_outside_params(tiny_model, delta, mv)
    n0 = mv.nonempty_names()[0]
    assert torch.allclose(zo[n0][mv.tensors[n0]], ft[n0][mv.tensors[n0]], atol=1e-7)
    assert bool((zo[n0][~mv.tensors[n0]] == 0).all())


def _reference_graft_step(model, task, examples, delta, S, base, lr, b, batch_size):
    """P1 Eq. 2-4 written the straightforward way (the official code's order of operations)."""
    own = dict(model.named_parameters())
    frac = {n: base.tensors[n].float() + (1 - 2 * base.tensors[n].float()) * torch.sigmoid(s - b) for n, s in S.items()}
    acc = {n: torch.zeros_like(d) for n, d in delta.items()}
    chunks = [examples[i:i + batch_size] for i in range(0, len(examples), batch_size)]
    for chunk in chunks:
        theta = {n: (own[n].detach() + frac[n] * delta[n]).requires_grad_(True) for n in delta}
        batch = model.tokenize(task, chunk)
        loss = torch.nn.functional.cross_entropy(forward(model, batch, task, theta), batch["labels"])
        for (n, _), g in zip(theta.items(), torch.autograd.grad(loss, list(theta.values()))):
            acc[n] += g * delta[n]
    out = {}
    for n, s in S.items():
        g, G, sig = base.tensors[n].float(), acc[n] / len(chunks), torch.sigmoid(s - b)
        out[n] = s - lr * (1 - 2 * g) * G * sig * (1 - sig)
    return out


def test_fused_graft_step_equals_reference(tiny_model, sent_examples):
    from repro.core.grafting import graft_step, graft_update

    delta, _ = _finetuned_delta(tiny_model, sent_examples)
    tiny_model.eval()
    base = movement_mask(delta, 0.05)
    gen = torch.Generator().manual_seed(1)
    S = {n: torch.rand(d.shape, generator=gen) for n, d in delta.items()}
    S_before = {n: s.clone() for n, s in S.items()}
    # one batch (full-batch GD), equal batches (grouped by length inside graft_update), a ragged last batch (kept in order)
    for batch_size in (len(sent_examples), 4, 3):
        ref = _reference_graft_step(tiny_model, "sent", sent_examples, delta, S, base, 1e7, 10.0, batch_size)
        fused = graft_update(tiny_model, "sent", sent_examples, delta, S, base, 1e7, 10.0, batch_size)
        parts = graft_step(S, graft_gradient(tiny_model, "sent", sent_examples, delta,
                                             graft_fraction(S, base, 10.0), batch_size), base, 1e7, 10.0)
        moved = 0.0
        for n in S:
            assert torch.allclose(fused[n], ref[n], rtol=1e-6, atol=1e-6), (batch_size, n, float((fused[n] - ref[n]).abs().max()), float(ref[n].abs().max()))
            assert torch.allclose(parts[n], ref[n], rtol=1e-6, atol=1e-6), (batch_size, n)
            moved = max(moved, float((ref[n] - S[n]).abs().max()))
        assert moved > 1e-3  # the step really moved S (the comparison is not between two copies of S)
        assert all(torch.equal(S[n], S_before[n]) for n in S)  # the inputs are left untouched
    frac = graft_fraction(S, base, 10.0)
    for n, s in S.items():
        g = base.tensors[n].float()
        assert torch.equal(frac[n], g + (1 - 2 * g) * torch.sigmoid(s - 10.0)), n


def test_the_best_s_is_picked_on_a_balanced_dev_subset_of_max_dev():
    import pytest

    from repro.core.grafting import _scored_dev
    from repro.data import Example

    dev = [Example(f"x{i}", i % 2) for i in range(40)]
    assert _scored_dev(dev, GraftRecipe(), seed=0) == dev  # None: the whole dev set (the official code)
    sub = _scored_dev(dev, GraftRecipe(max_dev=10), seed=0)
    assert len(sub) == 10 and sum(e.label for e in sub) == 5 and all(e in dev for e in sub)
    assert _scored_dev(dev, GraftRecipe(max_dev=10), seed=0) == sub  # seeded
    assert _scored_dev(dev, GraftRecipe(max_dev=100), seed=0) == dev
    with pytest.raises(ValueError, match="max_dev"):
        GraftRecipe(max_dev=0)


def _record_scored(monkeypatch):
    """Patch the graft's evaluate to record the labels of every example set it scores."""
    import repro.core.grafting as grafting

    seen: list[list[int]] = []
    real = grafting.evaluate

    def recording(model, examples, task, *args, **kwargs):
        seen.append([e.label for e in examples])
        return real(model, examples, task, *args, **kwargs)

    monkeypatch.setattr(grafting, "evaluate", recording)
    return seen


def test_graft_selection_set_holds_every_class(tiny_model, sent_examples, monkeypatch):
    """S2: kshot_split orders train by label, so train[:max_examples] at 4096-shot held a single class; the set
    the best S is chosen on is a label-balanced seeded subset (the official code scores ≤ 1024 random examples)."""
    from repro.core.grafting import learn_joint_graft

    delta, _ = _finetuned_delta(tiny_model, sent_examples)
    train_set = sorted(sent_examples * 4, key=lambda e: e.label)  # 16 per class, ordered by label as kshot_split
    recipe = GraftRecipe(lr=1e7, steps=2, batch_size=4, max_examples=8)
    seen = _record_scored(monkeypatch)
    learn_graft(tiny_model, "sent", delta, train_set, sent_examples, 1e-2, recipe, progress=False)
    scored_train = [labels for labels in seen if len(labels) == 8]
    assert scored_train and all(sorted(labels) == [0] * 4 + [1] * 4 for labels in scored_train)
    seen.clear()
    learn_joint_graft(tiny_model, ["sent"], delta, {"sent": train_set}, {"sent": sent_examples},
                      movement_mask(delta, 1e-2), recipe, progress=False)
    scored_train = [labels for labels in seen if len(labels) == 8]
    assert scored_train and all(sorted(labels) == [0] * 4 + [1] * 4 for labels in scored_train)


def test_graft_gradient_groups_equal_batches_by_length(tiny_model, sent_examples):
    """Equal batches are formed from the examples sorted by length (less padding, the same sum of batch means);
    a ragged split keeps the given order, since its short batch weighs its examples more."""
    from repro.core.grafting import _summed_gradient

    tiny_model.eval()
    seen = []
    tokenize = tiny_model.tokenize
    tiny_model.tokenize = lambda task, chunk: seen.append([e.text_a for e in chunk]) or tokenize(task, chunk)
    try:
        names = tiny_model.graftable_names()[:2]
        own = dict(tiny_model.named_parameters())
        for batch_size, grouped in ((4, True), (3, False)):
            seen.clear()
            theta = {n: own[n].detach().clone().requires_grad_(True) for n in names}
            _summed_gradient(tiny_model, "sent", sent_examples, theta, batch_size)
            flat = [t for chunk in seen for t in chunk]
            expected = sorted((e.text_a for e in sent_examples), key=len) if grouped else [e.text_a for e in sent_examples]
            assert flat == expected, batch_size
    finally:
        del tiny_model.tokenize


def test_an_unchanged_rounded_mask_is_scored_once(tiny_model, sent_examples, monkeypatch):
    """A step that leaves the rounded mask as it was keeps its train + dev score without evaluating again."""
    import repro.core.grafting as grafting

    delta, _ = _finetuned_delta(tiny_model, sent_examples)
    calls = []
    real = grafting.evaluate
    monkeypatch.setattr(grafting, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    still = learn_graft(tiny_model, "sent", delta, sent_examples, sent_examples, base=0.05,
                        recipe=GraftRecipe(lr=1e-30, steps=3, batch_size=4), progress=False)
    assert len(still.history) == 3 and len({h["score"] for h in still.history}) == 1
    assert len(calls) == 2  # train and dev, once: so small a step never changes the mask
    calls.clear()
    moving = learn_graft(tiny_model, "sent", delta, sent_examples, sent_examples, base=0.05,
                         recipe=GraftRecipe(lr=1e9, steps=3, batch_size=4), progress=False)
    counts = [h["count"] for h in moving.history]
    assert 2 * (1 + sum(a != b for a, b in zip(counts, counts[1:]))) <= len(calls) <= 6 and counts[0] != counts[-1]
