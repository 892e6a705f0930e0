"""P1 model grafting (Panigrahi et al., ICML 2023, §2-3): learn a sparse region γ such that
θ_pre + γ ⊙ (θ_ft − θ_pre) keeps the fine-tuned skill.

The grafted parameters are computed on the fly as overrides (``functional_call``); the model itself must hold
θ_pre on the eligible set, and only Δ = θ_ft − θ_pre, the logits S and γ_base are kept besides it.

Conventions follow the official code (see the book's notes): ``frac = γ_base + (1 − 2γ_base)·σ(S − b)`` with
b = 10 and S ~ U[0, 1); manual gradient descent with lr 1e7 on the mean over ≤ 1024 training examples per
step (batches of 8), eval-mode model, no sparsity penalty; after each step the *rounded* mask is scored on
train (a label-balanced seeded subset of ≤ 1024) + dev and the S with the best sum is kept (strict >); the final
mask is round(frac) and its sparsity is always reported (the official code never logs it).
"""

from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import torch
from repro.progress import progress_bar

from repro.data import Example, balanced_sample, chunks
from repro.core.checks import check_covers, check_finite, check_shapes
from repro.core.evaluation import evaluate, forward, length_order
from repro.core.masks import Mask
from repro.models.base import Classifier
from repro.profiles import GraftRecipe


