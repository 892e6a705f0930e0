"""Post-hoc merging of task vectors (the baselines of P2 Table 1 / 5): trim, TIES, DARE, TALL / Consensus,
Breadcrumbs, WiSE, and the one registry of configured mergers, :data:`MERGERS`.

Choices we make where the released code of P2 (spec D9) is wrong or ambiguous:

- **Trimming scope** (TIES, DARE): ``"global"`` ranks all entries of a vector together (the TIES / TaLoS code),
  ``"per_tensor"`` ranks each tensor separately (mergekit, peft).  Counts are ``floor(fraction · n)``.
  Ties in |τ| are broken by position (stable sort), so results are deterministic.
- **TIES** (Yadav et al. 2023), as its three named steps: trim to the top-``keep`` fraction by |τ|
  (:func:`trim_topk`), elect σ = sign(Σ_t τ̂_t) ("mass", :func:`elect_signs`), disjoint mean over the entries
  that agree with σ (:func:`disjoint_mean`).  Entries whose elected sum is exactly zero get the sign held by the
  majority of elected entries (original TIES ``majority`` rule, optionally preceded by a per-entry vote;
  :func:`fill_zero_signs`); the P2 code's fallback sign(Σ|·|) is always +1 and is **not** reproduced.
- **TALL masks / Consensus** (Wang et al. 2024): m_t = 1[|τ_t| ≥ λ·|τ_MTL − τ_t|] **with** the absolute value
  (the P2 code drops it) and merged = Σ_t τ_t ⊙ 1[Σ_t m_t ≥ k] (the P2 code also multiplies by the *last*
  task's mask, a leftover loop variable; not reproduced).
- **DARE** (Yu et al. 2024): drop exactly ``floor(p·n)`` uniformly random entries per scope (the P2 code's
  exact-count variant; ``exact=False`` gives the original Bernoulli drop) and rescale survivors by 1/(1−p).
- **Breadcrumbs** (Davari & Belilovsky 2024): per row (last dimension), zero the top ``beta`` fraction by |τ|
  (outliers), keep the next ``gamma`` fraction, zero the rest.

Mergers.  Each post-hoc method is a frozen dataclass whose fields are its hyperparameters (defaults: the official
NLP code, spec D9) with two operations: :meth:`Merger.single` (one task's processed vector: the normaliser of
task addition and the vector task negation subtracts) and :meth:`Merger.merged` (the vector task addition scales
by α).  A variant is ``dataclasses.replace(MERGERS["ties"], keep=None)``; :meth:`Merger.config` is what enters a
cache key (the hyperparameters by name).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import torch

from repro.core.checks import check_fraction
from repro.core.masks import Mask
from repro.core.taskvec import Tensors, TaskVector, align

TRIM_SCOPES = ("global", "per_tensor")
BREADCRUMB_SCOPES = ("per_row", "per_tensor", "global")
ZERO_SIGN_RULES = ("majority", "vote")


def _check_choice(value: str, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(repr, choices))}")


def _count(fraction: float, n: int) -> int:
    """floor(fraction · n), robust to floating-point round-off (0.29 · 100 → 29, not 28)."""
    return min(n, int(math.floor(fraction * n + 1e-9)))


# ==============================================================================================================
# rank bands: the one selection primitive behind TIES trimming and Breadcrumbs
# ==============================================================================================================
def _band_rows(scores: torch.Tensor, start: Callable[[int], int], stop: Callable[[int], int]) -> torch.Tensor:
    """Bool [R, n]: per row, entries whose descending rank (stable, ties by position) is in [start(n), stop(n))."""
    n = scores.shape[1]
    lo, hi = start(n), stop(n)
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(n, device=scores.device).expand_as(order).contiguous())
    return (ranks >= lo) & (ranks < hi)


def _band_mask(vector: TaskVector, start: Callable[[int], int], stop: Callable[[int], int], scope: str,
               names: Iterable[str] | None = None) -> Mask:
    """Mask of the |τ|-rank band [start, stop) within each scope group (``global``, ``per_tensor``, ``per_row``)."""
    sel = list(vector.tensors) if names is None else [n for n in names if n in vector.tensors]
    shapes = vector.shapes
    out: dict[str, torch.Tensor] = {}
    if scope == "global":
        flat = torch.cat([vector.tensors[n].detach().abs().reshape(-1).float().cpu() for n in sel]) if sel \
            else torch.zeros(0)
        keep = _band_rows(flat.unsqueeze(0), start, stop)[0]
        i = 0
        for n in sel:
            k = vector.tensors[n].numel()
            out[n] = keep[i : i + k].reshape(shapes[n])
            i += k
    else:
        for n in sel:
            t = vector.tensors[n].detach().abs().float().cpu()
            rows = t.reshape(1, -1) if scope == "per_tensor" or t.dim() < 2 else t.reshape(-1, t.shape[-1])
            out[n] = _band_rows(rows, start, stop).reshape(shapes[n])
    return Mask({n: out.get(n, torch.zeros(s, dtype=torch.bool)) for n, s in shapes.items()}, shapes)


def trim_mask(vector: TaskVector, keep: float, trim: str = "global") -> Mask:
    """TIES Eq. (trim): the top-``keep`` fraction of entries by |τ|, ranked globally or per tensor."""
    _check_choice(trim, TRIM_SCOPES, "trim scope")
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"keep must be in [0, 1], got {keep}")
    return _band_mask(vector, lambda n: 0, lambda n: _count(keep, n), trim)


def trim_topk(vector: TaskVector, keep: float, trim: str = "global") -> TaskVector:
    """TIES trim step: τ ⊙ top-``keep``(|τ|)."""
    return vector.masked(trim_mask(vector, keep, trim))


# ==============================================================================================================
# merging
# ==============================================================================================================
def task_arithmetic(vectors: Sequence[TaskVector]) -> TaskVector:
    """Ilharco et al. 2023 task addition: τ_MTL = Σ_t τ_t (scaled later by α)."""
    names, aligned = align(vectors)
    return TaskVector({n: torch.stack([a[n] for a in aligned]).sum(0) for n in names})


def elect_signs(stack: torch.Tensor) -> torch.Tensor:
    """TIES step 2 ("elect"): σ = sign(Σ_t τ̂_t) per entry of a [T, ...] stack ("mass"); 0 where the sum is 0."""
    return torch.sign(stack.sum(0))


def fill_zero_signs(signs: Mapping[str, torch.Tensor], stacks: Mapping[str, torch.Tensor], rule: str = "majority",
                    trim: str = "global") -> dict[str, torch.Tensor]:
    """TIES tie rule: a sign for the entries whose elected sum is exactly zero (see the module notes).

    ``"majority"``: the sign held by most elected entries (over the whole vector with ``trim="global"``, per
    tensor with ``"per_tensor"``); ``"vote"``: first the per-entry majority of the trimmed vectors' signs, then the
    ``"majority"`` rule for exact vote ties.  A final tie gives +1.
    """
    _check_choice(rule, ZERO_SIGN_RULES, "zero-sign rule")
    _check_choice(trim, TRIM_SCOPES, "trim scope")
    signs = dict(signs)
    if rule == "vote":
        signs = {n: torch.where(s == 0, torch.sign(torch.sign(stacks[n]).sum(0)), s) for n, s in signs.items()}

    def majority(groups: Iterable[str]) -> float:
        total = sum(float(signs[n].sum()) for n in groups)
        return -1.0 if total < 0 else 1.0

    names = list(signs)
    fallback = {n: majority([n]) for n in names} if trim == "per_tensor" else dict.fromkeys(names, majority(names))
    return {n: torch.where(s == 0, torch.full_like(s, fallback[n]), s) for n, s in signs.items()}


def disjoint_mean(stack: torch.Tensor, signs: torch.Tensor) -> torch.Tensor:
    """TIES step 3 ("disjoint merge"): per entry, the mean over the tasks whose nonzero entry agrees with σ."""
    agree = (torch.sign(stack) == signs.unsqueeze(0)) & (stack != 0)
    count = agree.sum(0).clamp_min(1).to(stack.dtype)
    return (stack * agree.to(stack.dtype)).sum(0) / count


def ties_merge(vectors: Sequence[TaskVector], keep: float | None = 0.1, trim: str = "global",
               zero_sign: str = "majority") -> TaskVector:
    """TIES-Merging (Yadav et al. 2023, Alg. 1): trim top-k |τ|, elect sign by mass, disjoint mean.

    ``keep=None`` (or 1.0) skips trimming (P2 Table 5 "TaLoS + TIES").  Entries whose trimmed sum is exactly
    zero get a sign by ``zero_sign`` (:func:`fill_zero_signs`).
    """
    _check_choice(trim, TRIM_SCOPES, "trim scope")
    _check_choice(zero_sign, ZERO_SIGN_RULES, "zero-sign rule")
    if keep is not None:
        keep = check_fraction(keep, "TIES keep (None = no trim)")
    names, aligned = align(vectors)
    trimmed = [TaskVector(a) if keep is None or keep >= 1.0 else trim_topk(TaskVector(a), keep, trim)
               for a in aligned]                                                            # 1. trim
    stacks = {n: torch.stack([v.tensors[n] for v in trimmed]) for n in names}              # [T, ...]
    signs = fill_zero_signs({n: elect_signs(s) for n, s in stacks.items()}, stacks, zero_sign, trim)  # 2. elect
    return TaskVector({n: disjoint_mean(stacks[n], signs[n]) for n in names})              # 3. disjoint merge


def dare(vector: TaskVector, p: float = 0.9, seed: int = 0, trim: str = "per_tensor", exact: bool = True,
         names: Iterable[str] | None = None) -> TaskVector:
    """DARE (Yu et al. 2024): drop a random fraction ``p`` of τ's entries, rescale the rest by 1/(1−p).

    ``exact=True`` drops exactly floor(p·n) entries per ``trim`` group (``per_tensor``: as the P2 code;
    ``global``: over the whole vector); ``exact=False`` drops each entry independently with probability ``p``
    (the original DARE).  Only tensors in ``names`` (default: all) are processed; the others pass unchanged.
    """
    _check_choice(trim, TRIM_SCOPES, "trim scope")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"drop rate p must be in [0, 1), got {p} (p=1 would rescale by 1/0)")
    g = torch.Generator().manual_seed(int(seed))
    sel = list(vector.tensors) if names is None else [n for n in names if n in vector.tensors]
    keep: dict[str, torch.Tensor] = {}
    if not exact:
        for n in sel:
            keep[n] = torch.rand(vector.tensors[n].shape, generator=g) >= p
    elif trim == "global":
        total = sum(vector.tensors[n].numel() for n in sel)
        flat = torch.ones(total, dtype=torch.bool)
        flat[torch.randperm(total, generator=g)[:_count(p, total)]] = False
        i = 0
        for n in sel:
            k = vector.tensors[n].numel()
            keep[n] = flat[i : i + k].reshape(vector.tensors[n].shape)
            i += k
    else:
        for n in sel:
            k = vector.tensors[n].numel()
            flat = torch.ones(k, dtype=torch.bool)
            flat[torch.randperm(k, generator=g)[:_count(p, k)]] = False
            keep[n] = flat.reshape(vector.tensors[n].shape)
    scale = 1.0 / (1.0 - p)
    return TaskVector({n: (t * keep[n].to(t.device, t.dtype) * scale) if n in keep else t.clone()
                       for n, t in vector.tensors.items()})


def tall_masks(vectors: Sequence[TaskVector], lam: float) -> list[Mask]:
    """TALL masks (Wang et al. 2024): m_t = 1[|τ_t| ≥ λ·|τ_MTL − τ_t|], τ_MTL = Σ_t τ_t (with the abs).

    Entries where every τ_t is zero satisfy 0 ≥ 0 and are selected by every mask (harmless for merging: their
    sum is zero; mind it when reporting mask densities of sparse vectors).
    """
    names, aligned = align(vectors)
    mtl = {n: torch.stack([a[n] for a in aligned]).sum(0) for n in names}
    shapes = {n: tuple(mtl[n].shape) for n in names}
    return [Mask({n: a[n].abs() >= lam * (mtl[n] - a[n]).abs() for n in names}, shapes) for a in aligned]


def consensus_mask(vectors: Sequence[TaskVector], lam: float, k: int = 2) -> Mask:
    """Consensus mask (Wang et al. 2024): 1[Σ_t m_t ≥ k], the entries at least k tasks' TALL masks select."""
    masks = tall_masks(vectors, lam)
    counts = {n: torch.stack([m.tensors[n] for m in masks]).sum(0) for n in masks[0].shapes}
    return Mask({n: c >= k for n, c in counts.items()}, dict(masks[0].shapes))


