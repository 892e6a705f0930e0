"""P2 Eq. 7 diagonal Fisher, TaLoS calibration, FISH / LoTA masks and the sensitivity experiments."""

from __future__ import annotations

import math

import pytest
import torch

from repro.data import Example, TaskSpec
from repro.core.fisher import (diagonal_fisher, fish_masks, logit_target, logprob_target, lota_mask,
                               masked_soft_overrides, per_example_grads, per_example_grads_loop, talos_calibrate,
                               talos_schedule, talos_select)
from repro.core.masks import Mask
from repro.p2.sensitivity.runs import lowest_sensitivity_mask, perturb, prune, selection_stats

SPEC = TaskSpec("t", ("neg", "pos"), label_prompts=("It was terrible.", "It was great."))
TEXTS = [("a great and moving film", 1), ("dull", 0), ("i hated every single minute of this long film", 0),
         ("truly superb acting", 1), ("awful plot", 0), ("wonderful", 1)]


@pytest.fixture(scope="module")
def model():
    from repro.models import build_tiny_bert

    m = build_tiny_bert(seed=0)
    m.add_task(SPEC)
    return m


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return [Example(t, y) for t, y in TEXTS]


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[n] - b[n]).abs().max()) for n in a)


@pytest.mark.parametrize("target_fn", [logprob_target, logit_target])
def test_vmap_grads_equal_loop(model, examples, target_fn):
    names = model.maskable_names()
    batch = model.tokenize("t", examples)  # padded: lengths differ
    fast = per_example_grads(model, batch, "t", names, target_fn)
    slow = per_example_grads_loop(model, batch, "t", names, target_fn)
    assert all(fast[n].shape == (len(examples), *model.get_parameter(n).shape) for n in names)
    assert _max_diff(fast, slow) < 1e-5
    assert max(float(v.abs().max()) for v in fast.values()) > 1e-4  # not trivially zero
    # chunked vmap and overrides take the same path
    ov = {n: p.detach() * 0.5 for n, p in model.named_parameters() if n in names[:4]}
    assert _max_diff(per_example_grads(model, batch, "t", names, target_fn, ov, chunk_size=2),
                     per_example_grads_loop(model, batch, "t", names, target_fn, ov)) < 1e-5


def test_padded_row_matches_unpadded_example(model, examples):
    names = model.maskable_names()
    padded = per_example_grads(model, model.tokenize("t", examples), "t", names, logprob_target)
    alone = per_example_grads(model, model.tokenize("t", examples[1:2]), "t", names, logprob_target)  # shortest
    assert _max_diff({n: padded[n][1:2] for n in names}, alone) < 1e-5


def test_fisher_sampled_is_deterministic_and_methods_agree(model, examples):
    names = model.maskable_names()[:6]
    a = diagonal_fisher(model, examples, "t", names, seed=3, batch_size=4, progress=False)
    b = diagonal_fisher(model, examples, "t", names, seed=3, batch_size=4, progress=False)
    c = diagonal_fisher(model, examples, "t", names, seed=3, batch_size=4, method="loop", progress=False)
    assert all(torch.equal(a[n], b[n]) for n in names)
    scale = max(float(c[n].abs().max()) for n in names)  # per-tensor relative error is meaningless for key
    assert _max_diff(a, c) < 1e-4 * scale                 # biases: their gradient is 0 up to rounding
    assert all(bool((a[n] >= 0).all()) for n in names)
    with pytest.raises(ValueError, match="logprob"):
        diagonal_fisher(model, examples, "t", names, target="loss", progress=False)
    with pytest.raises(ValueError, match="sampled"):
        diagonal_fisher(model, examples, "t", names, label_source="gold", progress=False)


def test_empirical_fisher_uses_true_labels(model, examples):
    names = model.maskable_names()[:4]
    batch = model.tokenize("t", examples)
    g = per_example_grads_loop(model, batch, "t", names, logprob_target)
    ref = {n: g[n].pow(2).sum(0) for n in names}
    got = diagonal_fisher(model, examples, "t", names, label_source="true", batch_size=len(examples), progress=False)
    assert _max_diff(got, ref) < 1e-6


