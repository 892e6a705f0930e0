"""Numerical-safety and shape checks shared by training, grafting, Fisher/TaLoS and merging.

Every check raises with the problem, where it happened and what to do: a non-finite value stops the run (nothing
non-finite is ever cached), a shape mismatch never broadcasts, and a missing tensor is named.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import torch


class NonFiniteError(FloatingPointError):
    """A NaN or infinity in a loss, gradient, score or parameter."""


HINT = ("lower the learning rate (or graft_lr), check the inputs for empty or degenerate examples, or use "
        "float32 instead of half precision")


def check_finite(tensors: Mapping[str, torch.Tensor] | torch.Tensor, where: str, step: int | None = None,
                 hint: str = HINT) -> None:
    """Raise :class:`NonFiniteError` naming ``where``, the ``step`` and the first tensor holding a NaN/inf."""
    items = {"value": tensors}.items() if isinstance(tensors, torch.Tensor) else tensors.items()
    for name, t in items:
        if t is None or not (t.is_floating_point() or t.is_complex()):
            continue
        finite = torch.isfinite(t)
        if bool(finite.all()):
            continue
        bad = int((~finite).sum())
        kind = "NaN" if bool(torch.isnan(t).any()) else "infinite"
        at = "" if step is None else f" at step {step}"
        raise NonFiniteError(f"{where}{at}: {kind} values in {name!r} ({bad} of {t.numel()} entries); {hint}")


def check_shapes(values: Mapping[str, torch.Tensor], shapes: Mapping[str, Iterable[int]], what: str,
                 against: str = "its parameter") -> None:
    """Raise ValueError when a tensor of ``values`` does not have exactly the shape ``shapes[name]`` (no
    broadcasting, no flat-index reinterpretation); names missing from ``shapes`` are reported too."""
    unknown = [n for n in values if n not in shapes]
    if unknown:
        raise KeyError(f"{what}: {len(unknown)} tensor(s) not among the parameters, e.g. {unknown[:3]}; "
                       f"build it from the same model")
    for n, t in values.items():
        want = tuple(shapes[n])
        if tuple(t.shape) != want:
            raise ValueError(f"{what}: {n!r} has shape {tuple(t.shape)} but {against} has {want}; "
                             f"build it from the same model (shapes are never broadcast)")


def check_covers(values: Mapping[str, torch.Tensor], names: Iterable[str], what: str) -> None:
    """Raise KeyError naming the tensors of ``names`` that ``values`` lacks (a full vector is needed)."""
    missing = [n for n in names if n not in values]
    if missing:
        raise KeyError(f"{what} lacks {len(missing)} tensor(s) it needs, e.g. {missing[:3]}; pass a vector over "
                       f"every tensor (zeros where it did not move)")


def check_fraction(value: float, what: str) -> float:
    """``value`` as a float in (0, 1] (sparsities, densities, keep fractions), else a ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number in (0, 1], got {value!r}") from None
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{what} must be in (0, 1], got {value!r} (fractions, not percentages: 1% is 0.01)")
    return v


def check_pair(pre: Mapping[str, torch.Tensor], other: Mapping[str, torch.Tensor], what: str,
               dtypes: bool = True) -> None:
    """A checkpoint/task-vector pair: ``other``'s names must exist in ``pre`` with the same shapes (and dtypes)."""
    check_shapes(other, {n: tuple(t.shape) for n, t in pre.items()}, what, against="the pre-trained tensor")
    if dtypes:
        for n, t in other.items():
            if t.dtype != pre[n].dtype:
                raise TypeError(f"{what}: {n!r} is {t.dtype} but the pre-trained tensor is {pre[n].dtype}; "
                                f"convert it with .to({pre[n].dtype})")
