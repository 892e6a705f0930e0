"""Task vectors and task arithmetic (P2, Iurada et al. ICLR 2025, after Ilharco et al. 2023), the post-hoc merging
baselines of P2 Table 1 / 5, α selection, the evaluation drivers, the weight-disentanglement error and AdaMerging.

A :class:`TaskVector` is τ = θ_ft − θ_pre over named tensors.  Merged or scaled vectors become a model through
``τ.apply(θ_pre, α)`` = θ_pre + α·τ, which is passed as ``overrides`` to the one evaluation loop
(:func:`repro.core.evaluation.predict` / ``evaluate``); no model is ever copied.  On disk a task vector is sparse: per
tensor the flat int64 indices and the values of its nonzero entries (``<name>::idx`` / ``<name>::val``), or the
whole tensor (``<name>::dense``) where that takes fewer bytes (a dense fine-tuning run); shapes and dtypes in the
JSON (the layout :mod:`repro.workbench` writes; its reader assumes float32 values).

Merging kernels and the choices we make where the released code of P2 (spec D9) is wrong or ambiguous:

- **Trimming scope** (TIES, DARE): ``"global"`` ranks all entries of a vector together (the TIES / TaLoS code),
  ``"per_tensor"`` ranks each tensor separately (mergekit, peft).  Counts are ``floor(fraction · n)``.
  Ties in |τ| are broken by position (stable sort), so results are deterministic.
- **TIES** (Yadav et al. 2023): trim to the top-``keep`` fraction by |τ|, elect σ = sign(Σ_t τ̂_t) ("mass"),
  disjoint mean over the entries that agree with σ.  Entries whose elected sum is exactly zero get the sign
  held by the majority of elected entries (original TIES ``majority`` rule, optionally preceded by a
  per-entry vote); the P2 code's fallback sign(Σ|·|) is always +1 and is **not** reproduced.
- **TALL masks / Consensus** (Wang et al. 2024): m_t = 1[|τ_t| ≥ λ·|τ_MTL − τ_t|] **with** the absolute value
  (the P2 code drops it) and merged = Σ_t τ_t ⊙ 1[Σ_t m_t ≥ k] (the P2 code also multiplies by the *last*
  task's mask, a leftover loop variable; not reproduced).
- **DARE** (Yu et al. 2024): drop exactly ``floor(p·n)`` uniformly random entries per scope (the P2 code's
  exact-count variant; ``exact=False`` gives the original Bernoulli drop) and rescale survivors by 1/(1−p).
- **Breadcrumbs** (Davari & Belilovsky 2024): per row (last dimension), zero the top ``beta`` fraction by |τ|
  (outliers), keep the next ``gamma`` fraction, zero the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch
from repro.progress import progress_bar

from repro.data import Example
from repro.core.checks import check_finite, check_shapes
from repro.core.evaluation import evaluate, forward, predict
from repro.core.masks import Mask
from repro.models.base import Classifier

Tensors = Mapping[str, torch.Tensor]

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
# the task vector
# ==============================================================================================================
@dataclass
class TaskVector:
    """P2 §3 / Ilharco et al. 2023: τ = θ_ft − θ_pre over named tensors (a dict name → tensor)."""

    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any] = field(default_factory=dict)

    # --- construction ----------------------------------------------------------------------------------
    @classmethod
    def from_models(cls, pre: Tensors, ft: Tensors, names: Iterable[str] | None = None) -> "TaskVector":
        """τ = θ_ft − θ_pre on ``names`` (default: every floating tensor of ``ft`` that ``pre`` also has)."""
        if names is None:
            names = [n for n, v in ft.items() if n in pre and v.is_floating_point()]
        names = list(names)
        missing = [n for n in names if n not in pre or n not in ft]
        if missing:
            raise KeyError(f"names missing from pre or ft: {missing[:5]}; pre has {list(pre)[:5]}…")
        out = {}
        for n in names:
            if tuple(pre[n].shape) != tuple(ft[n].shape):
                raise ValueError(f"{n}: pre shape {tuple(pre[n].shape)} != ft shape {tuple(ft[n].shape)}")
            out[n] = ft[n].detach() - pre[n].detach().to(ft[n].device, ft[n].dtype)
        return cls(out)

    @classmethod
    def zeros(cls, shapes: Mapping[str, Sequence[int]], dtype: torch.dtype = torch.float32) -> "TaskVector":
        return cls({n: torch.zeros(tuple(s), dtype=dtype) for n, s in shapes.items()})

    # --- mapping access --------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.tensors)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {n: tuple(t.shape) for n, t in self.tensors.items()}

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: object) -> bool:
        return name in self.tensors

    def __len__(self) -> int:
        return len(self.tensors)

    def items(self):
        return self.tensors.items()

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "TaskVector":
        return TaskVector({n: t.to(device=device, dtype=dtype) for n, t in self.tensors.items()}, dict(self.meta))

    # --- arithmetic ------------------------------------------------------------------------------------
    def __add__(self, other: "TaskVector") -> "TaskVector":
        """τ_a + τ_b over the union of names (a name missing on one side counts as zeros)."""
        if not isinstance(other, TaskVector):
            return NotImplemented
        out = dict(self.tensors)
        for n, v in other.tensors.items():
            if n in out:
                if out[n].shape != v.shape:
                    raise ValueError(f"{n}: shapes {tuple(out[n].shape)} and {tuple(v.shape)} differ")
                out[n] = out[n] + v.to(out[n].device, out[n].dtype)
            else:
                out[n] = v.clone()
        return TaskVector(out)

    def __radd__(self, other: Any) -> "TaskVector":
        if isinstance(other, (int, float)) and other == 0:  # sum([...]) starts from 0
            return TaskVector(dict(self.tensors))
        return NotImplemented

    def __neg__(self) -> "TaskVector":
        return TaskVector({n: -t for n, t in self.tensors.items()})

    def __sub__(self, other: "TaskVector") -> "TaskVector":
        if not isinstance(other, TaskVector):
            return NotImplemented
        return self + (-other)

    def __mul__(self, scalar: float) -> "TaskVector":
        if isinstance(scalar, (TaskVector, Mask)) or (isinstance(scalar, torch.Tensor) and scalar.numel() != 1):
            raise TypeError("a TaskVector can only be multiplied by a scalar (use .masked for a Mask)")
        return TaskVector({n: t * float(scalar) for n, t in self.tensors.items()})

    __rmul__ = __mul__

    def dot(self, other: "TaskVector") -> float:
        """⟨τ_a, τ_b⟩ over the shared names (float64 accumulation; shapes must match, never broadcast)."""
        check_shapes({n: t for n, t in other.tensors.items() if n in self.tensors}, self.shapes,
                     "task vector (dot/cosine)", against="the other vector")
        return float(sum((self.tensors[n].double() * other.tensors[n].double().to(self.tensors[n].device)).sum()
                         for n in self.tensors if n in other.tensors))

    def norm(self) -> float:
        """‖τ‖₂ over all tensors."""
        return math.sqrt(sum(float(t.double().pow(2).sum()) for t in self.tensors.values()))

    def cosine(self, other: "TaskVector") -> float:
        denom = self.norm() * other.norm()
        return self.dot(other) / denom if denom > 0 else 0.0

    # --- sparsity --------------------------------------------------------------------------------------
    def numel(self) -> int:
        return sum(t.numel() for t in self.tensors.values())

    def count_nonzero(self) -> int:
        return int(sum(int(torch.count_nonzero(t)) for t in self.tensors.values()))

    def density(self, total: int | None = None) -> float:
        """Fraction of nonzero entries, of the vector's own tensors or of ``total`` parameters when given."""
        return self.count_nonzero() / max(self.numel() if total is None else total, 1)

    def sparsity(self) -> float:
        """1 − density: the sparsity ratio k of P2 App. A.1."""
        return 1.0 - self.density()

    def support(self) -> Mask:
        """The nonzero entries as a :class:`~repro.core.masks.Mask` over the vector's tensors."""
        return Mask({n: t != 0 for n, t in self.tensors.items()}, self.shapes)

    def masked(self, mask: Mask) -> "TaskVector":
        """τ ⊙ m: entries outside the mask (including tensors outside its eligible set) become zero."""
        out = {}
        for n, t in self.tensors.items():
            if n in mask.shapes:
                if tuple(mask.shapes[n]) != tuple(t.shape):
                    raise ValueError(f"{n}: mask shape {mask.shapes[n]} != vector shape {tuple(t.shape)}")
                out[n] = t * mask.tensors[n].to(t.device, t.dtype)
            else:
                out[n] = torch.zeros_like(t)
        return TaskVector(out)

    # --- to parameters ---------------------------------------------------------------------------------
    def apply(self, pre: Tensors, alpha: float = 1.0) -> dict[str, torch.Tensor]:
        """Ilharco et al. 2023: θ_pre + α·τ on the vector's names (usable as evaluation overrides)."""
        missing = [n for n in self.tensors if n not in pre]
        if missing:
            raise KeyError(f"pre-trained parameters missing for {missing[:5]} (pre has {len(pre)} tensors)")
        check_shapes(self.tensors, {n: p.shape for n, p in pre.items()}, "task vector", against="θ_pre")
        return {n: pre[n].detach() + float(alpha) * t.to(pre[n].device, pre[n].dtype)
                for n, t in self.tensors.items()}

    # --- storage ---------------------------------------------------------------------------------------
    def to_sparse_storage(self) -> tuple[dict[str, torch.Tensor], dict[str, list[int]]]:
        """``({name::idx: int64 flat indices, name::val: values}, shapes)`` of the nonzero entries.

        A tensor whose index + value pairs would take more bytes than the tensor itself (a dense fine-tuning
        run changes nearly every entry) is stored whole as ``name::dense`` instead.
        """
        tensors: dict[str, torch.Tensor] = {}
        for n, t in self.tensors.items():
            flat = t.detach().reshape(-1).cpu()
            idx = flat.nonzero().reshape(-1).to(torch.int64)
            if idx.numel() * (idx.element_size() + flat.element_size()) >= flat.numel() * flat.element_size():
                tensors[f"{n}::dense"] = flat.contiguous()
                continue
            tensors[f"{n}::idx"] = idx
            tensors[f"{n}::val"] = flat[idx].contiguous()
        return tensors, {n: list(s) for n, s in self.shapes.items()}

    def save(self, path: str | Path, meta: dict | None = None) -> None:
        """Sparse artifact ``<path>.safetensors`` + ``<path>.json`` (atomic, via :mod:`repro.artifacts`)."""
        from repro.artifacts import save_tensors

        tensors, shapes = self.to_sparse_storage()
        info = {**(meta or {}), "kind": "taskvec", "shapes": shapes,
                "dtypes": {n: str(t.dtype).replace("torch.", "") for n, t in self.tensors.items()},
                "nnz": self.count_nonzero(), "density": self.density()}
        save_tensors(path, tensors, info)

    @classmethod
    def load(cls, path: str | Path) -> "TaskVector":
        """Inverse of :meth:`save` (dense CPU tensors; the JSON metadata is kept in ``.meta``)."""
        from repro.artifacts import load_tensors

        tensors, info = load_tensors(path)
        if info.get("kind") != "taskvec":
            raise ValueError(f"{path} is not a task-vector artifact (kind={info.get('kind')!r})")
        dtypes = info.get("dtypes", {})
        out = {}
        for n, s in info["shapes"].items():
            val = tensors.get(f"{n}::val")
            dtype = getattr(torch, dtypes[n]) if n in dtypes else (val.dtype if val is not None else torch.float32)
            if f"{n}::dense" in tensors:
                out[n] = tensors[f"{n}::dense"].to(dtype).reshape(tuple(s))
                continue
            t = torch.zeros(tuple(s), dtype=dtype)
            if val is not None and val.numel():
                t.view(-1)[tensors[f"{n}::idx"]] = val.to(dtype)
            out[n] = t
        return cls(out, info)