def consensus_merge(vectors: Sequence[TaskVector], lam: float, k: int = 2) -> TaskVector:
    """Consensus merging (Wang et al. 2024): Σ_t τ_t ⊙ 1[Σ_t m_t ≥ k] (no last-task-mask factor)."""
    return task_arithmetic(vectors).masked(consensus_mask(vectors, lam, k))


def breadcrumbs(vector: TaskVector, beta: float = 0.1, gamma: float = 0.2, scope: str = "per_row",
                names: Iterable[str] | None = None) -> TaskVector:
    """Model Breadcrumbs (Davari & Belilovsky 2024): drop the top-``beta`` |τ| outliers, keep the next ``gamma``.

    Within each ``scope`` group of n entries (``per_row``: the last dimension, a 1-D tensor is one row;
    ``per_tensor``; ``global``) the entries ranked [floor(βn), floor(βn) + floor(γn)) by |τ| survive.  Only
    tensors in ``names`` (default: all) are sparsified; the others pass unchanged (P2 vision code: attn/mlp/conv).
    """
    _check_choice(scope, BREADCRUMB_SCOPES, "breadcrumbs scope")
    if not (0.0 <= beta <= 1.0 and 0.0 <= gamma <= 1.0):
        raise ValueError(f"beta and gamma must be in [0, 1], got {beta}, {gamma}")
    sel = list(vector.tensors) if names is None else [n for n in names if n in vector.tensors]
    mask = _band_mask(vector, lambda n: _count(beta, n), lambda n: _count(beta, n) + _count(gamma, n), scope, sel)
    chosen = set(sel)
    return TaskVector({n: t * mask.tensors[n].to(t.device, t.dtype) if n in chosen else t.clone()
                       for n, t in vector.tensors.items()})


