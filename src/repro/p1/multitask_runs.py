"""Per-example results of the P1 §5 chapter (``notebooks/p1_multitask_continual.md``) for its statistical claims.

The frozen drivers (:mod:`repro.p1.multitask`, :mod:`repro.p1.continual`) give accuracies only; the claims of
Fig. 8 (MT vs single-task FT) and Table 4 (continual learning) compare models on *the same* test examples, so this
module scores every model of one comparison on one list of examples and keeps the per-example 0/1 correctness
(the input of :func:`repro.report.verdicts.compare`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np
import torch

from repro.p1.calibration import per_example
from repro.p1.multitask import subsample

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench

Overrides = Mapping[str, torch.Tensor] | None


def paired_correct(wb: "Workbench", task: str, models: Mapping[str, Overrides], split: str = "test",
                   limit: int | None = None) -> dict[str, np.ndarray]:
    """Per-example 0/1 correctness of each model (name → overrides) on the same examples of ``task``'s ``split``
    (the label-balanced subset of :func:`repro.p1.multitask.subsample` when ``limit`` is set, as the Eq. 5
    accuracies use; all of them otherwise); the mean of each array is the model's accuracy (Table 4, Fig. 8)."""
    examples = subsample(wb.task(task).split(split), limit)
    return {name: per_example(wb.predict(task, split, ov, examples=examples))["correct"]
            for name, ov in models.items()}


__all__ = ["paired_correct"]