def test_talos_select_keeps_lowest_and_masked_stay_masked():
    scores = {"a": torch.tensor([5.0, 1.0, 3.0, 0.5]), "b": torch.tensor([[2.0, 4.0], [0.1, 6.0]])}
    trainable = Mask.full({"a": (4,), "b": (2, 2)})
    trainable.tensors["a"][3] = False  # lowest score, but already masked: must stay masked (score +inf)
    new, t = talos_select(scores, trainable, density=3 / 8)  # k = 3 of 8
    assert new.count() == 3 and t == 2.0
    assert new.tensors["a"].tolist() == [False, True, False, False]
    assert new.tensors["b"].tolist() == [[True, False], [True, False]]
    # k is capped at n_trainable - 1
    capped, _ = talos_select(scores, trainable, density=1.0)
    assert capped.count() == trainable.count() - 1 and not bool(capped.tensors["a"][3])


def test_talos_calibration_density_monotone_and_schedule(model, examples):
    mask, report = talos_calibrate(model, examples, "t", sparsity=0.9, rounds=4, batch_size=3, progress=False)
    n_total = mask.eligible_count
    assert mask.shapes == Mask.shapes_of(model.param_dict(model.maskable_names()))
    assert mask.count() == math.floor((1 - 0.9) * n_total)  # no ties in these scores
    assert abs(mask.density() - 0.1) < 1.0 / n_total + 1e-12
    assert report.scheduled_densities == pytest.approx([0.1 ** (r / 4) for r in range(1, 5)])
    assert report.scheduled_densities == pytest.approx(talos_schedule(0.9, 4))
    assert len(report.round_masks) == 4 and report.round_masks[-1] == mask
    for prev, nxt in zip(report.round_masks, report.round_masks[1:]):
        assert (nxt - prev).count() == 0  # trainable sets shrink: masked entries stay masked
        assert nxt.count() < prev.count()
    for d_r, got in zip(report.scheduled_densities, report.achieved_densities):
        assert abs(got - d_r) <= 1.0 / n_total + 1e-12
    assert set(report.to_dict()) >= {"sparsity", "scheduled_densities", "achieved_densities", "thresholds"}


def test_talos_one_round_is_lowest_fisher(model, examples):
    names = model.maskable_names()
    mask, _ = talos_calibrate(model, examples, "t", names, sparsity=0.8, rounds=1, seed=5, batch_size=4,
                              progress=False)
    fisher = diagonal_fisher(model, examples, "t", names, seed=5, batch_size=4, progress=False)
    low = lowest_sensitivity_mask(model, examples, "t", names, fraction=0.2, seed=5, batch_size=4, progress=False)
    assert mask == low
    kept = torch.cat([fisher[n][mask.tensors[n]] for n in names])
    dropped = torch.cat([fisher[n][~mask.tensors[n]] for n in names])
    assert float(kept.max()) <= float(dropped.min())


def test_talos_soft_mask_enters_forward(model, examples):
    names = model.maskable_names()
    params = model.param_dict(names)
    m = Mask.random(Mask.shapes_of(params), k=100, seed=0)
    soft = masked_soft_overrides(params, m, 0.1)
    for n in names:
        sel = m.tensors[n]
        assert torch.equal(soft[n][sel], params[n][sel])
        assert torch.allclose(soft[n][~sel], 0.1 * params[n][~sel])


def test_fish_keeps_highest(model, examples):
    names = model.maskable_names()
    masks = fish_masks(model, examples, "t", names, [0.05, 0.2], batch_size=4, progress=False)
    fisher = diagonal_fisher(model, examples, "t", names, label_source="true", batch_size=4, progress=False)
    mask = masks[0.05]
    assert mask.count() == int(0.05 * mask.eligible_count)
    kept = torch.cat([fisher[n][mask.tensors[n]] for n in names])
    dropped = torch.cat([fisher[n][~mask.tensors[n]] for n in names])
    assert float(kept.min()) >= float(dropped.max())
    assert (masks[0.05] & masks[0.2]) == masks[0.05]  # one Fisher: the smaller mask nests in the larger