def wise_interpolate(pre: Tensors, ft: Tensors, alpha: float,
                     names: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """WiSE-FT (Wortsman et al. 2022): (1 − α)·θ_pre + α·θ_ft on ``names`` (default: the shared names)."""
    names = [n for n in ft if n in pre] if names is None else list(names)
    return {n: (1.0 - alpha) * pre[n].detach() + alpha * ft[n].detach().to(pre[n].device, pre[n].dtype)
            for n in names}


# ==============================================================================================================
# the mergers: configured instances in one registry
# ==============================================================================================================
@dataclass(frozen=True)
class Merger:
    """A post-hoc method of P2 Table 1: hyperparameters as fields, one task's vector and the merged vector."""

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""

    def single(self, vectors: Sequence[TaskVector], i: int, seed: int = 0) -> TaskVector:
        """Task ``i``'s processed vector (the normaliser of task addition; what task negation subtracts)."""
        raise NotImplementedError

    def merged(self, vectors: Sequence[TaskVector], seed: int = 0) -> TaskVector:
        """The vector task addition scales by α (default: Σ_t of the processed single-task vectors)."""
        return task_arithmetic([self.single(vectors, i, seed) for i in range(len(vectors))])

    def config(self) -> dict[str, Any]:
        """What enters a cache key: the merger's key and its hyperparameters by name."""
        return {"merger": self.key, **asdict(self)}


@dataclass(frozen=True)
class Ties(Merger):
    """TIES-Merging; ``keep=None`` skips the trim ("TaLoS + TIES", P2 App. A.8)."""

    keep: float | None = 0.1
    trim: str = "global"
    zero_sign: str = "majority"
    key: ClassVar[str] = "ties"
    label: ClassVar[str] = "TIES-Merging"

    def __post_init__(self) -> None:
        _check_choice(self.trim, TRIM_SCOPES, "trim scope")
        _check_choice(self.zero_sign, ZERO_SIGN_RULES, "zero-sign rule")
        if self.keep is not None:
            check_fraction(self.keep, "TIES keep (None = no trim)")

    def single(self, vectors: Sequence[TaskVector], i: int, seed: int = 0) -> TaskVector:
        return vectors[i] if self.keep is None or self.keep >= 1.0 else trim_topk(vectors[i], self.keep, self.trim)

    def merged(self, vectors: Sequence[TaskVector], seed: int = 0) -> TaskVector:
        return ties_merge(vectors, keep=self.keep, trim=self.trim, zero_sign=self.zero_sign)


@dataclass(frozen=True)
class Tall(Merger):
    """TALL masks (single task: τ_t ⊙ m_t) and Consensus merging (merged).  λ: 0.6 in the official NLP code, 0.2
    in its vision code (P2 sets it per family, ``P2Family.tall_lambda``)."""

    lam: float = 0.6
    k: int = 2
    key: ClassVar[str] = "tall"
    label: ClassVar[str] = "TALL Mask / Consensus"

    def __post_init__(self) -> None:
        if self.lam < 0 or self.k < 1:
            raise ValueError(f"TALL needs lam >= 0 and k >= 1, got lam={self.lam}, k={self.k}")

    def single(self, vectors: Sequence[TaskVector], i: int, seed: int = 0) -> TaskVector:
        return vectors[i].masked(tall_masks(vectors, self.lam)[i])

    def merged(self, vectors: Sequence[TaskVector], seed: int = 0) -> TaskVector:
        return consensus_merge(vectors, self.lam, self.k)


@dataclass(frozen=True)
class Dare(Merger):
    """DARE on each task vector (seed + task index), then Σ_t."""

    p: float = 0.9
    trim: str = "per_tensor"
    exact: bool = True
    key: ClassVar[str] = "dare"
    label: ClassVar[str] = "DARE"

    def __post_init__(self) -> None:
        _check_choice(self.trim, TRIM_SCOPES, "trim scope")
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"DARE drop rate p must be in [0, 1), got {self.p}")

    def single(self, vectors: Sequence[TaskVector], i: int, seed: int = 0) -> TaskVector:
        return dare(vectors[i], self.p, seed=seed + i, trim=self.trim, exact=self.exact)


