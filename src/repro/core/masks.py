"""The one sparse binary mask type, shared by P1 (graft regions, BitFit, FISH) and P2 (TaLoS, LoTA, TALL).

A :class:`Mask` is a set of selected entries of named parameter tensors, defined relative to an *eligible set*
(the tensors it may select from, with their shapes).  Densities are reported relative to the eligible set
(P1's convention: fraction of the transformer-block parameters) and, given a total, relative to all parameters.
On disk a mask is sparse: int64 flat indices per tensor in safetensors, plus JSON metadata.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import torch

from repro.models.base import layer_index, module_type
from repro.artifacts import load_tensors, save_tensors, tensor_digest

Shapes = dict[str, tuple[int, ...]]

#: sub-module types in P1 Fig. 10 order (:func:`repro.models.base.module_type` labels; GPT-2's fused attention
#: is ``QKV``): the row order of placement tables
TYPE_ORDER: tuple[str, ...] = ("Q", "K", "V", "QKV", "O", "FFN-in", "FFN-out", "LayerNorm", "other")


@dataclass
class Mask:
    """Binary selection over the eligible tensors ``shapes``; ``tensors[name]`` is a bool tensor of that shape."""

    tensors: dict[str, torch.Tensor]
    shapes: Shapes = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.shapes:
            self.shapes = {n: tuple(t.shape) for n, t in self.tensors.items()}
        self.shapes = {n: tuple(int(d) for d in s) for n, s in self.shapes.items()}  # [2] and (2,) are one shape
        for n, t in self.tensors.items():
            if n not in self.shapes:
                raise KeyError(f"mask tensor {n!r} is not in the eligible set")
            if tuple(t.shape) != tuple(self.shapes[n]):
                raise ValueError(f"mask tensor {n!r} has shape {tuple(t.shape)}, eligible shape {self.shapes[n]}")
            if t.dtype != torch.bool:
                self.tensors[n] = t.bool()
        for n, s in self.shapes.items():
            if n not in self.tensors:
                self.tensors[n] = torch.zeros(s, dtype=torch.bool)

    # --- constructors ----------------------------------------------------------------------------------
    @staticmethod
    def shapes_of(params: Mapping[str, torch.Tensor]) -> Shapes:
        return {n: tuple(p.shape) for n, p in params.items()}

    @classmethod
    def empty(cls, shapes: Shapes) -> "Mask":
        return cls({n: torch.zeros(s, dtype=torch.bool) for n, s in shapes.items()}, dict(shapes))

    @classmethod
    def full(cls, shapes: Shapes) -> "Mask":
        return cls({n: torch.ones(s, dtype=torch.bool) for n, s in shapes.items()}, dict(shapes))

    @classmethod
    def from_names(cls, shapes: Shapes, names: Iterable[str]) -> "Mask":
        """Whole tensors selected by name (e.g. BitFit: every bias)."""
        chosen = set(names)
        return cls({n: torch.full(s, n in chosen, dtype=torch.bool) for n, s in shapes.items()}, dict(shapes))

    @classmethod
    def top_k(cls, scores: Mapping[str, torch.Tensor], k: int, largest: bool = True) -> "Mask":
        """Select exactly ``k`` entries with the globally largest (or smallest) scores across all tensors.

        Ties at the threshold are broken by position (torch.topk); the official grafting code uses a strict
        ``> threshold`` instead and so selects k-1 entries when there are no ties.
        """
        names = list(scores)
        shapes = {n: tuple(scores[n].shape) for n in names}
        total = sum(scores[n].numel() for n in names)
        if not 0 <= k <= total:
            raise ValueError(f"k={k} outside [0, {total}]")
        flat = torch.cat([scores[n].detach().reshape(-1).float().cpu() for n in names])
        nan = torch.isnan(flat)
        if bool(nan.any()):  # a NaN score is never selected (it would sort as the largest)
            if k > total - int(nan.sum()):
                raise ValueError(f"k={k} but only {total - int(nan.sum())} of {total} scores are not NaN; "
                                 f"the scores (e.g. Δ) hold NaN: check the run that produced them")
            flat = flat.masked_fill(nan, float("-inf") if largest else float("inf"))
        sel = torch.zeros(total, dtype=torch.bool)
        if k > 0:
            idx = torch.topk(flat, k, largest=largest, sorted=False).indices
            sel[idx] = True
        return cls._unflatten(sel, names, shapes)

    @classmethod
    def top_fraction(cls, scores: Mapping[str, torch.Tensor], fraction: float, largest: bool = True, *,
                     allow_empty: bool = False) -> "Mask":
        """Top-``fraction`` of the eligible entries (k = int(fraction · |E|), the papers' rounding).

        ``fraction`` 0 is an error unless ``allow_empty`` (an intentionally empty region, e.g. γ_base = ∅); a
        positive fraction too small to select one entry warns (the region is empty), unless ``allow_empty``."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        total = sum(s.numel() for s in scores.values())
        k = int(fraction * total)
        if fraction == 0 and not allow_empty:
            raise ValueError(f"fraction 0 selects no entry of {total:,}; ask for a fraction in (0, 1] (or pass "
                             f"allow_empty=True for an intentionally empty mask)")
        if fraction > 0 and k == 0 and not allow_empty:
            warnings.warn(f"fraction {fraction:g} of {total:,} entries selects none (k = int(fraction · {total}) = 0);"
                          f" the mask is empty; the smallest nonempty fraction is {1 / max(total, 1):.3g}",
                          RuntimeWarning, stacklevel=2)
        return cls.top_k(scores, k, largest=largest)

    @classmethod
    def random(cls, shapes: Shapes, k: int, seed: int = 0) -> "Mask":
        """Uniformly random ``k`` entries of the eligible set."""
        total = sum(int(torch.tensor(s).prod()) if s else 1 for s in shapes.values())
        if not 0 <= k <= total:
            raise ValueError(f"k={k} outside [0, {total}]")
        g = torch.Generator().manual_seed(seed)
        sel = torch.zeros(total, dtype=torch.bool)
        sel[torch.randperm(total, generator=g)[:k]] = True
        return cls._unflatten(sel, list(shapes), dict(shapes))

    @classmethod
    def _unflatten(cls, flat: torch.Tensor, names: list[str], shapes: Shapes) -> "Mask":
        out, i = {}, 0
        for n in names:
            numel = 1
            for d in shapes[n]:
                numel *= d
            out[n] = flat[i : i + numel].reshape(shapes[n]).clone()
            i += numel
        return cls(out, shapes)

    # --- sizes -----------------------------------------------------------------------------------------
    @property
    def eligible_count(self) -> int:
        return sum(t.numel() for t in self.tensors.values())

    def count(self) -> int:
        return int(sum(int(t.sum()) for t in self.tensors.values()))

    def density(self, total: int | None = None) -> float:
        """Selected fraction of the eligible set, or of ``total`` parameters when given."""
        denom = self.eligible_count if total is None else total
        return self.count() / max(denom, 1)

    def nonempty_names(self) -> list[str]:
        return [n for n, t in self.tensors.items() if bool(t.any())]

    # --- set algebra ------------------------------------------------------------------------------------
    def _check_same(self, other: "Mask") -> None:
        if self.shapes != other.shapes:
            raise ValueError("masks are over different eligible sets")

    def __or__(self, other: "Mask") -> "Mask":
        self._check_same(other)
        return Mask({n: self.tensors[n] | other.tensors[n] for n in self.shapes}, dict(self.shapes))

    def __and__(self, other: "Mask") -> "Mask":
        self._check_same(other)
        return Mask({n: self.tensors[n] & other.tensors[n] for n in self.shapes}, dict(self.shapes))

    def __sub__(self, other: "Mask") -> "Mask":
        self._check_same(other)
        return Mask({n: self.tensors[n] & ~other.tensors[n] for n in self.shapes}, dict(self.shapes))

    def __invert__(self) -> "Mask":
        return Mask({n: ~t for n, t in self.tensors.items()}, dict(self.shapes))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mask) or self.shapes != other.shapes:
            return False
        return all(torch.equal(self.tensors[n], other.tensors[n]) for n in self.shapes)

    @staticmethod
    def union(masks: Iterable["Mask"]) -> "Mask":
        masks = list(masks)
        if not masks:
            raise ValueError("union of no masks")
        out = masks[0]
        for m in masks[1:]:
            out = out | m
        return out

    def overlap(self, other: "Mask") -> float:
        """P1 Fig. 8a asymmetric overlap |self ∩ other| / |other| (self = γ_i, other = γ_j)."""
        inter = (self & other).count()
        return inter / max(other.count(), 1)

    def iou(self, other: "Mask") -> float:
        """Intersection over union |a ∩ b| / |a ∪ b| (P1 Table 8, P2 Fig. 11)."""
        union = (self | other).count()
        return (self & other).count() / union if union else 1.0

    # --- placement -------------------------------------------------------------------------------------
    def placement(self, **labels: object) -> list[dict]:
        """Where the selected entries sit (P1 Fig. 9-10, P2 Fig. 4-5): one row per (layer, sub-module type,
        weight/bias) group with ``selected``, ``eligible`` and shares.

        ``layer`` is -1 for tensors outside the transformer blocks; ``share_of_region`` = selected / |mask|;
        ``share_of_group`` = selected / eligible.  ``labels`` (e.g. ``task="SST-2"``) are copied into every row.
        Rows are ordered by layer, then :data:`TYPE_ORDER`, then weight before bias.
        """
        groups: dict[tuple, list[int]] = {}
        for n, t in self.tensors.items():
            li = layer_index(n)
            key = (-1 if li is None else li, module_type(n), "bias" if n.endswith("bias") else "weight")
            g = groups.setdefault(key, [0, 0])
            g[0] += int(t.sum())
            g[1] += t.numel()
        total = max(self.count(), 1)
        return [{**labels, "layer": layer, "type": typ, "kind": kind, "selected": sel, "eligible": elig,
                 "share_of_region": sel / total, "share_of_group": sel / max(elig, 1)}
                for (layer, typ, kind), (sel, elig) in sorted(groups.items(), key=_placement_order)]

    def digest(self) -> str:
        """Fingerprint of the selection and its eligible shapes (:func:`repro.artifacts.tensor_digest`)."""
        return tensor_digest(self.tensors)

    # --- tensors ----------------------------------------------------------------------------------------
    def apply(self, values: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``values ⊙ mask`` for every eligible tensor (values must cover the eligible set, shape for shape)."""
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise KeyError(f"mask applied to values lacking {len(missing)} of its tensors, e.g. {missing[:3]}")
        for n in self.shapes:
            if tuple(values[n].shape) != tuple(self.shapes[n]):
                raise ValueError(f"mask tensor {n!r} has shape {tuple(self.shapes[n])} but the values have "
                                 f"{tuple(values[n].shape)}; build the mask from the same model")
        return {n: values[n] * self.tensors[n].to(values[n].device, values[n].dtype) for n in self.shapes}

    def float_tensors(self, device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
        return {n: t.to(device=device, dtype=torch.float32) for n, t in self.tensors.items()}

    # --- storage ----------------------------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> None:
        """Sparse on-disk form: ``<path>.safetensors`` (flat int64 indices per tensor) + ``<path>.json``."""
        idx = {n: t.reshape(-1).nonzero().reshape(-1).to(torch.int64) for n, t in self.tensors.items()}
        info = {"kind": "mask", "shapes": {n: list(s) for n, s in self.shapes.items()}, "count": self.count(),
                "density": self.density(), **(meta or {})}
        save_tensors(path, {n: v for n, v in idx.items() if v.numel()}, info)

    @classmethod
    def load(cls, path: str | Path) -> "Mask":
        idx, info = load_tensors(path)
        if info.get("kind") != "mask":
            raise ValueError(f"{path} is not a mask artifact (kind={info.get('kind')!r})")
        shapes = {n: tuple(s) for n, s in info["shapes"].items()}
        out = {}
        unknown = set(idx) - set(shapes)
        if unknown:
            raise ValueError(f"{path}: index tensors {sorted(unknown)[:3]} are not in the mask's shapes")
        for n, s in shapes.items():
            t = torch.zeros(s, dtype=torch.bool)
            if n in idx:
                if idx[n].numel() and (int(idx[n].min()) < 0 or int(idx[n].max()) >= t.numel()):
                    raise ValueError(f"{path}: indices of {n!r} fall outside its shape {s}")
                t.view(-1)[idx[n]] = True
            out[n] = t
        return cls(out, shapes)


def _placement_order(item: tuple[tuple, list[int]]) -> tuple[int, int, str]:
    layer, typ, kind = item[0]
    return layer, TYPE_ORDER.index(typ) if typ in TYPE_ORDER else len(TYPE_ORDER), kind


#: the function form of :meth:`Mask.placement`, for code that builds tables from many masks
placement_rows = Mask.placement