def test_lota_mask_count_exact():
    """The official count: N − int((1 − d)·N) entries above the k-th smallest |Δ| (no ties here)."""
    g = torch.Generator().manual_seed(0)
    delta = {"x": torch.randn(7, 13, generator=g), "y": torch.randn(29, generator=g)}
    for density, kept in ((0.1, 12), (0.37, 45), (1.0, 120)):  # 0.37: int(0.63·120) = 75, so 45 (not ⌊44.4⌋)
        mask = lota_mask(delta, density)
        assert mask.count() == kept == 120 - int((1.0 - density) * 120)
    with pytest.raises(ValueError, match=r"LoTA density must be in \(0, 1\]"):
        lota_mask(delta, 0.0)  # an empty mask would train nothing and pass as a result
    mask = lota_mask(delta, 0.1)
    kept = torch.cat([delta[n].abs()[mask.tensors[n]] for n in delta])
    dropped = torch.cat([delta[n].abs()[~mask.tensors[n]] for n in delta])
    assert float(kept.min()) >= float(dropped.max())


def test_lota_mask_ties_at_the_threshold_stay_frozen():
    """Ties: every entry equal to the threshold is frozen (strict >, as the official code), never by position."""
    from repro.core.fisher import lota_count_threshold

    delta = {"a": torch.tensor([0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5]), "b": torch.tensor([0.5, 0.0, 2.0, 3.0])}
    # N = 12, d = 0.25: k = int(0.75·12) = 9, the 9th smallest |Δ| is 0.5 → only 2.0 and 3.0 are above it
    assert lota_count_threshold(12, 0.25) == 9
    mask = lota_mask(delta, 0.25)
    assert mask.count() == 2 and mask.tensors["b"].tolist() == [False, False, True, True]
    # reordering the entries (position) changes nothing: the rule has no positional tie break
    flipped = lota_mask({"b": delta["b"].flip(0), "a": delta["a"].flip(0)}, 0.25)
    assert flipped.tensors["b"].flip(0).tolist() == mask.tensors["b"].tolist()
    # a sparse τ (many exact zeros) keeps only its moved entries when the threshold lands on 0
    sparse = {"w": torch.cat([torch.zeros(90), torch.linspace(0.1, 1.0, 10)])}
    assert lota_mask(sparse, 0.2).count() == 10
    # tiny N: k < 1 keeps everything, as the official code
    assert lota_mask({"w": torch.tensor([1.0, 2.0])}, 0.6).count() == 2


def test_prune_and_perturb_touch_only_selected():
    g = torch.Generator().manual_seed(1)
    params = {"w": torch.randn(200, 100, generator=g) * 0.05, "b": torch.randn(100, generator=g)}
    mask = Mask.random(Mask.shapes_of(params), k=5000, seed=0)
    pr = prune(params, mask)
    for n in params:
        assert bool((pr[n][mask.tensors[n]] == 0).all())
        assert torch.equal(pr[n][~mask.tensors[n]], params[n][~mask.tensors[n]])
    stats = selection_stats(params, mask)
    pt = perturb(params, mask, std_scale=2.0, seed=0)
    assert all(torch.equal(pt[n], perturb(params, mask, std_scale=2.0, seed=0)[n]) for n in params)
    noise = torch.cat([(pt[n] - params[n])[mask.tensors[n]] for n in params])
    assert all(torch.equal(pt[n][~mask.tensors[n]], params[n][~mask.tensors[n]]) for n in params)
    assert stats["count"] == 5000
    assert abs(float(noise.std()) / (2 * stats["std"]) - 1) < 0.05  # N(0, (2σ)²)
    lit = perturb(params, mask, std_scale=2.0, seed=0, literal_covariance=True)
    noise_lit = torch.cat([(lit[n] - params[n])[mask.tensors[n]] for n in params])
    assert abs(float(noise_lit.std()) / math.sqrt(2 * stats["std"]) - 1) < 0.05  # N(0, 2σ I) read literally