def _union_names(vectors: Sequence[TaskVector]) -> list[str]:
    names: dict[str, None] = {}
    for v in vectors:
        for n in v.tensors:
            names.setdefault(n, None)
    return list(names)


def _aligned(vectors: Sequence[TaskVector]) -> tuple[list[str], list[dict[str, torch.Tensor]]]:
    """Every vector over the union of names (zeros where a vector lacks a tensor), shapes checked."""
    if not vectors:
        raise ValueError("need at least one task vector")
    names = _union_names(vectors)
    ref: dict[str, torch.Tensor] = {}
    for i, v in enumerate(vectors):
        check_finite(v.tensors, f"merging: task vector {i}", hint="re-create the vector (its run diverged)")
        for n, t in v.tensors.items():
            if n in ref and ref[n].shape != t.shape:
                raise ValueError(f"{n}: task vectors disagree on its shape ({tuple(ref[n].shape)} vs {tuple(t.shape)})")
            ref.setdefault(n, t)
    return names, [{n: v.tensors[n] if n in v.tensors else torch.zeros_like(ref[n]) for n in names} for v in vectors]


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
    names, aligned = _aligned(vectors)
    return TaskVector({n: torch.stack([a[n] for a in aligned]).sum(0) for n in names})


def ties_merge(vectors: Sequence[TaskVector], keep: float | None = 0.1, trim: str = "global",
               zero_sign: str = "majority") -> TaskVector:
    """TIES-Merging (Yadav et al. 2023, Alg. 1): trim top-k |τ|, elect sign by mass, disjoint mean.

    ``keep=None`` (or 1.0) skips trimming (P2 Table 5 "TaLoS + TIES").  Entries whose trimmed sum is exactly
    zero get a sign by ``zero_sign``: ``"majority"`` = the sign held by most elected entries (over the whole
    vector with ``trim="global"``, per tensor with ``"per_tensor"``); ``"vote"`` = first the per-entry majority
    of the trimmed vectors' signs, then the ``"majority"`` rule for exact vote ties.  A final tie gives +1.
    """
    _check_choice(trim, TRIM_SCOPES, "trim scope")
    _check_choice(zero_sign, ZERO_SIGN_RULES, "zero-sign rule")
    names, aligned = _aligned(vectors)
    trimmed = [TaskVector(a) if keep is None or keep >= 1.0 else trim_topk(TaskVector(a), keep, trim)
               for a in aligned]
    stacks = {n: torch.stack([v.tensors[n] for v in trimmed]) for n in names}  # [T, ...]
    elected = {n: torch.sign(s.sum(0)) for n, s in stacks.items()}
    if zero_sign == "vote":
        for n, s in stacks.items():
            vote = torch.sign(torch.sign(s).sum(0))
            elected[n] = torch.where(elected[n] == 0, vote, elected[n])

    def majority(groups: Iterable[str]) -> float:
        total = sum(float(elected[n].sum()) for n in groups)
        return -1.0 if total < 0 else 1.0

    fallback = {n: majority([n]) for n in names} if trim == "per_tensor" else dict.fromkeys(names, majority(names))
    out = {}
    for n, s in stacks.items():
        sign = torch.where(elected[n] == 0, torch.full_like(elected[n], fallback[n]), elected[n])
        agree = (torch.sign(s) == sign.unsqueeze(0)) & (s != 0)
        count = agree.sum(0).clamp_min(1).to(s.dtype)
        out[n] = (s * agree.to(s.dtype)).sum(0) / count
    return TaskVector(out)


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
    names, aligned = _aligned(vectors)
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