def graft_fraction(S: Mapping[str, torch.Tensor], base: Mask, sigmoid_bias: float = 10.0,
                   idx: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """P1 Eq. 3 (as coded): frac = γ_base ⊙ (1 − σ(S − b)) + (1 − γ_base) ⊙ σ(S − b).  ``idx``: γ_base's
    entries per tensor (:func:`base_entries`), when the caller already has them."""
    idx = idx or {}
    out = {}
    for n, s in S.items():
        if s.requires_grad:  # differentiable form (the in-place one below would break autograd through S)
            g = base.tensors[n].to(s.device, s.dtype)
            out[n] = g + (1 - 2 * g) * torch.sigmoid(s - sigmoid_bias)
        else:  # the same values: σ where γ_base = 0, 1 − σ on the (sparse) γ_base entries
            i = idx[n] if n in idx else _base_entries(base, n, s.device)
            out[n] = _flip_base_(s.sub(sigmoid_bias).sigmoid_(), i, one_minus=True)
    return out


def _base_entries(base: Mask, name: str, device: torch.device) -> torch.Tensor:
    """Flat indices of the γ_base = 1 entries of tensor ``name`` (γ_base is sparse: indexing beats full passes)."""
    return base.tensors[name].to(device).reshape(-1).nonzero().reshape(-1)


def base_entries(base: Mask, S: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """γ_base's flat entry indices of every tensor of ``S`` (fixed for a whole graft: computed once per call)."""
    return {n: _base_entries(base, n, s.device) for n, s in S.items()}


def _flip_base_(t: torch.Tensor, idx: torch.Tensor, one_minus: bool) -> torch.Tensor:
    """In place on the entries ``idx``: x → 1 − x (``one_minus``) or x → −x; returns ``t``."""
    if idx.numel():
        flat = t.view(-1)
        picked = flat[idx]
        flat[idx] = 1 - picked if one_minus else picked.neg_()
    return t


def grafted_params(model: Classifier, delta: Mapping[str, torch.Tensor],
                   gamma: Mapping[str, torch.Tensor] | Mask) -> dict[str, torch.Tensor]:
    """P1 Eq. 1: θ_pre + γ ⊙ (θ_ft − θ_pre), with θ_pre read from the model (γ binary Mask or fractional)."""
    own = dict(model.named_parameters())
    check_shapes(delta, {n: p.shape for n, p in own.items()}, "Δ (grafting)")
    if isinstance(gamma, Mask):
        check_covers(delta, gamma.nonempty_names(), "Δ (grafting: the region selects entries of tensors Δ)")
        check_shapes({n: delta[n] for n in delta if n in gamma.shapes}, gamma.shapes, "Δ (grafting)",
                     against="the mask")
    g = gamma.float_tensors() if isinstance(gamma, Mask) else gamma
    check_covers(g, delta, "the graft region")
    check_shapes({n: g[n] for n in delta}, {n: d.shape for n, d in delta.items()}, "graft region", against="Δ")
    return {n: own[n].detach() + g[n].to(delta[n].device, delta[n].dtype) * delta[n] for n in delta}


def zero_outside_params(model: Classifier, delta: Mapping[str, torch.Tensor], mask: Mask) -> dict[str, torch.Tensor]:
    """Lottery-ticket localization (P1 Fig. 4b): θ_ft inside the region, 0 outside (no re-training)."""
    own = dict(model.named_parameters())
    return {n: (own[n].detach() + delta[n]) * mask.tensors[n].to(delta[n].dtype) for n in delta}


def movement_mask(delta: Mapping[str, torch.Tensor], sparsity: float) -> Mask:
    """γ_base: the top-s fraction of the eligible parameters by |θ_ft − θ_pre| (P1 §3.1).

    An empty γ_base is a valid start (s = 0, or an s too small for a tiny model's parameter count): the graft then
    learns its region from ∅, and an empty *learned* region is reported by the graft (``GraftResult.degenerate``)."""
    return Mask.top_fraction({n: d.abs() for n, d in delta.items()}, sparsity, largest=True, allow_empty=True)


def random_mask(delta: Mapping[str, torch.Tensor], count: int, seed: int = 0) -> Mask:
    """A uniformly random region of ``count`` eligible parameters (P1 Fig. 2 baseline)."""
    return Mask.random(Mask.shapes_of(delta), count, seed=seed)


@dataclass
class GraftResult:
    mask: Mask
    S: dict[str, torch.Tensor]
    history: list[dict] = field(default_factory=list)  # step, train, dev, score, count, density
    best_step: int = 0
    base_count: int = 0

    @property
    def density(self) -> float:
        return self.mask.density()

    def degenerate(self) -> dict:
        """``{"degenerate": [reasons]}`` (empty list = fine), warning once per reason: an empty region, or
        a run whose every step scored the same (the search never moved the score, so "best" means nothing)."""
        reasons = []
        if self.mask.count() == 0:
            reasons.append("empty graft region (no entry selected)")
        scores = [h["score"] for h in self.history]
        if len(scores) > 1 and len(set(scores)) == 1:
            reasons.append(f"every graft step scored the same ({scores[0]:.4g}): the region was not learned")
        for r in reasons:
            warnings.warn(f"graft: {r}", RuntimeWarning, stacklevel=2)
        return {"degenerate": reasons}


def graft_gradient(model: Classifier, task: str, examples: Sequence[Example], delta: Mapping[str, torch.Tensor],
                   frac: Mapping[str, torch.Tensor], batch_size: int = 8) -> dict[str, torch.Tensor]:
    """P1 Eq. 4 inner term: mean over batches of ∂L/∂θ ⊙ Δ, at θ = θ_pre + frac ⊙ Δ."""
    theta = {n: t.detach().requires_grad_(True) for n, t in grafted_params(model, delta, frac).items()}
    grads, n_batches = _summed_gradient(model, task, examples, theta, batch_size)
    return {n: g.mul_(delta[n]).div_(n_batches) for n, g in grads.items()}


def _summed_gradient(model: Classifier, task: str, examples: Sequence[Example], theta: dict[str, torch.Tensor],
                     batch_size: int, group_by_length: bool = True) -> tuple[dict[str, torch.Tensor], int]:
    """(Σ over batches of ∂L_batch/∂θ at the overrides ``theta``, the number of batches): one gradient buffer per
    tensor (autograd accumulates into the leaves' ``.grad``); ``theta`` is released on return.

    When every batch has ``batch_size`` examples, the sum of the batch means does not depend on which examples
    share a batch, so the examples are grouped by text length (:func:`repro.core.evaluation.length_order`): each
    padded batch then holds similar lengths, 1.2-1.4x faster on MiniLM (SST-2 tweets / MR sentences, 256 examples
    in batches of 32, 1 thread; the gradient equal to 2.4e-7 relative, measured 2026-11-28).  A ragged last batch
    weighs its examples more, so then the order is kept.  (``group_by_length=False`` keeps it always: for
    benchmarks/book_cost_cuts.py.)
    """
    if group_by_length and len(examples) % batch_size == 0:
        examples = [examples[i] for i in length_order(examples)]
    batches = chunks(examples, batch_size)
    leaves = list(theta.values())
    for chunk in batches:
        batch = model.tokenize(task, chunk)
        loss = torch.nn.functional.cross_entropy(forward(model, batch, task, theta), batch["labels"])
        loss.backward(inputs=leaves)
    grads = {n: t.grad for n, t in theta.items()}
    for t in leaves:
        t.grad = None
    theta.clear()  # the grafted θ is no longer needed: free it before the caller's next temporaries
    del leaves
    return grads, len(batches)


def init_scores(delta: Mapping[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """P1 Eq. 3 initialisation (as coded): S ~ U[0, 1) for every eligible entry."""
    gen = torch.Generator().manual_seed(seed)
    return {n: torch.rand(d.shape, generator=gen).to(d.device, d.dtype) for n, d in delta.items()}


def rounded_mask(S: Mapping[str, torch.Tensor], base: Mask, sigmoid_bias: float = 10.0,
                 idx: Mapping[str, torch.Tensor] | None = None) -> Mask:
    """P1 §3.1: the binary graft round(frac) (torch.round: a frac of exactly 0.5 rounds to 0)."""
    frac = graft_fraction(S, base, sigmoid_bias, idx)
    return Mask({n: f > 0.5 for n, f in frac.items()}, base.shapes)


def graft_step(S: Mapping[str, torch.Tensor], G: Mapping[str, torch.Tensor], base: Mask, lr: float,
               sigmoid_bias: float = 10.0) -> dict[str, torch.Tensor]:
    """P1 Eq. 4: S ← S − lr · ∂L/∂S with ∂frac/∂S = (1 − 2γ_base) σ'(S − b) and G = mean(∂L/∂θ ⊙ Δ)."""
    return {n: _step_into(G[n].mul(lr), s, _base_entries(base, n, s.device), sigmoid_bias) for n, s in S.items()}


def _step_into(u: torch.Tensor, s: torch.Tensor, idx: torch.Tensor, sigmoid_bias: float) -> torch.Tensor:
    """S − (1 − 2γ_base) ⊙ u ⊙ σ(S−b) ⊙ (1 − σ(S−b)) written into ``u`` (u = lr·G, consumed); σ computed once."""
    _flip_base_(u, idx, one_minus=False)  # (1 − 2γ_base) ⊙ u: a sign flip on the sparse γ_base entries
    sig = s.sub(sigmoid_bias).sigmoid_()
    u.mul_(sig)
    u.mul_(sig.sub_(1))  # u ⊙ (σ − 1) = −(u ⊙ (1 − σ)) exactly
    del sig
    return torch.add(s, u, out=u)  # S + (−step)


def graft_update(model: Classifier, task: str, examples: Sequence[Example], delta: Mapping[str, torch.Tensor],
                 S: Mapping[str, torch.Tensor], base: Mask, lr: float, sigmoid_bias: float = 10.0,
                 batch_size: int = 8, idx: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """P1 Eq. 2-4, one whole mask step fused (= graft_step(S, graft_gradient(..., graft_fraction(S)), ...)).

    Per eligible tensor it holds at most the grafted θ (built in the buffer of σ(S − b)), one gradient buffer
    (summed over the batches by autograd) and σ(S − b) recomputed after the backward, 9 elementwise passes
    in all; equal to the unfused steps up to float rounding.  Returns the new S (``S`` itself is not modified).
    ``idx``: γ_base's entries (:func:`base_entries`), computed here when not given.
    """
    own = dict(model.named_parameters())
    idx = base_entries(base, S) if idx is None else idx
    theta, frac = {}, None
    for n, s in S.items():  # θ = θ_pre + frac ⊙ Δ, frac = σ(S − b) flipped to 1 − σ on γ_base
        frac = _flip_base_(s.sub(sigmoid_bias).sigmoid_(), idx[n], one_minus=True)
        theta[n] = frac.mul_(delta[n]).add_(own[n].detach()).requires_grad_(True)
    del frac  # (the last θ: keep no extra reference to it)
    grads, n_batches = _summed_gradient(model, task, examples, theta, batch_size)
    out = {}
    for n in list(grads):  # S − lr/B · (1 − 2γ_base) ⊙ (Σ_batches ∂L/∂θ ⊙ Δ) ⊙ σ(S−b)(1 − σ(S−b))
        u = _flip_base_(grads.pop(n).mul_(delta[n]), idx[n], one_minus=False)
        sig = S[n].sub(sigmoid_bias).sigmoid_()
        step = torch.ops.aten.sigmoid_backward(u, sig)  # u ⊙ (1 − σ) ⊙ σ in one pass
        del u, sig
        out[n] = torch.sub(S[n], step, alpha=lr / n_batches, out=step)
    return out


def scored_train(train: Sequence[Example], recipe: GraftRecipe, seed: int) -> list[Example]:
    """The training examples scored after each step to pick the best S: a label-balanced seeded subset of
    ``recipe.max_examples`` (all of them when there are no more).  The official code scores the first ≤ 128 batches
    of 8 of its randomly sampled train loader; a plain ``train[:max_examples]`` would hold one class at 4096-shot,
    where the k-shot train split is ordered by label."""
    return balanced_sample(train, recipe.max_examples, seed=seed)


def _scored_dev(dev: Sequence[Example], recipe: GraftRecipe, seed: int) -> list[Example]:
    """The dev examples scored after each step to pick the best S: all, or a label-balanced seeded subset of
    ``recipe.max_dev``."""
    return list(dev) if recipe.max_dev is None else balanced_sample(dev, recipe.max_dev, seed=seed)


def learn_graft(
    model: Classifier,
    task: str,
    delta: Mapping[str, torch.Tensor],
    train: Sequence[Example],
    dev: Sequence[Example],
    base: Mask | float = 1e-5,
    recipe: GraftRecipe = GraftRecipe(),
    *,
    seed: int = 0,
    progress: bool = True,
    eval_batch_size: int = 64,
    callback: Callable[[int], None] | None = None,
) -> GraftResult:
    """P1 Eq. 2-4: optimize S by manual gradient descent; keep the S whose rounded mask scores best on train+dev.

    ``base`` is γ_base as a Mask, or a sparsity s for the top-s movement region (0 gives γ_base = ∅, the
    multi-task setting of P1 §5).  ``recipe`` holds lr, steps, batch size, examples per step and the sigmoid
    bias b.  The model must hold θ_pre on ``delta``'s tensors.  ``callback(step)``, if given, runs after each
    whole step (update and scoring; 1-based ``step``): the bench times steps from inside one call with it.
    """
    lr, steps, batch_size = recipe.lr, recipe.steps, recipe.batch_size
    max_examples, sigmoid_bias = recipe.max_examples, recipe.sigmoid_bias
    check_finite(delta, "grafting: Δ = θ_ft − θ_pre")
    check_shapes(delta, {n: p.shape for n, p in model.named_parameters()}, "Δ (learn_graft)")
    if isinstance(base, (int, float)):
        base = movement_mask(delta, float(base))
    check_covers(delta, base.shapes, "Δ (grafting needs a full Δ over the region's tensors)")
    S = init_scores(delta, seed)
    was_training = model.training
    model.eval()
    rng = random.Random(seed)
    scored_dev, scored_tr = _scored_dev(dev, recipe, seed), scored_train(train, recipe, seed)

    last: list = []  # (mask, scores) of the previous step: an unchanged rounded mask scores the same

    def score(mask: Mask) -> tuple[float, float]:
        if last and last[0] == mask:
            return last[1]
        theta = grafted_params(model, delta, mask)
        tr = evaluate(model, scored_tr, task, theta, batch_size=eval_batch_size)["value"]
        dv = evaluate(model, scored_dev, task, theta, batch_size=eval_batch_size)["value"] if dev else 0.0
        last[:] = [mask, (tr, dv)]
        return tr, dv

    idx = base_entries(base, S)  # γ_base is fixed: its entries once per call, not twice per step
    result = GraftResult(mask=rounded_mask(S, base, sigmoid_bias, idx), S={n: s.clone() for n, s in S.items()},
                         base_count=base.count())
    best = 0.0
    for step in progress_bar(range(steps), enabled=progress, desc=f"graft {task}", leave=False):
        sample = list(train)
        rng.shuffle(sample)  # random sampler, as the official loader
        sample = sample[:max_examples]
        S = graft_update(model, task, sample, delta, S, base, lr, sigmoid_bias, batch_size, idx)
        check_finite(S, f"grafting {task}: scores S", step + 1)
        mask = rounded_mask(S, base, sigmoid_bias, idx)
        tr, dv = score(mask)
        result.history.append({"step": step + 1, "train": tr, "dev": dv, "score": tr + dv,
                               "count": mask.count(), "density": mask.density()})
        if tr + dv > best:
            best = tr + dv
            result.best_step, result.mask = step + 1, mask
            result.S = {n: s.clone() for n, s in S.items()}
        if callback is not None:
            callback(step + 1)
    model.train(was_training)
    return result


def learn_joint_graft(
    model: Classifier,
    tasks: Sequence[str],
    delta: Mapping[str, torch.Tensor],
    train: Mapping[str, Sequence[Example]],
    dev: Mapping[str, Sequence[Example]],
    base: Mask,
    recipe: GraftRecipe = GraftRecipe(steps=10),
    *,
    seed: int = 0,
    progress: bool = True,
    eval_batch_size: int = 64,
) -> GraftResult:
    """P1 Eq. 3-4 on the joint loss Σ_{i∈G} L_i(γ), started from γ_base = ``base`` (the union region γ_G).

    Each step adds the per-task graft gradients (mean over ≤ ``max_examples`` shuffled training examples of each
    task) and takes the same manual step as :func:`learn_graft`; the rounded mask is scored by the
    mean over tasks of (train + dev) accuracy and the best one is kept (strict >, step 0 = γ_G itself included,
    so the result is never worse than the union on that score).  The model must hold θ_pre on ``delta``.
    P1 §5.1 (Fig. 8d) uses it for the 10 steps that tune a union of task regions.
    """
    lr, steps, batch_size = recipe.lr, recipe.steps, recipe.batch_size
    max_examples, sigmoid_bias = recipe.max_examples, recipe.sigmoid_bias
    missing = [t for t in tasks if t not in train]
    if missing:
        raise KeyError(f"no training data for {missing}; have {sorted(train)}")
    S = init_scores(delta, seed)
    was_training = model.training
    model.eval()
    rng = random.Random(seed)
    scored_dev = {t: _scored_dev(dev.get(t) or [], recipe, seed) for t in tasks}
    scored_tr = {t: scored_train(list(train[t]), recipe, seed) for t in tasks}

    def score(mask: Mask) -> float:
        theta = grafted_params(model, delta, mask)
        total = 0.0
        for t in tasks:
            total += evaluate(model, scored_tr[t], t, theta, batch_size=eval_batch_size)["value"]
            if scored_dev[t]:
                total += evaluate(model, scored_dev[t], t, theta, batch_size=eval_batch_size)["value"]
        return total / len(tasks)

    start = rounded_mask(S, base, sigmoid_bias)
    best = score(start)
    result = GraftResult(mask=start, S={n: s.clone() for n, s in S.items()}, base_count=base.count())
    result.history.append({"step": 0, "score": best, "count": start.count(), "density": start.density()})
    quiet = not progress or os.environ.get("TQDM_DISABLE", "") not in ("", "0")
    for step in progress_bar(range(steps), enabled=not quiet, desc="joint graft", leave=False):
        frac = graft_fraction(S, base, sigmoid_bias)
        G = {n: torch.zeros_like(d) for n, d in delta.items()}
        for t in tasks:
            sample = list(train[t])
            rng.shuffle(sample)
            Gt = graft_gradient(model, t, sample[:max_examples], delta, frac, batch_size)
            for n in G:
                G[n] += Gt[n]
        S = graft_step(S, G, base, lr, sigmoid_bias)
        mask = rounded_mask(S, base, sigmoid_bias)
        sc = score(mask)
        result.history.append({"step": step + 1, "score": sc, "count": mask.count(), "density": mask.density()})
        if sc > best:
            best = sc
            result.best_step, result.mask = step + 1, mask
            result.S = {n: s.clone() for n, s in S.items()}
    model.train(was_training)
    return result
