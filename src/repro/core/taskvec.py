"""Task vectors (P2, Iurada et al. ICLR 2025, after Ilharco et al. 2023): τ = θ_ft − θ_pre over named tensors.

A :class:`TaskVector` is τ = θ_ft − θ_pre over named tensors.  Merged or scaled vectors become a model through
``τ.apply(θ_pre, α)`` = θ_pre + α·τ, which is passed as ``overrides`` to the one evaluation loop
(:func:`repro.core.evaluation.predict` / ``evaluate``); no model is ever copied.  On disk a task vector is sparse: per
tensor the flat int64 indices and the values of its nonzero entries (``<name>::idx`` / ``<name>::val``), or the
whole tensor (``<name>::dense``) where that takes fewer bytes (a dense fine-tuning run); shapes and dtypes in the
JSON (the layout :mod:`repro.workbench` writes; its reader assumes float32 values).

Merging lives in :mod:`repro.core.merging`, AdaMerging in :mod:`repro.core.adamerging`, the α-selection protocol
in :mod:`repro.p2.arithmetic` and the weight-disentanglement error in :mod:`repro.p2.function_localization`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from repro.core.checks import NonFiniteError, check_finite, check_shapes
from repro.core.masks import Mask
from repro.artifacts import load_tensors, save_tensors

Tensors = Mapping[str, torch.Tensor]


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
        _check_operands("τ_a + τ_b", self, other)
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
        if not math.isfinite(float(scalar)):
            raise NonFiniteError(f"task-vector arithmetic: α·τ with α = {float(scalar)!r}; α must be a finite "
                                 f"number")
        _check_operands("α·τ", self)
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
        tensors, shapes = self.to_sparse_storage()
        info = {**(meta or {}), "kind": "taskvec", "shapes": shapes,
                "dtypes": {n: str(t.dtype).replace("torch.", "") for n, t in self.tensors.items()},
                "nnz": self.count_nonzero(), "density": self.density()}
        save_tensors(path, tensors, info)

    @classmethod
    def load(cls, path: str | Path) -> "TaskVector":
        """Inverse of :meth:`save` (dense CPU tensors; the JSON metadata is kept in ``.meta``)."""
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


def _check_operands(op: str, *vectors: TaskVector) -> None:
    """Task-vector arithmetic refuses NaN / inf operands (as the merges do), naming the operand and tensor."""
    for i, v in enumerate(vectors):
        which = f" (operand {i + 1})" if len(vectors) > 1 else ""
        check_finite(v.tensors, f"task-vector arithmetic {op}{which}", hint="re-create the vector (its run diverged)")


def _union_names(vectors: Sequence[TaskVector]) -> list[str]:
    names: dict[str, None] = {}
    for v in vectors:
        for n in v.tensors:
            names.setdefault(n, None)
    return list(names)


def align(vectors: Sequence[TaskVector]) -> tuple[list[str], list[dict[str, torch.Tensor]]]:
    """``(names, tensors)``: every vector over the union of names (zeros where one lacks a tensor), shapes checked."""
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


__all__ = ["TaskVector", "Tensors", "align"]