MERGE_METHODS = ("task_arithmetic", "ties", "consensus", "dare", "breadcrumbs")


def merge(method: str, vectors: Sequence[TaskVector], **kw: Any) -> TaskVector:
    """One entry point: ``task_arithmetic`` | ``ties`` | ``consensus`` | ``dare`` / ``breadcrumbs`` (each, then Σ)."""
    _check_choice(method, MERGE_METHODS, "merge method")
    if method == "task_arithmetic":
        return task_arithmetic(vectors)
    if method == "ties":
        return ties_merge(vectors, **kw)
    if method == "consensus":
        return consensus_merge(vectors, **kw)
    if method == "dare":
        seed = int(kw.pop("seed", 0))
        return task_arithmetic([dare(v, seed=seed + i, **kw) for i, v in enumerate(vectors)])
    return task_arithmetic([breadcrumbs(v, **kw) for v in vectors])


# ==============================================================================================================
# α grid and selection (spec D7; P2 App. A.1)
# ==============================================================================================================
def alpha_grid(n_points: int = 21, sparsity: float = 0.0) -> list[float]:
    """P2 App. A.1: α ∈ {0, 0.05, …, 1.0}, extended "by ×1/(1−k) where k is the sparsity ratio" of τ.

    The official code (spec D7) uses the unscaled grid ``linspace(0, 1, 21)`` for every method; the paper scales
    it for the sparse methods (LoTA, TaLoS).  ``sparsity=0`` gives the unscaled grid.
    """
    if n_points < 2:
        raise ValueError("n_points must be >= 2")
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    scale = 1.0 / (1.0 - sparsity)
    return [round(i / (n_points - 1) * scale, 10) for i in range(n_points)]


