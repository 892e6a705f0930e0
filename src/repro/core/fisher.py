"""Diagonal Fisher information and the masks built from it: TaLoS calibration (P2), FISH (P1 Table 8), LoTA.
(The P2 §4.1 / App. A.7 prune / perturb experiments on the least-sensitive 10% are :mod:`repro.p2.sensitivity.runs`.)

Per-example gradients
    :func:`per_example_grads` maps ``torch.func.grad`` over the batch with ``torch.func.vmap`` on top of
    ``functional_call`` (each mapped call sees a batch of one example).  Two details make this exact for the
    Hugging Face encoders:

    * ``transformers`` (≥ 4.5x) decides whether it may *skip* building the attention mask by reading the
      padding mask's values (``padding_mask.all()``), which is data-dependent control flow that vmap refuses.
      While mapping we make its ``is_tracing`` check answer "yes" for functorch-wrapped tensors, so the mask is
      always materialized.  That skip is only a speed shortcut: a materialized all-visible mask adds zeros to the
      attention scores, so the result is unchanged (:func:`_vmap_safe_hf_masks`).
    * the target picks the label's entry with ``gather`` (indexing by a batched 0-d tensor is an ``.item()``).

    Each example keeps the padding of the batch it was tokenized in; padded positions get an additive
    ``finfo.min`` attention bias (softmax weight exactly 0) and are excluded from pooling, so a padded row and
    the unpadded example agree to float rounding.  ``per_example_grads_loop`` (one autograd call per example)
    is the reference; ``method="auto"`` falls back to it with a warning for models vmap cannot map.

Fisher targets (P2 Eq. 7)
    ``target="logprob"``: the score is (∂ log p(ŷ|x)/∂θ)², log p = log-softmax over the C classes: the paper's
    Eq. 7 and our cpu/smoke default.  ``target="logit"``: (∂ z_ŷ/∂θ)², the model's raw output for the sampled
    class.  The official code uses the latter in both domains: for CLIP z_ŷ is the raw logit (vision code); for
    :class:`repro.models.t5.T5RankClassifier` z_ŷ *is* the sequence log-likelihood log p(ŷ tokens | x) of the
    sampled answer (NLP code), which ``"sequence-loglik"`` names (same function).  ``Profile.talos.target`` picks
    one per model family.  ``label_source="sampled"`` draws one ŷ ~ softmax(f(x)) per example (P2 Eq. 7);
    ``"true"`` uses the gold label, i.e. the *empirical* Fisher of FISH (Sung et al. 2021).  Scores are summed
    over examples (no 1/N, as in the official code; the ranking is the same as Eq. 7's mean).

TaLoS soft value
    During calibration masked entries are shrunk to ``soft_value · W`` in the forward.  The official code uses
    0.1 (our default); the paper's appendix A.2 says "a positive value close to zero (e.g. 0.01)".
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

import torch
from torch.func import functional_call, grad, vmap
from repro.progress import progress_bar

from repro.data import Example, chunks
from repro.core.checks import check_finite, check_fraction
from repro.core.evaluation import forward
from repro.core.masks import Mask
from repro.models.base import Classifier

#: ``target_fn(logits[C], label[]) -> scalar`` for one example
TargetFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

TARGETS_CHOICES = ("logprob", "logit", "sequence-loglik")
LABEL_SOURCES = ("sampled", "true")
METHODS = ("auto", "vmap", "loop")


# --- targets ------------------------------------------------------------------------------------------
def logprob_target(logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """P2 Eq. 7 target log p(y|x) of one example (NLP / T5 variant; a true Fisher)."""
    return logits.float().log_softmax(-1).gather(-1, label.reshape(1).long()).squeeze(-1)


def logit_target(logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """P2 vision-code target: the raw logit z_y of one example ("logit Fisher")."""
    return logits.float().gather(-1, label.reshape(1).long()).squeeze(-1)


#: "sequence-loglik" = "logit" on a T5RankClassifier, whose logits are the answers' sequence log-likelihoods
TARGETS: dict[str, TargetFn] = {"logprob": logprob_target, "logit": logit_target, "sequence-loglik": logit_target}


def _target_fn(target: str | TargetFn) -> TargetFn:
    if callable(target):
        return target
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {TARGETS_CHOICES}")
    return TARGETS[target]


# --- helpers ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _eval_mode(model: Classifier) -> Iterator[None]:
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


@contextlib.contextmanager
def _vmap_safe_hf_masks() -> Iterator[None]:
    """Make transformers' attention-mask builder treat functorch-wrapped tensors as traced (no value checks)."""
    try:
        import transformers.masking_utils as mu  # optional: only where this transformers version has it
    except ImportError:  # older transformers / non-HF model: nothing to patch
        yield
        return
    original = getattr(mu, "is_tracing", None)
    if original is None:
        yield
        return

    def is_tracing(tensor=None) -> bool:  # noqa: ANN001 - mirrors the transformers signature
        if isinstance(tensor, torch.Tensor) and torch._C._functorch.is_functorch_wrapped_tensor(tensor):
            return True
        return original(tensor)

    mu.is_tracing = is_tracing
    try:
        yield
    finally:
        mu.is_tracing = original


