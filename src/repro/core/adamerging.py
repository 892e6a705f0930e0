"""AdaMerging (Yang et al. 2024), for P2 Table 5: task-wise or layer-wise merging coefficients of task vectors
learned by entropy minimization on unlabeled inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from repro.core.evaluation import forward
from repro.core.taskvec import Tensors, TaskVector, align
from repro.data import Example
from repro.models.base import Classifier
from repro.progress import progress_bar

GRANULARITIES = ("task", "layer")


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
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown AdaMerging granularity {granularity!r}; choose one of {GRANULARITIES}")
    tasks = list(vectors)
    missing = [t for t in tasks if t not in unlabeled or not unlabeled[t]]
    if missing:
        raise KeyError(f"no unlabeled examples for tasks {missing}; given: {sorted(unlabeled)}")
    names, aligned = align([vectors[t] for t in tasks])
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


__all__ = ["AdaMergingResult", "GRANULARITIES", "adamerging"]