def select_addition_alpha(val_acc_by_alpha: Mapping[float, Mapping[str, float]],
                          single_task_acc: Mapping[str, float]) -> tuple[float, list[dict[str, Any]]]:
    """P2 Eq. 11 / spec D7: α* = argmax_α mean_t acc_t(θ0 + α Στ) / acc_t(single-task FT, same method).

    The normalizer is the fine-tuned checkpoint's own accuracy on the same split ("the single-task accuracy that
    the fine-tuned checkpoint obtained … before being fused"; the NLP code's val/test mix-up is not reproduced).
    Ties keep the smallest α (the official loop over the ascending grid with a strict >).  Returns α* and one
    row per α: ``{"alpha", "avg_normalized", "avg_acc", "normalized": {t: …}, "acc": {t: …}}``.
    """
    if not val_acc_by_alpha:
        raise ValueError("val_acc_by_alpha is empty")
    table: list[dict[str, Any]] = []
    best_alpha, best = None, -math.inf
    for alpha in sorted(val_acc_by_alpha):
        accs = val_acc_by_alpha[alpha]
        if not accs:
            raise ValueError(f"no task accuracies at alpha={alpha}")
        missing = [t for t in accs if t not in single_task_acc]
        if missing:
            raise KeyError(f"no single-task accuracy for {missing}; given for {sorted(single_task_acc)}")
        zero = [t for t in accs if single_task_acc[t] <= 0]
        if zero:
            raise ValueError(f"single-task accuracy must be > 0 to normalize; got 0 for {zero}")
        norm = {t: a / single_task_acc[t] for t, a in accs.items()}
        row = {"alpha": float(alpha), "avg_normalized": float(np.mean(list(norm.values()))),
               "avg_acc": float(np.mean(list(accs.values()))), "normalized": norm, "acc": dict(accs)}
        table.append(row)
        if row["avg_normalized"] > best:
            best_alpha, best = float(alpha), row["avg_normalized"]
    return best_alpha, table