def _fixed_params(model: Classifier, overrides: Mapping[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
    """Every parameter of ``model`` detached, with ``overrides`` applied."""
    out = {n: p.detach() for n, p in model.named_parameters()}
    for n, v in (overrides or {}).items():
        out[n] = v.detach()
    return out


def _split_batch(batch: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict, torch.Tensor]:
    """(per-example tensors, shared entries, labels): a tensor is per-example when its dim 0 is the batch size."""
    if "labels" not in batch:
        raise KeyError("batch has no 'labels' (the per-example target needs one label per row)")
    labels = batch["labels"]
    bsz = labels.shape[0]
    rows, shared = {}, {}
    for k, v in batch.items():
        if k == "labels":
            continue
        if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == bsz:
            rows[k] = v
        else:
            shared[k] = v
    return rows, shared, labels


def _check_names(model: Classifier, names: Sequence[str]) -> list[str]:
    names = list(names)
    known = {n for n, _ in model.named_parameters()}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise KeyError(f"unknown parameter names {unknown[:5]}; use model.maskable_names() or graftable_names()")
    if not names:
        raise ValueError("names is empty")
    return names


# --- per-example gradients ----------------------------------------------------------------------------
def per_example_grads(model: Classifier, batch: Mapping[str, torch.Tensor], task: str, names: Sequence[str],
                      target_fn: TargetFn, overrides: Mapping[str, torch.Tensor] | None = None,
                      chunk_size: int | None = None) -> dict[str, torch.Tensor]:
    """P2 Eq. 7 ingredient ∇_θ target(f(x_i), y_i) per example, via vmap(grad(functional_call)): ``{name: [B, *shape]}``.

    Gradients are taken at the parameter values the forward uses (``overrides`` when given), labels are
    ``batch["labels"]``, and the model runs in eval mode.  ``chunk_size`` bounds how many examples are mapped at once.
    """
    names = _check_names(model, names)
    fixed = _fixed_params(model, overrides)
    params = {n: fixed[n] for n in names}
    others = {n: v for n, v in fixed.items() if n not in params}
    rows, shared, labels = _split_batch(batch)

    def one(p: dict[str, torch.Tensor], row: dict[str, torch.Tensor], label: torch.Tensor) -> torch.Tensor:
        single = {**shared, **{k: v.unsqueeze(0) for k, v in row.items()}}
        logits = functional_call(model, {**others, **p}, (single,), {"task": task}, strict=False)
        return target_fn(logits[0], label)

    with _eval_mode(model), _vmap_safe_hf_masks():
        return vmap(grad(one), in_dims=(None, 0, 0), chunk_size=chunk_size)(params, rows, labels)


def per_example_grads_loop(model: Classifier, batch: Mapping[str, torch.Tensor], task: str, names: Sequence[str],
                           target_fn: TargetFn,
                           overrides: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Reference for :func:`per_example_grads`: one forward + autograd call per example (rows of the same batch)."""
    names = _check_names(model, names)
    fixed = _fixed_params(model, overrides)
    others = {n: v for n, v in fixed.items() if n not in set(names)}
    rows, shared, labels = _split_batch(batch)
    out: dict[str, list[torch.Tensor]] = {n: [] for n in names}
    with _eval_mode(model):
        for i in range(labels.shape[0]):
            leaves = {n: fixed[n].clone().requires_grad_(True) for n in names}
            single = {**shared, **{k: v[i : i + 1] for k, v in rows.items()}}
            logits = functional_call(model, {**others, **leaves}, (single,), {"task": task}, strict=False)
            value = target_fn(logits[0], labels[i])
            grads = torch.autograd.grad(value, list(leaves.values()), allow_unused=True)
            for n, g in zip(names, grads):
                out[n].append(torch.zeros_like(leaves[n]) if g is None else g.detach())
    return {n: torch.stack(v) for n, v in out.items()}


_warned_fallback = False


def _grads(method: str, model: Classifier, batch: Mapping[str, torch.Tensor], task: str, names: Sequence[str],
           target_fn: TargetFn, overrides: Mapping[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
    global _warned_fallback
    if method == "loop":
        return per_example_grads_loop(model, batch, task, names, target_fn, overrides)
    if method == "vmap":
        return per_example_grads(model, batch, task, names, target_fn, overrides)
    try:
        return per_example_grads(model, batch, task, names, target_fn, overrides)
    except RuntimeError as err:  # data-dependent control flow etc. in a model family vmap cannot map
        if not _warned_fallback:
            warnings.warn(f"vmap per-example gradients failed ({str(err).splitlines()[0][:160]}); "
                          "falling back to the per-example loop", RuntimeWarning, stacklevel=3)
            _warned_fallback = True
        return per_example_grads_loop(model, batch, task, names, target_fn, overrides)


@torch.no_grad()
def sample_labels(model: Classifier, batch: Mapping[str, torch.Tensor], task: str, generator: torch.Generator,
                  overrides: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
    """P2 Eq. 7 / Alg. 1 l.11: one ŷ ~ softmax(f(x)) per example (eval mode; drawn on CPU for determinism)."""
    with _eval_mode(model):
        logits = forward(model, dict(batch), task, overrides)
    probs = logits.float().softmax(-1).cpu()
    return torch.multinomial(probs, 1, generator=generator).squeeze(1).to(batch["labels"].device)


# --- diagonal Fisher ----------------------------------------------------------------------------------
def diagonal_fisher(model: Classifier, examples: Sequence[Example], task: str, names: Sequence[str] | None = None,
                    target: str = "logprob", label_source: str = "sampled", batch_size: int = 16, seed: int = 0,
                    overrides: Mapping[str, torch.Tensor] | None = None, method: str = "auto",
                    progress: bool = True) -> dict[str, torch.Tensor]:
    """P2 Eq. 7 diagonal FIM Σ_i (∂ target(x_i, ŷ_i)/∂θ)², ŷ_i sampled (or the true label: empirical Fisher, FISH).

    ``names`` defaults to ``model.maskable_names()``.  Summed over examples (Eq. 7 without its 1/N, as coded).
    Forward/backward run in eval mode; ``model.tokenize`` runs in the caller's mode (a CLIP model left in train
    mode augments, as the official vision calibration does).  Memory ≈ batch_size × |names| × 4 bytes.
    """
    target_fn = _target_fn(target)
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"unknown label_source {label_source!r}; choose one of {LABEL_SOURCES}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if not examples:
        raise ValueError(f"no examples to compute the Fisher of task {task!r}")
    names = _check_names(model, model.maskable_names() if names is None else names)
    fixed = _fixed_params(model, overrides)
    scores = {n: torch.zeros_like(fixed[n], dtype=torch.float32) for n in names}
    gen = torch.Generator().manual_seed(int(seed))
    bar = progress_bar(chunks(examples, batch_size), enabled=progress, desc=f"fisher {task}", leave=False)
    for step, chunk in enumerate(bar, start=1):
        batch = model.tokenize(task, chunk)
        if label_source == "sampled":
            batch["labels"] = sample_labels(model, batch, task, gen, overrides)
        grads = _grads(method, model, batch, task, names, target_fn, overrides)
        for n in names:
            scores[n] += grads[n].float().pow(2).sum(0)
        del grads
        check_finite(scores, f"Fisher of {task} (batch of {batch_size})", step,
                     hint="check the model's parameters and overrides for NaN/inf, and the inputs")
    return scores


# --- TaLoS --------------------------------------------------------------------------------------------
def masked_soft_overrides(params: Mapping[str, torch.Tensor], mask: Mask,
                          soft_value: float = 0.1) -> dict[str, torch.Tensor]:
    """P2 Alg. 1 l.11 forward weights c ⊙ θ0: entries outside ``mask`` (True = trainable) scaled by ``soft_value``."""
    out = {}
    for n in mask.shapes:
        p = params[n]
        m = mask.tensors[n].to(p.device)
        out[n] = p.detach() * torch.where(m, torch.ones((), dtype=p.dtype, device=p.device),
                                          torch.full((), soft_value, dtype=p.dtype, device=p.device))
    return out


def talos_schedule(sparsity: float, rounds: int) -> list[float]:
    """P2 App. A.2 exponential schedule: per-round density d_r = d^{r/R}, d = 1 − sparsity."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    d = 1.0 - sparsity
    return [d ** (r / rounds) for r in range(1, rounds + 1)]


def talos_select(scores: Mapping[str, torch.Tensor], trainable: Mask, density: float,
                 exclude_zero: bool = False) -> tuple[Mask, float]:
    """P2 Alg. 1 l.15-24 as coded: keep the still-trainable entries with score ≤ t, t = k-th smallest of them.

    Already-masked entries score +∞ (they stay masked); k = min(⌊density · N_total⌋, n_trainable − 1), N_total =
    all entries of the eligible set; ties at t are kept.  ``exclude_zero``: entries scoring exactly 0 (dead
    units, whose gradient is 0 as well) score +∞ too, so the mask is the least sensitive of the live entries, at the
    same k (a departure, TalosRecipe.exclude_zero).  Returns the new trainable mask and t.
    """
    names = list(trainable.shapes)
    flat_s = torch.cat([scores[n].detach().reshape(-1).double().cpu() for n in names])
    flat_m = torch.cat([trainable.tensors[n].reshape(-1).cpu() for n in names])
    n_total = flat_s.numel()
    n_trainable = int(flat_m.sum())
    s = flat_s.clone()
    if exclude_zero:
        dead = s == 0
        s[dead] = math.inf
        flat_m = flat_m & ~dead
        n_trainable = int(flat_m.sum())
    s[~flat_m] = math.inf
    k = min(int(math.floor(density * n_total)), n_trainable - 1)
    if k < 1:
        keep, t = torch.zeros_like(flat_m), -math.inf
    else:
        t = float(torch.kthvalue(s[flat_m], k).values)
        keep = s <= t
    pieces = torch.split(keep, [trainable.tensors[n].numel() for n in names])
    return Mask({n: p.reshape(trainable.shapes[n]).clone() for n, p in zip(names, pieces)}, dict(trainable.shapes)), t


@dataclass
class CalibrationReport:
    """What a TaLoS calibration did, round by round (masks: True = trainable)."""

    sparsity: float
    rounds: int
    soft_value: float
    target: str
    n_examples: int
    scheduled_densities: list[float] = field(default_factory=list)
    achieved_densities: list[float] = field(default_factory=list)
    thresholds: list[float] = field(default_factory=list)
    zero_scores: list[int] = field(default_factory=list)  # entries scoring exactly 0, per round
    round_masks: list[Mask] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-friendly summary (without the masks)."""
        d = asdict(self)
        d.pop("round_masks")
        return d


def talos_calibrate(model: Classifier, examples: Sequence[Example], task: str, names: Sequence[str] | None = None,
                    sparsity: float = 0.9, rounds: int = 4, soft_value: float = 0.1, target: str = "logprob",
                    batch_size: int = 16, seed: int = 0, overrides: Mapping[str, torch.Tensor] | None = None,
                    method: str = "auto", progress: bool = True, exclude_zero: bool = False
                    ) -> tuple[Mask, CalibrationReport]:
    """P2 Alg. 1 (l.3-26) / official TaLoS calibration: iterative lowest-Fisher mask (True = trainable).

    Round r: scores = Eq. 7 Fisher of the network with the current soft mask active (W ⊙ m via overrides),
    taken w.r.t. W (∂/∂W = m ⊙ ∂/∂(W⊙m)); labels sampled with seed ``seed + r − 1``; then :func:`talos_select`
    at density d_r = d^{r/R}.  Masked entries are shrunk to ``soft_value``·W in later rounds (code 0.1, paper
    appendix "e.g. 0.01").  ``target="logit"`` is the vision-code variant.  ``exclude_zero``: see
    :func:`talos_select` (the report counts the exact zeros of each round).
    """
    names = _check_names(model, model.maskable_names() if names is None else names)
    schedule = talos_schedule(sparsity, rounds)
    fixed = _fixed_params(model, overrides)
    weights = {n: fixed[n] for n in names}
    trainable = Mask.full(Mask.shapes_of(weights))
    report = CalibrationReport(sparsity=sparsity, rounds=rounds, soft_value=soft_value, target=str(target),
                               n_examples=len(examples))
    for r, d_r in enumerate(schedule, start=1):
        soft = masked_soft_overrides(weights, trainable, soft_value)
        fisher = diagonal_fisher(model, examples, task, names, target=target, label_source="sampled",
                                 batch_size=batch_size, seed=seed + r - 1, overrides={**(overrides or {}), **soft},
                                 method=method, progress=progress)
        scores = {}
        for n in names:  # chain rule through W ⊙ m: (∂/∂W)² = m² (∂/∂(W⊙m))²
            m = torch.where(trainable.tensors[n].to(fisher[n].device), 1.0, float(soft_value))
            scores[n] = fisher[n] * m * m
        report.zero_scores.append(int(sum(int((scores[n] == 0).sum()) for n in names)))
        trainable, t = talos_select(scores, trainable, d_r, exclude_zero=exclude_zero)
        report.scheduled_densities.append(d_r)
        report.achieved_densities.append(trainable.density())
        report.thresholds.append(t)
        report.round_masks.append(trainable)
    return trainable, report


# --- FISH, LoTA ---------------------------------------------------------------------------------------
def fish_masks(model: Classifier, examples: Sequence[Example], task: str, names: Sequence[str] | None,
               densities: Sequence[float], batch_size: int = 16, seed: int = 0,
               overrides: Mapping[str, torch.Tensor] | None = None, method: str = "auto",
               progress: bool = True) -> dict[float, Mask]:
    """FISH masks (Sung et al. 2021; P1 App. B.4 / Table 8): ``{density: top-density entries}`` by one empirical
    Fisher Σ_x (∂ log p(y|x)/∂θ)² with the true labels (the *most* sensitive entries)."""
    for d in densities:
        check_fraction(d, "FISH density")
    scores = diagonal_fisher(model, examples, task, names, target="logprob", label_source="true",
                             batch_size=batch_size, seed=seed, overrides=overrides, method=method, progress=progress)
    return {d: Mask.top_fraction(scores, d, largest=True) for d in densities}


def lota_count_threshold(n: int, density: float) -> int:
    """The rank k of the official LoTA threshold: k = int((1 − density)·N) (the k-th smallest score, 1-based)."""
    return int((1.0 - density) * n)


def lota_mask(delta: Mapping[str, torch.Tensor], density: float) -> Mask:
    """LoTA (P2 baseline, spec D9): the entries whose |θ_ft − θ0| is above the official global threshold.

    As the official ``_global_mask``: over all N entries, t = the k-th smallest |Δ| with k = int((1 − d)·N), and
    the trainable entries are those with |Δ| > t, i.e. N − k of them (≈ ⌈d·N⌉) when no score ties t.  **Ties:**
    every entry equal to t stays frozen (strict >), so ties never select by position and the mask can hold fewer
    than N − k entries (e.g. many exact zeros in Δ).  k < 1 keeps every entry, as the official code.
    Non-selected entries are fully frozen (0); the vision repo's 0.1 learning-rate leak is not reproduced.
    """
    check_fraction(density, "LoTA density")
    check_finite(delta, "LoTA: the task vector")
    scores = {n: d.detach().abs().float() for n, d in delta.items()}
    shapes = Mask.shapes_of(scores)
    n_total = sum(t.numel() for t in scores.values())
    k = lota_count_threshold(n_total, density)
    if k < 1:
        return Mask.full(shapes)
    flat = torch.cat([t.reshape(-1).cpu() for t in scores.values()])
    threshold = torch.kthvalue(flat, k).values
    return Mask({n: (t.cpu() > threshold) for n, t in scores.items()})