@dataclass(frozen=True)
class Breadcrumbs(Merger):
    """Model Breadcrumbs on each task vector, then Σ_t."""

    beta: float = 0.1
    gamma: float = 0.2
    scope: str = "per_row"
    key: ClassVar[str] = "breadcrumbs"
    label: ClassVar[str] = "Breadcrumbs"

    def __post_init__(self) -> None:
        _check_choice(self.scope, BREADCRUMB_SCOPES, "breadcrumbs scope")
        if not (0.0 <= self.beta <= 1.0 and 0.0 <= self.gamma <= 1.0):
            raise ValueError(f"Breadcrumbs beta and gamma must be in [0, 1], got {self.beta}, {self.gamma}")

    def single(self, vectors: Sequence[TaskVector], i: int, seed: int = 0) -> TaskVector:
        return breadcrumbs(vectors[i], self.beta, self.gamma, self.scope)


def _registry(*mergers: Merger) -> dict[str, Merger]:
    out: dict[str, Merger] = {}
    for m in mergers:
        if not m.key or m.key in out:
            raise KeyError(f"merger key {m.key!r} of {type(m).__name__} is empty or registered twice")
        out[m.key] = m
    return out


#: the post-hoc mergers of P2 Table 1 at the official NLP defaults (spec D9), by key
MERGERS: dict[str, Merger] = _registry(Ties(), Tall(), Dare(), Breadcrumbs())


def merger(key: str) -> Merger:
    """The registered merger ``key`` (a clear error listing the keys otherwise)."""
    if key not in MERGERS:
        raise KeyError(f"unknown merger {key!r}; registered: {', '.join(MERGERS)}")
    return MERGERS[key]


__all__ = [
    "BREADCRUMB_SCOPES", "Breadcrumbs", "Dare", "MERGERS", "Merger", "TRIM_SCOPES", "Tall", "Ties",
    "ZERO_SIGN_RULES", "breadcrumbs", "consensus_mask", "consensus_merge", "dare", "disjoint_mean", "elect_signs",
    "fill_zero_signs", "merger", "tall_masks", "task_arithmetic", "ties_merge", "trim_mask", "trim_topk",
    "wise_interpolate",
]