def select_negation_alpha(target_val_by_alpha: Mapping[float, float], control_val_by_alpha: Mapping[float, float],
                          control_zeroshot: float, threshold: float = 0.95) -> float | None:
    """P2 App. A.1 / spec D7: α* = argmin_α target acc(θ0 − ατ) s.t. control ≥ threshold × zero-shot control.

    Ties keep the smallest α; None when no α keeps the control above the threshold.
    """
    missing = [a for a in target_val_by_alpha if a not in control_val_by_alpha]
    if missing:
        raise KeyError(f"no control accuracy at alphas {missing}")
    best_alpha, best = None, math.inf
    for alpha in sorted(target_val_by_alpha):
        if control_val_by_alpha[alpha] >= threshold * control_zeroshot and target_val_by_alpha[alpha] < best:
            best_alpha, best = float(alpha), target_val_by_alpha[alpha]
    return best_alpha


# ==============================================================================================================
# evaluation drivers (the one evaluation loop, parameters as overrides)
# ==============================================================================================================
def eval_addition(model: Classifier, pre_params: Tensors, merged_vector: TaskVector,
                  tasks: Mapping[str, Sequence[Example]], alphas: Iterable[float], *, batch_size: int = 64,
                  progress: bool = True, desc: str = "task addition") -> list[dict[str, Any]]:
    """P2 task addition: every task's scores under θ0 + α·τ_merged for each α; one row per (α, task)."""
    rows = []
    for alpha in progress_bar(list(alphas), enabled=progress, desc=desc, leave=False):
        over = merged_vector.apply(pre_params, alpha)
        for task, examples in tasks.items():
            rows.append({"alpha": float(alpha), "task": task,
                         **evaluate(model, examples, task, overrides=over, batch_size=batch_size)})
    return rows


