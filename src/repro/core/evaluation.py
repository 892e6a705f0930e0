"""The one evaluation loop: logits of a classifier on a task's examples, optionally under parameter overrides.

Overrides are ``{parameter name: tensor}`` applied with :func:`torch.func.functional_call`, so a grafted,
merged or interpolated model is evaluated without materializing a second copy of the network.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import torch
from torch.func import functional_call, jvp

from repro.data import Example, chunks
from repro.core.metrics import accuracy, expected_calibration_error, f1_binary
from repro.models.base import Classifier
from repro.device import autocast


@dataclass
class Predictions:
    logits: torch.Tensor  # [N, C]
    labels: torch.Tensor  # [N]

    @property
    def probs(self) -> torch.Tensor:
        return self.logits.float().softmax(-1)

    @property
    def preds(self) -> torch.Tensor:
        return self.logits.argmax(-1)


@functools.cache
def _load_jvp_decompositions() -> None:
    """Import torch's forward-mode decompositions once, quietly: torch builds them with its own deprecated
    ``torch.jit.script`` and warns about it on the first ``jvp`` (a FutureWarning printed into every notebook)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
        import torch._decomp.decompositions_for_jvp  # noqa: F401


def forward(model: Classifier, batch: dict[str, torch.Tensor], task: str,
            overrides: Mapping[str, torch.Tensor] | None = None,
            linear_base: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
    """Logits of ``model`` on ``batch``; parameters in ``overrides`` replace the model's own.

    With ``linear_base`` = θ0 (a dict over some parameters) the model is evaluated *linearized* around θ0:
    f(x; θ0) + J_θ0(x)·(θ − θ0) (Ortiz-Jiménez et al. 2023, Eq. 3), θ being ``overrides`` or the model's own
    parameters.  Gradients flow through θ, so the same call trains linearized models.
    """
    with autocast(model):  # bf16 autocast when the profile asks for it on CUDA (repro.device), else a no-op
        return _forward(model, batch, task, overrides, linear_base)


def _forward(model: Classifier, batch: dict[str, torch.Tensor], task: str,
             overrides: Mapping[str, torch.Tensor] | None, linear_base: Mapping[str, torch.Tensor] | None
             ) -> torch.Tensor:
    if linear_base is None:
        if overrides:
            return functional_call(model, dict(overrides), (batch,), {"task": task}, strict=False)
        return model(batch, task)
    names = list(linear_base)
    current = dict(model.named_parameters())
    if overrides:
        current.update(overrides)
    others = {n: v for n, v in (overrides or {}).items() if n not in linear_base}

    def f(*ps: torch.Tensor) -> torch.Tensor:
        return functional_call(model, {**others, **dict(zip(names, ps))}, (batch,), {"task": task}, strict=False)

    _load_jvp_decompositions()
    out, dout = jvp(f, tuple(linear_base[n] for n in names), tuple(current[n] - linear_base[n] for n in names))
    return out + dout


@torch.no_grad()
def predict(model: Classifier, examples: Sequence[Example], task: str,
            overrides: Mapping[str, torch.Tensor] | None = None, batch_size: int = 64,
            linear_base: Mapping[str, torch.Tensor] | None = None) -> Predictions:
    """Eval-mode logits for every example (no dropout), optionally with overrides / linearized around θ0."""
    was_training = model.training
    model.eval()
    order = length_order(examples)
    logits, labels = [], []
    for chunk in chunks([examples[i] for i in order], batch_size):
        batch = model.tokenize(task, chunk)
        logits.append(forward(model, batch, task, overrides, linear_base).float().cpu())
        labels.append(batch["labels"].cpu())
    model.train(was_training)
    if not logits:
        raise ValueError(f"no examples to evaluate for task {task!r}")
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
    return Predictions(torch.cat(logits)[inverse], torch.cat(labels)[inverse])


def length_order(examples: Sequence[Example]) -> list[int]:
    """Indices of ``examples`` by text length, so each padded batch holds similar lengths.

    Evaluation batches pad to their longest member; sorting first cuts the padded tokens (measured on MiniLM,
    2 cores: 1.2-1.8x more examples per second).  The logits are returned in the original order, so the result
    is the same up to float summation order.  Examples without text (images) keep their order.
    """
    def text_length(example: Example) -> int:
        return len(getattr(example, "text_a", "") or "") + len(getattr(example, "text_b", "") or "")

    return sorted(range(len(examples)), key=lambda i: text_length(examples[i]))


def score(pred: Predictions, metric: str = "acc", n_bins: int = 10) -> dict[str, float]:
    """Task metric (``acc`` or ``f1``) as ``value`` plus accuracy, F1 and ECE, all as fractions."""
    acc = accuracy(pred.preds, pred.labels)
    out = {"acc": acc, "ece": expected_calibration_error(pred.probs, pred.labels, n_bins=n_bins)}
    if pred.logits.shape[1] == 2:
        out["f1"] = f1_binary(pred.preds, pred.labels)
    if metric not in ("acc", "f1"):
        raise ValueError(f"unknown metric {metric!r}; choose acc or f1")
    out["value"] = out[metric] if metric in out else acc
    return out


def evaluate(model: Classifier, examples: Sequence[Example], task: str,
             overrides: Mapping[str, torch.Tensor] | None = None, batch_size: int = 64,
             n_bins: int = 10, linear_base: Mapping[str, torch.Tensor] | None = None) -> dict[str, float]:
    """predict + score with the task's own metric."""
    pred = predict(model, examples, task, overrides, batch_size, linear_base)
    return score(pred, model.specs[task].metric, n_bins=n_bins)