def eval_negation(model: Classifier, pre_params: Tensors, vector: TaskVector,
                  tasks: Mapping[str, Sequence[Example]], alphas: Iterable[float], *, batch_size: int = 64,
                  progress: bool = True) -> list[dict[str, Any]]:
    """P2 task negation: scores of the target and control tasks under θ0 − α·τ; one row per (α, task)."""
    rows = eval_addition(model, pre_params, -vector, tasks, alphas, batch_size=batch_size, progress=progress,
                         desc="task negation")
    return [{**r, "negated": True} for r in rows]


def rows_by_alpha(rows: Iterable[Mapping[str, Any]], key: str = "acc") -> dict[float, dict[str, float]]:
    """``{α: {task: row[key]}}`` from :func:`eval_addition` / :func:`eval_negation` rows (α-selection input)."""
    out: dict[float, dict[str, float]] = {}
    for r in rows:
        if key not in r:
            raise KeyError(f"row has no {key!r}; keys: {sorted(r)}")
        out.setdefault(float(r["alpha"]), {})[r["task"]] = float(r[key])
    return out


def disentanglement_error(model: Classifier, pre: Tensors, tau1: TaskVector, tau2: TaskVector,
                          data1: Sequence[Example], data2: Sequence[Example], task1: str, task2: str,
                          grid: Sequence[float], grid2: Sequence[float] | None = None, *, batch_size: int = 64,
                          progress: bool = True) -> np.ndarray:
    """P2 Eq. 10 (Ortiz-Jiménez et al. 2023): ξ(α1, α2) = Σ_t E_{D_t} 1[f_t(θ0+α_tτ_t) ≠ f_t(θ0+α1τ1+α2τ2)].

    ``f_t`` is the arg-max prediction with task t's own head.  Returns an array [len(grid), len(grid2)] whose
    entry (i, j) is ξ(grid[i], grid2[j]) (``grid2`` defaults to ``grid``); values lie in [0, 2].
    """
    g1 = [float(a) for a in grid]
    g2 = g1 if grid2 is None else [float(a) for a in grid2]
    u1, u2 = tau1 + tau2 * 0.0, tau1 * 0.0 + tau2  # both over the union of names: every eval overrides the same set

    def preds(vec: TaskVector, data: Sequence[Example], task: str) -> torch.Tensor:
        return predict(model, data, task, vec.apply(pre, 1.0), batch_size=batch_size).preds

    single1 = [preds(u1 * a, data1, task1) for a in g1]
    single2 = [preds(u2 * b, data2, task2) for b in g2]
    out = np.zeros((len(g1), len(g2)))
    bar = progress_bar(total=len(g1) * len(g2), enabled=progress, desc="disentanglement", leave=False)
    for i, a in enumerate(g1):
        for j, b in enumerate(g2):
            both = u1 * a + u2 * b
            e1 = (preds(both, data1, task1) != single1[i]).float().mean().item()
            e2 = (preds(both, data2, task2) != single2[j]).float().mean().item()
            out[i, j] = e1 + e2
            bar.update(1)
    bar.close()
    return out


# ==============================================================================================================
# AdaMerging (Yang et al. 2024), for P2 Table 5
# ==============================================================================================================
@dataclass
class AdaMergingResult:
    """Learned merging coefficients: ``lambdas`` [T] (task-wise) or [T, L] (layer-wise, one per named tensor)."""

    tasks: list[str]
    names: list[str]
    granularity: str
    lambdas: torch.Tensor
    history: list[float]
    merged: TaskVector

    def coefficients(self) -> dict[str, Any]:
        """``{task: λ_t}`` (task-wise) or ``{task: {tensor name: λ_{t,l}}}`` (layer-wise)."""
        lam = self.lambdas.tolist()
        if self.granularity == "task":
            return {t: lam[i] for i, t in enumerate(self.tasks)}
        return {t: dict(zip(self.names, lam[i])) for i, t in enumerate(self.tasks)}


def _prediction_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Mean Shannon entropy H(softmax(z)) = −Σ_c p_c log p_c over a batch."""
    logp = logits.float().log_softmax(-1)
    return -(logp.exp() * logp).sum(-1).mean()


def adamerging(model: Classifier, pre_params: Tensors, vectors: Mapping[str, TaskVector],
               unlabeled: Mapping[str, Sequence[Example]], granularity: str = "task", *, steps: int = 500,
               lr: float = 1e-3, init: float = 0.3, batch_size: int = 16, clamp: tuple[float, float] | None = None,
               seed: int = 0, progress: bool = True) -> AdaMergingResult:
    """AdaMerging (Yang et al. 2024; P2 Table 5): λ_t or λ_{t,l} of θ0 + Σ_t λ_t τ_t by entropy minimization.

    Minimizes Σ_t mean_{x∈B_t} H(softmax f_t(x)) with Adam over the λs, on unlabeled inputs of every task (their
    labels are ignored), each task through its own head.

    A "layer" is one named tensor of the task vectors (the AdaMerging code's unit).  Each step draws
    ``batch_size`` inputs per task (seeded reshuffle per pass).  ``clamp`` optionally clips λ in the forward
    (the AdaMerging code uses (0, 1)); by default λ is unconstrained, which suits sparse vectors whose useful
    α exceeds 1.
    """
    _check_choice(granularity, ("task", "layer"), "AdaMerging granularity")
    tasks = list(vectors)
    missing = [t for t in tasks if t not in unlabeled or not unlabeled[t]]
    if missing:
        raise KeyError(f"no unlabeled examples for tasks {missing}; given: {sorted(unlabeled)}")
    names, aligned = _aligned([vectors[t] for t in tasks])
    absent = [n for n in names if n not in pre_params]
    if absent:
        raise KeyError(f"pre-trained parameters missing for {absent[:5]}")
    device = model.device
    taus = [{n: a[n].detach().to(device, pre_params[n].dtype) for n in names} for a in aligned]
    pre = {n: pre_params[n].detach().to(device) for n in names}
    shape = (len(tasks),) if granularity == "task" else (len(tasks), len(names))
    lam = torch.full(shape, float(init), device=device, requires_grad=True)
    opt = torch.optim.Adam([lam], lr=lr)

    rng = np.random.default_rng(seed)
    pools = {t: [] for t in tasks}

    def next_batch(task: str) -> list[Example]:
        out: list[Example] = []
        while len(out) < batch_size:
            if not pools[task]:
                pools[task] = list(rng.permutation(len(unlabeled[task])))
            out.append(unlabeled[task][pools[task].pop()])
        return out

    def coef(i: int, j: int) -> torch.Tensor:
        c = lam[i] if granularity == "task" else lam[i, j]
        return c.clamp(*clamp) if clamp is not None else c

    history: list[float] = []
    was_training = model.training
    model.eval()
    try:
        for _ in progress_bar(range(steps), enabled=progress, desc=f"AdaMerging ({granularity})", leave=False):
            over = {}
            for j, n in enumerate(names):
                p = pre[n]
                for i in range(len(tasks)):
                    p = p + coef(i, j) * taus[i][n]
                over[n] = p
            loss = torch.zeros((), device=device)
            for t in tasks:
                batch = model.tokenize(t, next_batch(t))
                loss = loss + _prediction_entropy(forward(model, batch, t, over))
            (grad,) = torch.autograd.grad(loss, [lam])
            opt.zero_grad(set_to_none=True)
            lam.grad = grad
            opt.step()
            history.append(float(loss.detach()))
    finally:
        model.train(was_training)

    final = lam.detach().clone()
    if clamp is not None:
        final = final.clamp(*clamp)
    merged = {n: sum(float(final[i] if granularity == "task" else final[i, j]) * aligned[i][n]
                     for i in range(len(tasks))) for j, n in enumerate(names)}
    return AdaMergingResult(tasks, names, granularity, final.cpu(), history, TaskVector(merged))


__all__ = [
    "AdaMergingResult", "MERGE_METHODS", "TaskVector", "adamerging", "alpha_grid", "breadcrumbs",
    "consensus_mask", "consensus_merge", "dare", "disentanglement_error", "eval_addition", "eval_negation",
    "merge", "rows_by_alpha", "select_addition_alpha", "select_negation_alpha", "tall_masks", "task_arithmetic",
    "ties_merge", "trim_mask", "trim_topk", "wise_interpolate",
]
